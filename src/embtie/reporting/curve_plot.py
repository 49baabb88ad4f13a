"""The learning-curves figure of a comparison: every strategy visible where the curves overlap.

Strategies that differ by 0.01 nats draw on the same pixels; one drawn over another hid it (issue 52). So
each strategy gets its own line style and markers besides its colour (``strategy_styles``): the baseline a
thick solid line drawn first, every other one a thinner dash pattern with markers drawn over it, through
whose gaps the baseline shows. Under the loss panels, a difference panel draws each strategy's seed-mean
loss minus the baseline's on the common steps: the baseline is the zero line, and differences far too small
to see in the loss panels fill the panel's height.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from embtie.reporting.plots import _save, plt, strategy_colors

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from embtie.comparison.records import LossCurves

DASHES: tuple[tuple[float, tuple[float, ...]], ...] = (
    (0, (6.0, 2.5)),
    (0, (1.5, 1.5)),
    (0, (6.0, 2.0, 1.5, 2.0)),
    (0, (3.0, 3.0)),
    (0, (9.0, 2.0, 1.5, 2.0, 1.5, 2.0)),
)
"""the dash patterns of the strategies other than the baseline, in order."""
MARKERS = ("o", "s", "^", "D", "v", "P", "X")


@dataclass(frozen=True)
class Style:
    """How one strategy's curve is drawn."""

    color: tuple[float, ...]
    linestyle: str | tuple[float, tuple[float, ...]]
    marker: str | None
    linewidth: float
    zorder: int


def strategy_styles(names: Sequence[str], baseline: str | None) -> dict[str, Style]:
    """The baseline: a thick solid line, no marker, drawn first; every other strategy: its colour
    (``strategy_colors``), its own dash pattern and marker, thinner, drawn over the baseline in order."""
    colors = strategy_colors(list(names))
    out: dict[str, Style] = {}
    others = [n for n in names if n != baseline]
    for n in names:
        if n == baseline:
            out[n] = Style(colors[n], "-", None, 2.6, 2)
        else:
            i = others.index(n)
            out[n] = Style(colors[n], DASHES[i % len(DASHES)], MARKERS[i % len(MARKERS)], 1.5, 3 + i)
    return out


def _band(
    steps_list: Sequence[Sequence[float]], values_list: Sequence[Sequence[float]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Align seed curves on their common steps -> (steps, mean, min, max)."""
    common = sorted(set.intersection(*(set(s) for s in steps_list))) if steps_list else []
    if not common:
        return np.array([]), np.array([]), np.array([]), np.array([])
    stack = np.array([[dict(zip(s, v))[c] for c in common] for s, v in zip(steps_list, values_list)], dtype=float)
    return np.array(common, dtype=float), stack.mean(0), stack.min(0), stack.max(0)


def _means(runs: Sequence[LossCurves], key: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """(steps, seed mean, min, max, seeds) of the ``key`` ("train" or "valid") loss of a strategy's runs."""
    seeds = [(c.train_steps, c.train) if key == "train" else (c.valid_steps, c.valid) for c in runs]
    seeds = [(steps, losses) for steps, losses in seeds if losses]
    if not seeds:
        return np.array([]), np.array([]), np.array([]), np.array([]), 0
    return (*_band([s for s, _ in seeds], [v for _, v in seeds]), len(seeds))


def _draw(ax: Axes, x: np.ndarray, y: np.ndarray, name: str, style: Style, offset: int) -> None:
    """One strategy's line; markers spread over the line, shifted per strategy so that they do not coincide."""
    every = max(1, x.size // 8)
    ax.plot(x, y, color=style.color, ls=style.linestyle, lw=style.linewidth, marker=style.marker, ms=4,
            markevery=(offset % every, every), label=name, zorder=style.zorder)  # fmt: skip


def _difference(ax: Axes, curves: Mapping[str, Sequence[LossCurves]], key: str, baseline: str,
                styles: Mapping[str, Style], cut: float | None) -> None:  # fmt: skip
    """Each strategy's seed-mean loss minus the baseline's on their common steps; the baseline is 0. The y
    range covers the differences where both losses are under ``cut`` (the loss panels' top)."""
    bx, bm, *_ = _means(curves[baseline], key)
    base = dict(zip(bx.tolist(), bm.tolist()))
    ax.axhline(0.0, color=styles[baseline].color, lw=styles[baseline].linewidth, label=baseline, zorder=2)
    shown: list[float] = []
    for i, (name, runs) in enumerate(curves.items()):
        x, m, *_ = _means(runs, key)
        keep = [j for j, s in enumerate(x.tolist()) if s in base]
        if name == baseline or not keep:
            continue
        xs, ms = x[keep], m[keep]
        bs = np.array([base[s] for s in xs.tolist()])
        diff = ms - bs
        _draw(ax, xs, diff, name, styles[name], 2 * i)
        inside = diff[(ms <= cut) & (bs <= cut)] if cut is not None else diff
        shown.extend(np.abs(inside if inside.size else diff).tolist())
    finite = [v for v in shown if math.isfinite(v)]
    if finite:
        top = max(max(finite), 1e-4) * 1.15
        ax.set_ylim(-top, top)
    ax.set_xlabel("optimizer step")
    ax.grid(alpha=0.3)


def learning_curves(
    curves: Mapping[str, Sequence[LossCurves]], path: Path, ln_v: float | None = None, baseline: str | None = "tied"
) -> Path:
    """Train and valid loss against step, one line per strategy (seed mean) with a min-max band over seeds,
    each in its own colour, dash pattern and markers (``strategy_styles``); with a ``baseline`` among two or
    more strategies, a panel under each: loss minus the baseline's.

    curves: {strategy: the curves of its seeds}. The y axis is cut at ln V + 1.5 (a uniform guess is ln V)
    so that the huge initial losses do not flatten the rest; the step-0 figure shows them whole.
    """
    names = list(curves)
    base = baseline if baseline in curves and len(names) > 1 else None
    styles = strategy_styles(names, base)
    rows = 2 if base is not None else 1
    fig, axes = plt.subplots(rows, 2, figsize=(12, 4.4 + 2.6 * (rows - 1)), squeeze=False, sharex="col",
                             gridspec_kw={"height_ratios": [3, 2][:rows]})  # fmt: skip
    cut = ln_v + 1.5 if ln_v is not None else None
    lo = math.inf
    order = sorted(names, key=lambda n: styles[n].zorder)  # the baseline first, under the others
    for col, (key, title) in enumerate((("train", "train loss"), ("valid", "valid loss"))):
        ax = axes[0, col]
        for name in order:
            x, m, a, b, n_seeds = _means(curves[name], key)
            if x.size == 0:
                continue
            _draw(ax, x, m, name, styles[name], 2 * names.index(name))
            if n_seeds > 1:
                ax.fill_between(x, a, b, color=styles[name].color, alpha=0.15, lw=0, zorder=1)
            lo = min(lo, float(np.nanmin(a)))
        if ln_v is not None:
            ax.axhline(ln_v, color="grey", ls="--", lw=1)
            ax.text(ax.get_xlim()[0], ln_v, "  ln V (uniform guess)", va="bottom", fontsize=8, color="grey")
        ax.set_title(title)
        ax.grid(alpha=0.3)
        if base is not None:
            _difference(axes[1, col], curves, key, base, styles, cut)
        else:
            ax.set_xlabel("optimizer step")
    axes[0, 0].set_ylabel("cross-entropy (nats/token)")
    if cut is not None and math.isfinite(lo):
        axes[0, 0].set_ylim(lo - 0.2, cut)
        axes[0, 1].set_ylim(lo - 0.2, cut)
    axes[0, 1].legend(fontsize=8, ncol=2, loc="upper right", handlelength=4)
    if base is not None:
        axes[1, 0].set_ylabel(f"minus {base}'s loss (nats)")
        axes[1, 1].legend(fontsize=8, ncol=2, loc="upper right", handlelength=4)
    fig.tight_layout()
    return _save(fig, path)
