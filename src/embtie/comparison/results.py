"""A comparison's results, read from its saved files: every run's records, the rows of results.csv, the
per-strategy summaries over seeds, the paired bootstraps over evaluation units and the verdicts from
paired seeds against the baseline (``collect``), written as results.csv and results.json (``write_tables``).
Which metrics are tested, and which have per-unit values to bootstrap, is declared in ``embtie.metrics``."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np

from embtie import metrics, seeding
from embtie.analysis import frequency, run_diagnostics, update_dynamics
from embtie.analysis.json_records import json_default
from embtie.analysis.records import NormFrequency, RunDiagnostics
from embtie.comparison import held_out, quantized_metric
from embtie.comparison.data_title import data_title
from embtie.comparison.design_file import Design
from embtie.comparison.grid import CompareSpec, PlannedRun
from embtie.comparison.records import (
    Comparison,
    HeldOutResult,
    LossCurves,
    ResultRow,
    RunRecord,
    StrategySummary,
    TrainingSummary,
    UnitBootstrap,
)
from embtie.comparison.verdicts import all_verdicts
from embtie.errors import ConfigError

CSV_FIELDS = [
    "strategy",
    "seed",
    "valid_ppl",
    "best_valid_ppl",
    "valid_loss",
    "step0_loss",
    "su_predicted",
    "ln_v",
    "params_learned",
    "params_fixed",
    "tokens_per_s",
    "steps",
    "rho_output_norm_freq",
    "rho_input_norm_freq",
    "input_rows_per_batch",
    "output_rows_per_batch",
    "bleu",
    "chrf",
    "vu",
    "rare_token_share",
    "bleu1",
    "meteor",
    "rouge_l",
    "cider",
    "run_dir",
]
"""the columns of results.csv."""


def read_curves(d: Path) -> LossCurves:
    """Train and valid loss against step from RUN_DIR/metrics.jsonl (only full or capped validations)."""
    out = LossCurves(train_steps=[], train=[], valid_steps=[], valid=[])
    p = d / "metrics.jsonl"
    if not p.is_file():
        return out
    for line in p.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        rec = json.loads(line)
        split, loss = rec.get("split"), rec.get("loss")
        if loss is None or not math.isfinite(loss):
            continue
        if split == "train":
            out.train_steps.append(rec["step"])
            out.train.append(loss)
        elif split == "valid":
            out.valid_steps.append(rec["step"])
            out.valid.append(loss)
    return out


def finished_runs(runs: list[PlannedRun]) -> list[PlannedRun]:
    """The runs that are trained and analysed (for a report of an unfinished comparison)."""
    return [r for r in runs if r.done]


def read_run(r: PlannedRun, spec: CompareSpec | None = None) -> RunRecord:
    """The saved results of one finished and analysed run (with its test result when ``spec`` asks for one)."""
    summary = json.loads((r.run_dir / "summary.json").read_text(encoding="utf-8"))
    loaded = run_diagnostics.read(r.run_dir)
    if loaded is None:
        raise ConfigError(f"{r.run_dir} has no analysis; run `embtie analyze {r.run_dir}` or compare again")
    diag, arrays = loaded
    if arrays.counts is not None:  # recomputed from the saved arrays, so the current definition applies
        diag.norm_frequency = NormFrequency.from_json(
            {
                "input": frequency.norm_frequency_correlation(arrays.input_norms, arrays.counts),
                "output": frequency.norm_frequency_correlation(arrays.output_norms, arrays.counts),
            }
        )
    return RunRecord(
        strategy=r.strategy,
        seed=r.seed,
        summary=TrainingSummary.from_json(summary),
        diag=diag,
        arrays=arrays,
        curves=read_curves(r.run_dir),
        path_shares=update_dynamics.read_path_shares(r.run_dir),
        run_dir=str(r.run_dir),
        test=_held_out_result(r, spec),
        quantized_ppl={} if spec is None else quantized_metric.perplexities(r, spec),
    )


def _held_out_result(r: PlannedRun, spec: CompareSpec | None) -> HeldOutResult | None:
    """The run's current test-split result when the comparison asks for test verdicts (``--test``)."""
    if spec is None or not spec.test:
        return None
    res = held_out.stored(r.run_dir, spec.test_file)
    return None if res is None else HeldOutResult.from_json(res)


def result_row(p: RunRecord) -> ResultRow:
    """A run's row of results.csv: training summary, step-0 loss, norm vs frequency, row updates, and the
    output-quality columns (None where they do not apply)."""
    s, diag, nf, ru = p.summary, p.diag, p.diag.norm_frequency, p.diag.row_updates
    row = ResultRow(
        strategy=p.strategy,
        seed=p.seed,
        valid_ppl=s.valid_ppl,
        best_valid_ppl=s.best_valid_ppl,
        valid_loss=s.valid_loss,
        valid_bpb=s.valid_bpb,
        test_ppl=None if p.test is None else p.test.ppl,
        test_bpb=None if p.test is None else p.test.bpb,
        step0_loss=s.step0_loss,
        su_predicted=diag.step0.predicted,
        ln_v=diag.step0.ln_v,
        params_learned=s.params_learned,
        params_fixed=s.params_fixed,
        tokens_per_s=s.tokens_per_s,
        steps=s.steps,
        rho_output_norm_freq=None if nf is None else nf.output.rho,
        rho_input_norm_freq=None if nf is None else nf.input.rho,
        input_rows_per_batch=None if ru is None else ru.input_rows_per_batch,
        output_rows_per_batch=None if ru is None else ru.output_rows_per_batch,
        run_dir=p.run_dir,
        valid_ppl_int8=p.quantized_ppl.get("int8"),
        valid_ppl_int4=p.quantized_ppl.get("int4"),
    )
    _add_quality_columns(row, diag)
    return row


def _add_quality_columns(row: ResultRow, diag: RunDiagnostics) -> None:
    """Translation (sacreBLEU, chrF) or captioning (BLEU-4 as ``bleu``, BLEU-1, METEOR, ROUGE-L, CIDEr), and
    vocabulary usage with the rare-word share."""
    mt, cap = diag.translation, diag.captioning
    if mt is not None:
        row.bleu, row.chrf = mt.scores.bleu, mt.scores.chrf
        row.vu, row.rare_token_share = mt.vocab_usage.vu, mt.vocab_usage.rare_token_share
    if cap is not None:
        sc = cap.scores
        row.bleu, row.bleu1, row.meteor, row.rouge_l, row.cider = sc.bleu4, sc.bleu1, sc.meteor, sc.rouge_l, sc.cider
        if mt is None:
            row.vu, row.rare_token_share = cap.vocab_usage.vu, cap.vocab_usage.rare_token_share


def collect(spec: CompareSpec, runs: list[PlannedRun]) -> Comparison:
    """Everything from the saved files: per-run records and rows, per-strategy statistics, the bootstraps
    and the verdicts against the baseline."""
    if not runs:
        raise ConfigError(f"no finished runs in {spec.out_dir}; run the comparison first (without --report-only)")
    per_run = [read_run(r, spec) for r in runs]
    rows = [result_row(p) for p in per_run]
    strategies = list(dict.fromkeys(r.strategy for r in runs))
    captioning = any(p.diag.captioning is not None for p in per_run)
    return Comparison(
        preset=spec.preset,
        runs_finished=len(runs),
        runs_planned=sum(spec.seeds_of(s) for s in spec.strategies),
        strategies=strategies,
        seeds=spec.seeds,
        overrides=spec.overrides,
        command=spec.command(),
        baseline=spec.baseline,
        rows=rows,
        summary={name: StrategySummary.of([x for x in rows if x.strategy == name]) for name in strategies},
        bootstrap=unit_bootstraps(per_run, spec.baseline, captioning),
        per_run=per_run,
        update_dynamics=_similarities(spec, per_run),
        verdicts=all_verdicts(rows, spec.baseline, spec.margins, spec.design,
                              primary_key=metrics.primary(rows, spec.metric).key),
        seeding=_seeding_schemes(per_run),
        metric=None if spec.metric is None else metrics.chosen(spec.metric).key,
        title=data_title(runs[0].cfg, per_run[0].diag.vocab_size),
        family=Design.of(spec).content(),
    )


def _seeding_schemes(per_run: list[RunRecord]) -> dict[str, int]:
    """seeding scheme -> number of runs (scheme 1 for summaries that record none)."""
    schemes = Counter(str(p.summary.seeding or seeding.LEGACY_SCHEME) for p in per_run)
    return dict(sorted(schemes.items()))


def _similarities(spec: CompareSpec, per_run: list[RunRecord]) -> list[update_dynamics.SimilarityRow]:
    """Procrustes similarities of every strategy's input vectors to the untied run of its seed."""
    if not any(p.strategy == update_dynamics.REFERENCE for p in per_run) or len(per_run) < 2:
        return []
    if any(p.diag.level != "full" for p in per_run):  # --analysis light/none: loading every model is the cost
        return []
    sources = [update_dynamics.SimilaritySource(p.strategy, p.seed, p.run_dir, p.arrays.counts) for p in per_run]
    return update_dynamics.cached_similarity_rows(spec.out_dir, sources)


def _seed_stack(per_run: list[RunRecord], strategy: str, field: str) -> np.ndarray | None:
    """(seeds, units, k) per-unit values ``RunArrays.<field>`` of a strategy, seeds in order (None: a run
    lacks them)."""
    arrs = [getattr(p.arrays, field) for p in sorted(per_run, key=lambda p: p.seed) if p.strategy == strategy]
    if not arrs or any(a is None for a in arrs):
        return None
    n = min(a.shape[0] for a in arrs)
    return np.stack([a[:n] for a in arrs])


def unit_bootstraps(
    per_run: list[RunRecord], baseline: str, captioning: bool
) -> dict[str, dict[str, UnitBootstrap]]:
    """metric -> strategy -> the paired bootstrap against ``baseline`` over the metric's per-unit values
    (``embtie.metrics.UnitValues``) and the seeds both have; a metric is left out when the baseline is
    missing or some run lacks its values."""
    strategies = [s for s in dict.fromkeys(p.strategy for p in per_run) if s != baseline]
    out: dict[str, dict[str, UnitBootstrap]] = {}
    for m in metrics.METRICS:
        if m.units is None or any(getattr(p.arrays, m.units.arrays) is None for p in per_run):
            continue
        base = _seed_stack(per_run, baseline, m.units.arrays)
        if base is None:
            continue
        found = {}
        for name in strategies:
            mine = _seed_stack(per_run, name, m.units.arrays)
            n = 0 if mine is None else min(len(base), len(mine))
            if mine is not None and n and mine[:n].shape[1:] == base[:n].shape[1:]:
                found[name] = UnitBootstrap.of(m.units.bootstrap(mine[:n], base[:n], captioning))
        if found:
            out[m.key] = found
    return out


def write_tables(comparison: Comparison, out_dir: Path) -> tuple[Path, Path]:
    """DIR/results.csv (one row per run) and DIR/results.json (rows, statistics, bootstraps, verdicts; no arrays)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "results.csv"
    rows = [row.to_json() for row in comparison.rows]
    extra = [k for k in dict.fromkeys(k for r in rows for k in r) if k not in CSV_FIELDS]  # bpb, test columns
    with open(csv_path, "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=[*CSV_FIELDS, *extra])
        w.writeheader()
        w.writerows(rows)
    json_path = out_dir / "results.json"
    json_path.write_text(json.dumps(comparison.to_json(), indent=1, default=json_default), encoding="utf-8")
    return csv_path, json_path
