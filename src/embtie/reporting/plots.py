"""Report figures, drawn from saved data (records and arrays read from run files), never from a live model.

Every function takes data per strategy, writes one PNG and returns its path. matplotlib runs on the Agg
backend (no display needed).
"""

from __future__ import annotations

import itertools
import math
import textwrap
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import ticker
from matplotlib.figure import Figure

if TYPE_CHECKING:
    from embtie.analysis.records import NormHistograms, ParameterCounts

DPI = 110


@dataclass(frozen=True)
class FrequencyScatter:
    """A run's output-vector norms against the training counts of its output vocabulary."""

    counts: np.ndarray
    """(V,) training counts (tokens with count 0 are not drawn)."""
    norms: np.ndarray
    """(V,) output-vector norms."""
    rho: float | None
    """Spearman's rho between the two (NaN or None: not defined)."""


@dataclass(frozen=True)
class RowUpdateCounts:
    """In how many of ``batches`` training batches each row got an input- and an output-path gradient."""

    batches: int
    input_counts: np.ndarray
    """(V,), rows in frequency order (the vocabulary is sorted by training frequency)."""
    output_counts: np.ndarray


def strategy_colors(names: Sequence[str]) -> dict[str, tuple[float, ...]]:
    """A stable, distinct colour per strategy: tab10 first (tied always blue, untied always orange), then
    the light tab20 shades."""
    tab10, tab20 = plt.get_cmap("tab10"), plt.get_cmap("tab20")
    palette = [tab10(i) for i in range(10)] + [tab20(i) for i in range(1, 20, 2)]
    fixed = {"tied": 0, "untied": 1}
    free = [i for i in range(len(palette)) if i not in fixed.values()]
    out: dict[str, tuple[float, ...]] = {}
    k = 0
    for n in names:
        if n in fixed:
            out[n] = palette[fixed[n]]
        else:
            out[n] = palette[free[k % len(free)]]
            k += 1
    return out


def _constant(values: np.ndarray) -> bool:
    """Equal up to float rounding (e.g. L2-normalised rows)."""
    values = np.asarray(values, dtype=float)
    return values.size > 0 and float(np.ptp(values)) <= 1e-5 * max(float(np.abs(values).max()), 1e-12)


def plain_number(x: float) -> str:
    """A tick label as a plain number: 14.5, 200, 0.01, 6,000 (never 1.45×10¹ or 6×10³)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    text = f"{x:.3g}"
    return text if "e" not in text else f"{x:.6f}".rstrip("0").rstrip(".")


class PlainLogFormatter(ticker.LogFormatter):
    """Matplotlib's log-axis labelling (which ticks get a label) with plain numbers as the labels."""

    def _num_to_string(self, x: float, vmin: float, vmax: float) -> str:
        return plain_number(x)


def plain_log_ticks(fig: Figure) -> None:
    """Every log-scaled axis of ``fig`` labels its ticks, major and minor, with plain numbers."""
    for ax in fig.axes:
        for axis, scale in ((ax.xaxis, ax.get_xscale()), (ax.yaxis, ax.get_yscale())):
            if scale == "log":
                axis.set_major_formatter(PlainLogFormatter(labelOnlyBase=False))
                axis.set_minor_formatter(PlainLogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))


def _save(fig: Figure, path: Path) -> Path:
    plain_log_ticks(fig)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI, bbox_inches="tight", facecolor="white")
    plt.close(fig)
    return path


def _grid(n: int, max_cols: int = 4, size: tuple[float, float] = (3.4, 2.7)) -> tuple[Figure, np.ndarray]:
    cols = min(max_cols, max(n, 1))
    rows = math.ceil(max(n, 1) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(size[0] * cols, size[1] * rows), squeeze=False)
    flat = axes.ravel()
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat


def step0_losses(
    measured: Mapping[str, Sequence[float]], predicted: Mapping[str, float | None], ln_v: float, path: Path
) -> Path:
    """Measured step-0 loss per strategy (bar = seed mean, dots = seeds) against Su's prediction and ln V."""
    names = list(measured)
    colors = strategy_colors(names)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(names) + 2), 4.2))
    x = np.arange(len(names))
    means = [float(np.mean(measured[n])) if measured[n] else np.nan for n in names]
    ax.bar(x, means, color=[colors[n] for n in names], alpha=0.85, label="measured (seed mean)")
    for i, n in enumerate(names):
        ax.plot([i] * len(measured[n]), measured[n], "k.", ms=4)
    known = [(i, p) for i, n in enumerate(names) if (p := predicted.get(n)) is not None]
    px, py = [i for i, _ in known], [p for _, p in known]
    if px:
        ax.plot(px, py, "D", color="crimson", ms=7, label="Su's prediction")
    ax.axhline(ln_v, color="grey", ls="--", lw=1.2, label=f"ln V = {ln_v:.2f}")
    ax.set_xticks(x, names, rotation=35, ha="right")
    ax.set_ylabel("loss at step 0 (nats/token)")
    lows = [v for v in [*means, *py, ln_v] if np.isfinite(v)]
    highs = [max(measured[n]) for n in names if measured[n]] + lows
    ax.set_ylim(min(lows) - 1.0, max(highs) + 0.5)
    ax.set_title("Loss at step 0 against Su's prediction and ln V")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def norm_histograms(hists: Mapping[str, NormHistograms], path: Path) -> Path:
    """Histograms of input- and output-vector norms per strategy (Liu et al., Figure 2)."""
    fig, axes = _grid(len(hists))
    for ax, (name, h) in zip(axes, hists.items()):
        sides = (("input", h.input, "tab:blue"), ("output", h.output, "tab:red"))
        for side, hist, color in sides:
            e = np.asarray(hist.edges)
            c = np.asarray(hist.counts)
            if hist.constant:
                # all norms equal (normalised or fixed rows): one bar, not a histogram of rounding noise
                m = hist.mean
                ax.bar([m], [int(c.sum())], width=0.02 * max(abs(m), 1e-3), alpha=0.45, color=color,
                       label=f"{side} (all {m:.3f})")  # fmt: skip
                continue
            ax.stairs(c, e, fill=True, alpha=0.45, color=color, label=f"{side} (mean {hist.mean:.2f})")
        if all(hist.constant for _, hist, _ in sides):
            m = max(hist.mean for _, hist, _ in sides)
            ax.set_xlim(0.5 * m, 1.5 * m)
        ax.ticklabel_format(axis="x", useOffset=False)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("L2 norm", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7)
    axes[0].set_ylabel("tokens")
    fig.tight_layout()
    return _save(fig, path)


def norm_vs_frequency(points: Mapping[str, FrequencyScatter], path: Path) -> Path:
    """Output-vector norm against training frequency per strategy, log axes, with Spearman's rho."""
    fig, axes = _grid(len(points))
    for ax, (name, p) in zip(axes, points.items()):
        c = np.asarray(p.counts, dtype=float)
        n = np.asarray(p.norms, dtype=float)
        keep = (c > 0) & (n > 0)
        if _constant(n[keep]):
            n = np.full_like(n, float(np.mean(n[keep])))  # rounding noise is not a norm difference
            ax.set_ylim(0.9 * n[0], 1.1 * n[0])
        ax.scatter(c[keep], n[keep], s=2, alpha=0.35, color="tab:red", rasterized=True)
        if ax.get_yscale() == "linear":
            ax.ticklabel_format(axis="y", useOffset=False, style="plain")
        ax.set_xscale("log")
        if keep.any() and float(n[keep].max()) > 10 * float(n[keep].min()):
            ax.set_yscale("log")  # log only when the norms span more than a decade
        rho = p.rho
        rho_txt = "n/a (norms constant)" if rho is None or not math.isfinite(rho) else f"{rho:+.2f}"
        rho_txt = "0.00" if rho_txt in ("+0.00", "-0.00") else rho_txt
        ax.set_title(f"{name}: rho = {rho_txt}", fontsize=10)
        ax.set_xlabel("train frequency", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("output-vector norm")
    fig.tight_layout()
    return _save(fig, path)


def identical_groups(items: Mapping[str, object], key: Callable[[Any], object]) -> list[list[str]]:
    """The names of ``items`` grouped where ``key`` of their values is equal, in first-seen order: one panel
    per group instead of several identical ones."""
    groups: dict[object, list[str]] = {}
    for name, value in items.items():
        groups.setdefault(key(value), []).append(name)
    return list(groups.values())


def row_update_frequency(updates: Mapping[str, RowUpdateCounts], path: Path, bins: int = 20) -> Path:
    """Share of batches in which a row gets a non-zero gradient, input vs output path, against the row's
    frequency rank (rows binned by rank; rank 0 = most frequent token). Strategies with identical counts
    share one panel (``row_update_groups``)."""
    return _save(row_update_figure(updates, bins), path)


def row_update_groups(updates: Mapping[str, RowUpdateCounts]) -> list[list[str]]:
    """The strategies whose row-update counts are identical, grouped (one panel each)."""
    return identical_groups(updates, lambda u: (u.batches, tuple(u.input_counts), tuple(u.output_counts)))


def row_update_figure(updates: Mapping[str, RowUpdateCounts], bins: int = 20) -> Figure:
    """The figure of ``row_update_frequency``, not saved."""
    groups = row_update_groups(updates)
    fig, axes = _grid(len(groups))
    for ax, names in zip(axes, groups):
        u = updates[names[0]]
        name = textwrap.fill(", ".join(names) + (" (identical)" if len(names) > 1 else ""), 40)
        n = max(int(u.batches), 1)
        for side, counts, color in (("input", u.input_counts, "tab:blue"), ("output", u.output_counts, "tab:red")):
            share = np.asarray(counts, dtype=float) / n
            edges = np.unique(np.geomspace(1, share.size, bins + 1).astype(int))
            ranks = [(a + b) / 2 for a, b in itertools.pairwise(edges)]
            means = [share[a - 1 : b - 1].mean() if b > a else share[a - 1] for a, b in itertools.pairwise(edges)]
            ax.plot(ranks, means, "-o", ms=3, color=color, label=f"{side}: {share.mean():.0%} of rows/batch")
        ax.set_xscale("log")
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("frequency rank", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="lower left")
    axes[0].set_ylabel("share of batches with update")
    fig.tight_layout()
    return fig


def output_path_shares(records: Mapping[str, np.ndarray], path: Path) -> Path:
    """Output-path share of the embedding rows' gradient norm at each probe, per strategy: all rows and
    the frequent / middle / rare thirds of the vocabulary.

    records: {strategy: (P, 5) array [step, all, frequent, middle, rare]} (``train.path_probe``).
    """
    fig, axes = _grid(len(records))
    styles = (("all rows", 1, "k", "-"), ("frequent third", 2, "tab:blue", "--"),
              ("middle third", 3, "tab:green", "--"), ("rare third", 4, "tab:red", "--"))  # fmt: skip
    for ax, (name, rec) in zip(axes, records.items()):
        rec = np.asarray(rec, dtype=float)
        for label, col, color, ls in styles:
            ax.plot(rec[:, 0], rec[:, col], ls, marker="o", ms=3, color=color, label=label)
        ax.set_ylim(-0.05, 1.05)
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("training step", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0].set_ylabel("output-path share of gradient")
    axes[0].legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    return _save(fig, path)


def parameter_counts(counts: Mapping[str, ParameterCounts], path: Path) -> Path:
    """Learned (strategy / rest of model) and fixed parameters per strategy (Shalev et al., Table 3)."""
    names = list(counts)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.75 * len(names) + 2), 4.2))
    x = np.arange(len(names))
    s_l = np.array([counts[n].sharing_learned for n in names], dtype=float) / 1e6
    rest = np.array([counts[n].learned - counts[n].sharing_learned for n in names], dtype=float) / 1e6
    fixed = np.array([counts[n].fixed for n in names], dtype=float) / 1e6
    ax.bar(x, rest, color="tab:gray", label="learned: rest of model")
    ax.bar(x, s_l, bottom=rest, color="tab:blue", label="learned: embedding / output layer")
    if fixed.any():
        ax.bar(
            x[fixed > 0], fixed[fixed > 0], bottom=(rest + s_l)[fixed > 0], color="none", edgecolor="tab:red",
            hatch="///", label="fixed (never trained)",
        )  # fmt: skip
    ax.margins(y=0.12)
    ax.set_xticks(x, names, rotation=35, ha="right")
    ax.set_ylabel("parameters (millions)")
    ax.legend(fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def metric_by_strategy(
    values: Mapping[str, Sequence[float]], path: Path, ylabel: str, baseline: str | None = "tied", log: bool = False
) -> Path:
    """A final metric per strategy: seed mean with 95% CI (error bar), the seeds as dots beside it, and the
    mean written above it with its difference to the ``baseline``'s mean in percent.

    With ``log`` (a positive metric such as perplexity on a log axis) the mean and its Student-t interval
    are taken over the logarithms and drawn back: the geometric mean with an interval that stays above
    zero and is symmetric on the axis drawn (a linear interval of two seeds can reach below zero, which a
    log axis cannot show)."""
    names = list(values)
    colors = strategy_colors(names)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(names) + 2), 4.2))
    base = mean_interval(values[baseline], log)[0] if baseline is not None and values.get(baseline) else None
    for i, n in enumerate(names):
        centre, low, high = mean_interval(values[n], log)
        ax.errorbar([i], [centre], yerr=[[centre - low], [high - centre]], fmt="s", color=colors[n], ms=7, capsize=4)
        ax.plot([i + 0.18] * len(values[n]), values[n], "k.", ms=4, alpha=0.7)  # the seeds, beside the bar
        said = f"{centre:.4g}" if not base or n == baseline else f"{centre:.4g}\n{100 * (centre / base - 1):+.2f}%"
        ax.annotate(said, (i, high), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
    if base is not None:
        label = f"{baseline} {'geometric ' if log else ''}mean"
        ax.axhline(base, color=colors[str(baseline)], ls=":", lw=1.2, label=label)
        ax.legend(fontsize=8)
    ax.margins(x=0.15, y=0.2)
    if log:
        ax.set_yscale("log")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right")
    ax.set_ylabel(ylabel)
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def mean_interval(values: Sequence[float], log: bool = False) -> tuple[float, float, float]:
    """(mean, low, high) of the per-seed ``values``: the seed mean and its Student-t 95% interval, or with
    ``log`` the geometric mean and the interval exp(mean ± half-width) of the logarithms. The interval is
    the mean itself where it is not defined (one seed)."""
    from embtie.stats import seed_summary

    x = [float(v) for v in values]
    if log and x and min(x) > 0:
        s = seed_summary([math.log(v) for v in x])
        half = s["half_width"] if math.isfinite(s["half_width"]) else 0.0
        return math.exp(s["mean"]), math.exp(s["mean"] - half), math.exp(s["mean"] + half)
    s = seed_summary(x)
    half = s["half_width"] if math.isfinite(s["half_width"]) else 0.0
    return s["mean"], s["mean"] - half, s["mean"] + half
