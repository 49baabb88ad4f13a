"""Grids of strategies x seeds: train every run (skipping finished ones, resuming interrupted ones),
analyse each once, and collect everything the report needs from the saved files.

- ``grid``: the grid (``CompareSpec``), its validated runs (``plan``), the --strategies syntax, the default job
- ``execution``: training and analysing the runs, one at a time or in worker processes
- ``records``: the typed results (``Comparison`` and what it holds)
- ``results``: reading them from the saved files, the statistics, the bootstraps and verdicts against
  the baseline (which metrics: ``embtie.metrics``), and results.csv / results.json
"""

from embtie.comparison.execution import N_UPDATE_BATCHES, default_jobs, execute, train_and_analyse
from embtie.comparison.grid import (
    ANALYSIS_CHOICES,
    BASELINE,
    DEFAULT_ANALYSIS,
    DEFAULT_JOB_ANALYSIS,
    DEFAULT_JOB_DESIGN,
    DEFAULT_JOB_SEEDS,
    DEFAULT_OVERRIDES,
    DEFAULT_PRESET,
    DEFAULT_SEEDS,
    DEFAULT_STRATEGIES,
    STRATEGY_OPTIONS,
    CompareSpec,
    PlannedRun,
    analysis_level,
    parse_strategy,
    plan,
    run_dir,
    split_strategies,
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
from embtie.comparison.results import CSV_FIELDS, collect, finished_runs, read_curves, write_tables

__all__ = [
    "ANALYSIS_CHOICES",
    "BASELINE",
    "CSV_FIELDS",
    "DEFAULT_ANALYSIS",
    "DEFAULT_JOB_ANALYSIS",
    "DEFAULT_JOB_DESIGN",
    "DEFAULT_JOB_SEEDS",
    "DEFAULT_OVERRIDES",
    "DEFAULT_PRESET",
    "DEFAULT_SEEDS",
    "DEFAULT_STRATEGIES",
    "N_UPDATE_BATCHES",
    "STRATEGY_OPTIONS",
    "CompareSpec",
    "Comparison",
    "LossCurves",
    "MetricVerdicts",
    "PlannedRun",
    "ResultRow",
    "RunRecord",
    "SeedSummary",
    "StrategySummary",
    "TrainingSummary",
    "UnitBootstrap",
    "analysis_level",
    "collect",
    "default_jobs",
    "execute",
    "finished_runs",
    "parse_strategy",
    "plan",
    "read_curves",
    "run_dir",
    "split_strategies",
    "train_and_analyse",
    "write_tables",
]
