"""Statistics for comparisons: per-strategy mean / std / 95% CI over seeds, and paired bootstrap tests
of a strategy against the baseline (over sentences for BLEU, over evaluation batches for perplexity).

The bootstrap follows sacrebleu's paired test (Koehn 2004, as in Moses'
``bootstrap-hypothesis-difference-significance.pl``): resample the test units with replacement, score
both systems on each resample, centre the absolute differences and count how often they exceed the
observed absolute difference; p = (count + 1) / (samples + 1). With several seeds, the same resampled
units are used for every seed and the per-seed scores are averaged, so the test compares the seed means.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
from scipy import stats as sps

DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 12345  # sacrebleu's default SACREBLEU_SEED


def seed_summary(values: Sequence[float], confidence: float = 0.95) -> dict:
    """{"n", "mean", "std" (ddof=1), "ci_low", "ci_high", "half_width"} of per-seed values.

    The interval is Student's t over seeds; with one seed std and the interval are NaN.
    """
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = int(x.size)
    if n == 0:
        nan = float("nan")
        return {"n": 0, "mean": nan, "std": nan, "ci_low": nan, "ci_high": nan, "half_width": nan}
    mean = float(x.mean())
    if n == 1:
        nan = float("nan")
        return {"n": 1, "mean": mean, "std": nan, "ci_low": nan, "ci_high": nan, "half_width": nan}
    std = float(x.std(ddof=1))
    half = float(sps.t.ppf(0.5 + confidence / 2, n - 1) * std / math.sqrt(n))
    return {"n": n, "mean": mean, "std": std, "ci_low": mean - half, "ci_high": mean + half, "half_width": half}


def resample_weights(n_units: int, n_samples: int = DEFAULT_SAMPLES, seed: int = DEFAULT_SEED) -> np.ndarray:
    """(n_samples, n_units) how many times each unit is drawn in each bootstrap resample.

    The draw is sacrebleu's: ``default_rng(seed).choice(n, size=(n_samples, n), replace=True)``.
    """
    idx = np.random.default_rng(seed).choice(n_units, size=(n_samples, n_units), replace=True)
    w = np.zeros((n_samples, n_units), dtype=np.float64)
    np.add.at(w, (np.arange(n_samples)[:, None], idx), 1.0)
    return w


def _as_seeds(stats: np.ndarray) -> np.ndarray:
    a = np.asarray(stats, dtype=np.float64)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3:
        raise ValueError(f"unit statistics must be (units, k) or (seeds, units, k), got shape {a.shape}")
    return a


def paired_bootstrap(
    system: np.ndarray,
    baseline: np.ndarray,
    score: Callable[[np.ndarray], np.ndarray],
    n_samples: int = DEFAULT_SAMPLES,
    seed: int = DEFAULT_SEED,
    test_scale: Callable[[np.ndarray], np.ndarray] | None = None,
    bias_correct: bool = False,
) -> dict:
    """Paired bootstrap test of ``system`` against ``baseline``.

    ``bias_correct``: shift the interval by the bootstrap's estimate of its bias (observed delta minus
    the mean resampled delta), for statistics that shrink under resampling with replacement (vocabulary
    usage: a resample holds about 63% of the distinct units, so a system whose extra words each occur in
    one unit loses about a third of its lead in every resample and the plain percentile interval can
    exclude the observed delta). The p-value needs no correction: it compares centred resampled deltas.

    ``test_scale``: a monotone map of scores on which the p-value is computed (the delta and its
    interval stay on the score's own scale). sacrebleu's statistic compares the observed difference
    with the spread of the centred resampled differences, which assumes that spread is roughly
    symmetric; perplexity = exp(mean loss) has a long right tail (a few hard batches), so its test
    runs on log perplexity, where the same hypothesis (equal perplexity) is tested on a symmetric scale.

    system, baseline: sufficient statistics per test unit, (units, k) or (seeds, units, k); the units
    (sentences, batches) must be the same and in the same order for both. ``score`` maps summed
    statistics (..., k) to scores (...). Returns {"system", "baseline", "delta" (system - baseline,
    seed means), "p_value", "delta_ci" (95% percentile interval of the resampled delta),
    "n_units", "n_seeds", "n_samples"}. It measures the noise of the evaluation sample only; whether a
    strategy is better is decided from paired seeds (``embtie.decisions``).
    """
    sys_a, base_a = _as_seeds(system), _as_seeds(baseline)
    if sys_a.shape[1:] != base_a.shape[1:]:
        raise ValueError(f"system {sys_a.shape} and baseline {base_a.shape} do not cover the same units")
    n_units = sys_a.shape[1]
    w = resample_weights(n_units, n_samples, seed)

    def seed_mean_scores(a: np.ndarray, f=lambda x: x) -> tuple[float, np.ndarray]:
        full = float(np.mean([float(f(score(s.sum(0)))) for s in a]))
        boot = np.mean([f(score(w @ s)) for s in a], axis=0)  # (n_samples,)
        return full, boot

    sys_full, sys_boot = seed_mean_scores(sys_a)
    base_full, base_boot = seed_mean_scores(base_a)
    if test_scale is None:
        sys_t, sys_tboot, base_t, base_tboot = sys_full, sys_boot, base_full, base_boot
    else:
        sys_t, sys_tboot = seed_mean_scores(sys_a, test_scale)
        base_t, base_tboot = seed_mean_scores(base_a, test_scale)
    observed = abs(sys_t - base_t)
    sample_diffs = np.abs(sys_tboot - base_tboot)
    centred = sample_diffs - sample_diffs.mean()
    if np.array_equal(sys_a, base_a):
        p = 1.0  # identical on every unit: no difference at all (sacrebleu's formula would give 1/(n+1))
    else:
        p = (int(np.sum(centred > observed)) + 1) / (n_samples + 1)
    signed = sys_boot - base_boot
    if bias_correct:
        signed = signed + ((sys_full - base_full) - signed.mean())
    lo, hi = np.percentile(signed, [2.5, 97.5])
    return {
        "system": sys_full,
        "baseline": base_full,
        "delta": sys_full - base_full,
        "p_value": p,
        "delta_ci": [float(lo), float(hi)],
        "n_units": n_units,
        "n_seeds": int(sys_a.shape[0]),
        "n_samples": n_samples,
    }


# --------------------------------------------------------------------------- perplexity
def perplexity_from_stats(sums: np.ndarray) -> np.ndarray:
    """(..., 2) summed [token loss (nats), token count] -> (...) perplexity exp(loss / count)."""
    sums = np.asarray(sums, dtype=np.float64)
    return np.exp(sums[..., 0] / sums[..., 1])


def perplexity_bootstrap(system: np.ndarray, baseline: np.ndarray, **kw) -> dict:
    """Paired bootstrap of perplexity over evaluation units; stats (units, 2) or (seeds, units, 2).
    The p-value is computed on log perplexity (see ``paired_bootstrap``'s test_scale)."""
    kw.setdefault("test_scale", np.log)
    return paired_bootstrap(system, baseline, perplexity_from_stats, **kw)


# --------------------------------------------------------------------------- BLEU
def _bleu(smooth: str = "exp", tokenize: str | None = None):
    """sacrebleu's BLEU; ``tokenize`` None is its default (13a). ``force``: the statistics feed the tests;
    whether the text looks tokenized is said once, by the corpus score (``embtie.evaluation.bleu``), not per
    call here."""
    from sacrebleu.metrics import BLEU

    return BLEU(smooth_method=smooth, tokenize=tokenize, force=True)


def bleu_sentence_stats(hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """(N, k) sacrebleu's sufficient statistics per sentence (detokenized strings, one reference each)."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    return np.asarray(_bleu()._extract_corpus_statistics(list(hypotheses), [list(references)]), dtype=np.float64)


def multi_reference_bleu_stats(hypotheses: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """(N, k) sacrebleu's sufficient statistics per segment of tokenized text (``tokenize="none"``) with
    several references each (captions: one list of reference captions per image; the lists may differ in
    length). Brevity uses the closest reference length, as sacrebleu and the COCO BLEU scorer do."""
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} reference sets")
    width = max((len(r) for r in references), default=0)
    if width == 0 or any(not r for r in references):
        raise ValueError("every segment needs at least one reference")
    streams = [[r[j] if j < len(r) else None for r in references] for j in range(width)]
    per_segment = _bleu(tokenize="none")._extract_corpus_statistics(list(hypotheses), streams)
    return np.asarray(per_segment, dtype=np.float64)


def bleu_from_stats(sums: np.ndarray, smooth: str = "exp") -> np.ndarray:
    """(..., k) summed sacrebleu statistics -> (...) corpus BLEU. ``smooth``: sacrebleu's smoothing of
    zero n-gram precisions ("exp", its default; "none" as the COCO caption scorer, which gives ~0)."""
    metric = _bleu(smooth)
    sums = np.asarray(sums)
    flat = sums.reshape(-1, sums.shape[-1])
    out = np.array([metric._compute_score_from_stats([round(float(v)) for v in row]).score for row in flat])
    return out.reshape(sums.shape[:-1])


def bleu_bootstrap(system: np.ndarray, baseline: np.ndarray, smooth: str = "exp", **kw) -> dict:
    """Paired bootstrap of BLEU over sentences; stats from ``bleu_sentence_stats`` (optionally per seed)."""
    return paired_bootstrap(system, baseline, lambda sums: bleu_from_stats(sums, smooth), **kw)


# --------------------------------------------------------------------------- vocabulary usage
def distinct_used(counts: np.ndarray) -> np.ndarray:
    """(..., W) summed per-unit word incidences -> (...) number of distinct words used (Shalev's VU)."""
    return (np.asarray(counts) > 0).sum(-1).astype(np.float64)


def vocab_usage_bootstrap(system: np.ndarray, baseline: np.ndarray, **kw) -> dict:
    """Paired bootstrap of vocabulary usage over units (images, sentences): ``system``/``baseline`` are
    (units, W) or (seeds, units, W) 0/1 incidences of each word in each unit's output, over one shared
    word list. A resample's VU is the number of words used by at least one drawn unit; it is biased low
    (words of units left out of the resample vanish), so the interval is bias-corrected."""
    kw.setdefault("bias_correct", True)
    return paired_bootstrap(system, baseline, distinct_used, **kw)
