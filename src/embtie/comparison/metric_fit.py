"""The metrics a comparison names (``--metric``, ``--margin``) checked against what its runs measure, before
anything trains: the tasks that have each metric and the strategies a quantized metric can quantize are
``embtie.metrics``' declarations (``Metric.tasks``, ``Metric.quantized``) and the strategies' own
(``flat_table``). Without it a language model compared on BLEU trained every seed and reported no verdict
(with a false "there is no baseline"), and ``ppl-int8`` with an adaptive arm was refused after the grid."""

from __future__ import annotations

from collections.abc import Mapping

from embtie import metrics, sharing
from embtie.decisions import Margin
from embtie.errors import ConfigError


def flags_of(task: str) -> list[str]:
    """The ``--metric`` names a run of ``task`` has."""
    return [m.flag for m in metrics.METRICS if m.flag is not None and task in m.tasks]


def check_metrics(metric: str | None, margins: Mapping[str, Margin], strategies: Mapping[str, str], task: str,
                  preset: str) -> None:  # fmt: skip
    """``--metric`` (``metric``) and every ``--margin`` (``margins``: metric key -> margin) name a metric that
    runs of ``task`` (of ``preset``) have, and a quantized metric only strategies (``strategies``: label ->
    strategy name) with one flat table to quantize (a one-line ConfigError naming the task's metrics)."""
    if metric is not None:
        m = metrics.chosen(metric)
        if task not in m.tasks:
            raise ConfigError(
                f"--metric {m.flag} ({m.label}) is not measured on {task} runs ({preset}); a comparison of "
                f"{task} runs decides on one of {', '.join(flags_of(task))}"
            )
        if m.quantized is not None:
            for label, name in strategies.items():
                if not sharing.get(name).flat_table:
                    raise ConfigError(
                        f"--metric {m.flag} quantizes each arm's one (V, d) table, and {label} ({name}) keeps "
                        f"per-cluster tables; leave {label} out of --strategies or decide on --metric ppl"
                    )
    for key, margin in margins.items():
        m = metrics.metric(key)
        if task not in m.tasks:
            have = [k for k in metrics.DEFAULT_MARGINS if task in metrics.metric(k).tasks]
            raise ConfigError(
                f"--margin {key}={margin.spec()}: {task} runs ({preset}) have no {m.label}, so the margin would "
                f"apply to nothing; give a margin of {', '.join(have)}"
            )
