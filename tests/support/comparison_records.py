"""Small, complete comparison records for the tests of report sections: every field has a neutral
default, and a test sets only what its section reads."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from embtie.analysis.records import (
    NormHistogram,
    NormHistograms,
    ParameterCounts,
    RowUpdates,
    RunArrays,
    RunDiagnostics,
    Step0Loss,
    ValidationSummary,
    WordSimCorrelation,
    WordSimilarity,
)
from embtie.comparison.records import (
    Comparison,
    LossCurves,
    MetricVerdicts,
    ResultRow,
    RunRecord,
    SeedSummary,
    StrategySummary,
    TrainingSummary,
    UnitBootstrap,
)
from embtie.comparison.verdicts import all_verdicts
from embtie.reporting.sections.context import ReportContext

V, D = 10, 4
NAN = float("nan")


def _histogram() -> NormHistogram:
    return NormHistogram(edges=[0.0, 1.0], counts=[V], mean=0.5, std=0.1, min=0.2, max=0.8)


def diagnostics(**changes: object) -> RunDiagnostics:
    """A language model's diagnostics (V = 10, d = 4) with ``changes`` applied."""
    default = RunDiagnostics(
        version=1,
        strategy="tied",
        options={},
        vocab_size=V,
        dim=D,
        seed=0,
        task="lm",
        step0=Step0Loss(predicted=3.0, predicted_refined=3.1, ln_v=math.log(V), measured=2.9),
        params=ParameterCounts(learned=100, fixed=0, sharing_learned=40, sharing_fixed=0),
        norms=NormHistograms(input=_histogram(), output=_histogram()),
        norm_frequency=None,
        wordsim=None,
        row_updates=RowUpdates(batches=1, input_rows_per_batch=0.5, output_rows_per_batch=1.0, parameters=["weight"]),
        valid=ValidationSummary(units=1, tokens=10, loss=2.0, task_metrics={}),
    )
    return dataclasses.replace(default, **changes)


def arrays() -> RunArrays:
    units = np.array([[20.0, 10.0]])
    return RunArrays(input_norms=np.ones(V), output_norms=np.ones(V), input_update_counts=np.ones(V, dtype=np.int64),
                     output_update_counts=np.ones(V, dtype=np.int64), valid_units=units)  # fmt: skip


def curves(valid_steps: Sequence[int] = (), valid: Sequence[float] = ()) -> LossCurves:
    return LossCurves(train_steps=[], train=[], valid_steps=list(valid_steps), valid=list(valid))


def run(
    strategy: str,
    seed: int,
    *,
    diag: RunDiagnostics | None = None,
    summary: TrainingSummary | None = None,
    loss_curves: LossCurves | None = None,
) -> RunRecord:
    return RunRecord(
        strategy=strategy,
        seed=seed,
        summary=summary or TrainingSummary(),
        diag=diag or diagnostics(seed=seed),
        arrays=arrays(),
        curves=loss_curves or curves(),
        path_shares=None,
        run_dir=f"runs/{strategy}/seed{seed}",
    )


def seed_summary(mean: float = NAN, n: int = 0) -> SeedSummary:
    return SeedSummary(n=n, mean=mean, std=NAN, ci_low=NAN, ci_high=NAN, half_width=NAN)


def strategy_summary(**changes: SeedSummary) -> StrategySummary:
    """Every column summarised over no seeds, but ``changes``."""
    names = ("valid_ppl", "best_valid_ppl", "step0_loss", "tokens_per_s", "rho_output_norm_freq", "bleu", "vu",
             "bleu1", "meteor", "rouge_l", "cider")  # fmt: skip
    return StrategySummary(**{n: changes.get(n, seed_summary()) for n in names})


def unit_bootstrap(delta: float, p_value: float = 0.01) -> UnitBootstrap:
    return UnitBootstrap(system=NAN, baseline=NAN, delta=delta, p_value=p_value, delta_ci=[delta - 5, delta + 5],
                         n_units=10, n_seeds=2, n_samples=1000)  # fmt: skip


def result_row(strategy: str, seed: int, **values: float | None) -> ResultRow:
    """A results.csv row with the given column values (the rest empty)."""
    empty: dict[str, object] = dict(valid_ppl=None, best_valid_ppl=None, valid_loss=None, step0_loss=None,
                                    su_predicted=NAN, ln_v=NAN, params_learned=None, params_fixed=None,
                                    tokens_per_s=None, steps=None, rho_output_norm_freq=None,
                                    rho_input_norm_freq=None, input_rows_per_batch=NAN, output_rows_per_batch=NAN,
                                    run_dir="")  # fmt: skip
    return ResultRow(strategy=strategy, seed=seed, **{**empty, **values})  # type: ignore[arg-type]


def wordsim(out_rho: float, in_rho: float, found: int = 90, total: int = 999) -> WordSimilarity:
    def side(rho: float) -> WordSimCorrelation:
        return WordSimCorrelation(rho=rho, pvalue=NAN, found=found, total=total, coverage=found / total)

    return WordSimilarity(input=side(in_rho), output=side(out_rho))


def comparison(
    per_run: Sequence[RunRecord],
    *,
    seeds: int = 1,
    rows: Sequence[ResultRow] = (),
    summary: dict[str, StrategySummary] | None = None,
    bootstrap: dict[str, dict[str, UnitBootstrap]] | None = None,
    verdicts: dict[str, MetricVerdicts] | None = None,
) -> Comparison:
    strategies = list(dict.fromkeys(p.strategy for p in per_run))
    return Comparison(preset="test", runs_finished=len(per_run), runs_planned=len(per_run), strategies=strategies,
                      seeds=seeds, overrides=[], command="cmd", baseline="tied", rows=list(rows),
                      summary=summary or {}, bootstrap=bootstrap or {},
                      per_run=list(per_run), update_dynamics=[],
                      verdicts=verdicts if verdicts is not None else all_verdicts(list(rows), "tied"),
                      seeding={"2": len(per_run)})  # fmt: skip


def context(c: Comparison, names: list[str] | None = None) -> ReportContext:
    """The report context of ``c`` (first seed of each strategy as ``seed0``), plots into the current folder."""
    seed0: dict[str, RunRecord] = {}
    for p in sorted(c.per_run, key=lambda p: p.seed):
        seed0.setdefault(p.strategy, p)
    return ReportContext(c, Path("."), "cmd", names or c.strategies, seed0, c.rows, "tied", V, D, math.log(V))
