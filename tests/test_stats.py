"""Seed statistics and paired bootstrap tests against known cases (and against sacrebleu's own test)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sacrebleu.metrics import BLEU
from sacrebleu.significance import PairedTest

from embtie import stats


def test_seed_summary_matches_student_t():
    s = stats.seed_summary([1.0, 2.0, 3.0])
    assert s["mean"] == 2.0 and s["std"] == pytest.approx(1.0)
    assert s["half_width"] == pytest.approx(4.302652729911275 / math.sqrt(3))  # t_{0.975, 2}
    one = stats.seed_summary([5.0])
    assert one["mean"] == 5.0 and math.isnan(one["std"]) and math.isnan(one["half_width"])


def test_resample_weights_draw_each_unit_n_times():
    w = stats.resample_weights(7, n_samples=50, seed=3)
    assert w.shape == (50, 7) and (w.sum(1) == 7).all()


def _ppl_stats(rng, n, mean_loss):
    tokens = rng.integers(50, 100, size=n).astype(float)
    loss = tokens * (mean_loss + rng.normal(0, 0.3, size=n))
    return np.stack([loss, tokens], axis=1)


def test_perplexity_bootstrap_of_identical_systems_finds_no_difference():
    rng = np.random.default_rng(0)
    base = _ppl_stats(rng, 40, 5.0)
    r = stats.perplexity_bootstrap(base, base.copy(), n_samples=200)
    assert r["delta"] == 0.0 and r["p_value"] > 0.5 and "significant" not in r and "verdict" not in r


def test_perplexity_bootstrap_detects_a_real_difference_and_not_a_tiny_one():
    rng = np.random.default_rng(1)
    base = _ppl_stats(rng, 60, 5.0)
    better = base.copy()
    better[:, 0] -= 0.2 * better[:, 1]  # 0.2 nats/token lower everywhere
    r = stats.perplexity_bootstrap(better, base, n_samples=300)
    expected = math.exp(better[:, 0].sum() / better[:, 1].sum()) - math.exp(base[:, 0].sum() / base[:, 1].sum())
    assert r["delta"] == pytest.approx(expected)
    assert r["p_value"] < 0.05
    assert r["delta_ci"][0] < r["delta"] < r["delta_ci"][1] < 0
    noisy = base.copy()
    noisy[:, 0] += rng.normal(0, 0.3, size=60) * noisy[:, 1]  # zero-mean noise per unit
    assert stats.perplexity_bootstrap(noisy, base, n_samples=300)["p_value"] >= 0.05


def test_perplexity_test_runs_on_log_scale_so_a_long_tail_does_not_hide_a_real_difference():
    """Every batch is worse, two by 5 nats: the 95% interval of the perplexity difference excludes 0, but
    sacrebleu's centred statistic on perplexity itself (long right tail) gives p > 0.05; on log
    perplexity it does not."""
    rng = np.random.default_rng(4)
    cnt = rng.integers(200, 400, 40).astype(float)
    base = rng.normal(1.85, 0.15, 40)
    worse = base + rng.exponential(0.3, 40)
    worse[:2] += 5
    b, w = np.stack([base * cnt, cnt], 1), np.stack([worse * cnt, cnt], 1)
    on_ppl = stats.paired_bootstrap(w, b, stats.perplexity_from_stats)
    r = stats.perplexity_bootstrap(w, b)
    assert r["delta_ci"][0] > 0 and on_ppl["delta_ci"] == r["delta_ci"] and r["delta"] == on_ppl["delta"]
    assert on_ppl["p_value"] > 0.05 > r["p_value"]
    log_scale = stats.paired_bootstrap(w, b, lambda x: np.log(stats.perplexity_from_stats(x)))
    assert r["p_value"] == log_scale["p_value"]


def test_bootstrap_with_seeds_averages_seed_scores():
    rng = np.random.default_rng(2)
    base = np.stack([_ppl_stats(rng, 30, 5.0) for _ in range(3)])
    sysm = base.copy()
    sysm[..., 0] += 0.1 * sysm[..., 1]
    r = stats.perplexity_bootstrap(sysm, base, n_samples=100)
    per_seed = [math.exp(s[:, 0].sum() / s[:, 1].sum()) for s in sysm]
    assert r["system"] == pytest.approx(np.mean(per_seed)) and r["n_seeds"] == 3


HYPS_BASE = ["the cat sat on the mat", "a dog runs in the park", "it is raining today", "he reads a book"]
HYPS_SYS = ["the cat sat on a mat", "a dog is running in a park", "it rains today", "he is reading the book"]
REFS = ["the cat sat on the mat", "a dog is running in the park", "it is raining today", "he is reading a book"]


def test_bleu_stats_reproduce_sacrebleu_corpus_score():
    st = stats.bleu_sentence_stats(HYPS_SYS, REFS)
    assert float(stats.bleu_from_stats(st.sum(0))) == pytest.approx(BLEU().corpus_score(HYPS_SYS, [REFS]).score)


def test_bleu_bootstrap_matches_sacrebleu_paired_test():
    hb, hs, refs = HYPS_BASE * 5, HYPS_SYS * 5, REFS * 5
    ours = stats.bleu_bootstrap(stats.bleu_sentence_stats(hs, refs), stats.bleu_sentence_stats(hb, refs), n_samples=200)
    _, scores = PairedTest([("base", hb), ("sys", hs)], {"BLEU": BLEU()}, [refs], test_type="bs", n_samples=200)()
    theirs = scores["BLEU"][1]
    assert ours["system"] == pytest.approx(theirs.score)
    assert ours["p_value"] == pytest.approx(theirs.p_value)

