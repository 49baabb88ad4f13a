"""The ladder's figure: each strategy's effect against the baseline along the rungs' body parameters (log
axis), with each rung's interval, the weighted trend and its pointwise interval, and the trend carried to
the extrapolated rungs as a dashed line and hollow markers."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from embtie.ladder.results import LadderResults
from embtie.reporting.plots import _save, plt, strategy_colors


def effect_vs_size(results: LadderResults, path: Path) -> Path:
    """Draw the figure of ``results`` to ``path`` (PNG)."""
    names = [s for s in results.strategies if s != results.baseline]
    colors = strategy_colors(results.strategies)
    fig, ax = plt.subplots(figsize=(7.0, 4.4))
    bodies = [b.body for b in results.rungs]
    beyond = [b.body for b in results.beyond]
    span = np.geomspace(min(bodies), max(bodies), 60)
    for k, name in enumerate(names):
        effects = results.of(name)
        shift = 1.0 + 0.03 * (k - (len(names) - 1) / 2)  # side by side at one rung
        x = np.array([e.body * shift for e in effects], dtype=float)
        y = np.array([e.mean for e in effects])
        err = np.array([[e.mean - e.ci[0] for e in effects], [e.ci[1] - e.mean for e in effects]])
        ax.errorbar(x, y, yerr=err, fmt="o", color=colors[name], capsize=3, label=name)
        trend = results.trend(name)
        if trend is None:
            continue
        bands = np.array([trend.predict(b) for b in span])
        ax.plot(span, bands[:, 0], color=colors[name], lw=1.2)
        ax.fill_between(span, bands[:, 1], bands[:, 2], color=colors[name], alpha=0.15, lw=0)
        if beyond:
            far = np.geomspace(max(bodies), max(beyond), 40)
            ahead = np.array([trend.predict(b) for b in far])
            ax.plot(far, ahead[:, 0], color=colors[name], lw=1.0, ls="--")
            ax.fill_between(far, ahead[:, 1], ahead[:, 2], color=colors[name], alpha=0.07, lw=0)
            points = np.array([trend.predict(b) for b in beyond])
            ax.plot(beyond, points[:, 0], "o", mfc="none", color=colors[name])
    ax.axhline(0.0, color="k", lw=0.8)
    ax.set_xscale("log")
    ax.set_xlabel("body (non-embedding) parameters")
    metric = results.metric
    unit = f" ({metric.unit} of {results.baseline})" if metric is not None and metric.relative else ""
    ax.set_ylabel(f"{metric.label if metric else 'effect'} vs {results.baseline}{unit}")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    return _save(fig, path)
