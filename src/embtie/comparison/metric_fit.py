"""The metrics a comparison names (``--metric``, ``--margin``) checked against what its runs measure, before
anything trains: the tasks that have each metric and the strategies a quantized metric can quantize are
``embtie.metrics``' declarations (``Metric.tasks``, ``Metric.quantized``) and the strategies' own
(``flat_table``). Without it a language model compared on BLEU trained every seed and reported no verdict
(with a false "there is no baseline"), and ``ppl-int8`` with an adaptive arm was refused after the grid."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from embtie import metrics, sharing
from embtie.errors import ConfigError

if TYPE_CHECKING:
    from embtie.comparison.plan import CompareSpec, PlannedRun


def flags_of(task: str) -> list[str]:
    """The ``--metric`` names a run of ``task`` has."""
    return [m.flag for m in metrics.METRICS if m.flag is not None and task in m.tasks]


def check_metrics(spec: CompareSpec, runs: Sequence[PlannedRun]) -> None:
    """``--metric`` and every ``--margin`` name a metric the runs' task has, and a quantized metric only
    strategies with one flat table to quantize (a one-line ConfigError naming the task's metrics)."""
    if not runs:
        return
    task = runs[0].cfg.task
    if spec.metric is not None:
        m = metrics.chosen(spec.metric)
        if task not in m.tasks:
            raise ConfigError(
                f"--metric {m.flag} ({m.label}) is not measured on {task} runs ({spec.preset}); a comparison of "
                f"{task} runs decides on one of {', '.join(flags_of(task))}"
            )
        if m.quantized is not None:
            for label in spec.strategies:
                name = spec.variants.get(label, (label, {}))[0]
                if not sharing.get(name).flat_table:
                    raise ConfigError(
                        f"--metric {m.flag} quantizes each arm's one (V, d) table, and {label} ({name}) keeps "
                        f"per-cluster tables; leave {label} out of --strategies or decide on --metric ppl"
                    )
    for key in spec.margins:
        m = metrics.metric(key)
        if task not in m.tasks:
            have = [k for k in metrics.DEFAULT_MARGINS if task in metrics.metric(k).tasks]
            raise ConfigError(
                f"--margin {key}={spec.margins[key].spec()}: {task} runs ({spec.preset}) have no {m.label}, so "
                f"the margin would apply to nothing; give a margin of {', '.join(have)}"
            )
