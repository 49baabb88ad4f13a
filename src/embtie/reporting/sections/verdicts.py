"""The verdicts section: every strategy against the baseline on every tested metric, from seeds paired by
common random numbers, with the margin, the test that decided, and the seeds an undecided one needs."""

from __future__ import annotations

from embtie.comparison.records import MetricVerdicts
from embtie.comparison.verdicts import paired_values
from embtie.decisions import Decision
from embtie.decisions.pairing import pairing
from embtie.metrics import BY_KEY, Metric, primary
from embtie.reporting.document import Heading, Table, Text
from embtie.reporting.sections.context import Block, ReportContext, p_cell


def seeding_text(ctx: ReportContext) -> str:
    """Which seeding scheme the runs used, and what that means for pairing them."""
    schemes = ctx.comparison.seeding
    total = sum(schemes.values())
    if set(schemes) == {"2"}:
        return (f"Seeds: all {total} runs use seeding scheme 2 (common random numbers): seed s of every strategy "
                "starts from the same body weights and sees the same data order, dropout stream and evaluation "
                "sample, so runs are compared in pairs of equal seed.")  # fmt: skip
    old = sum(n for k, n in schemes.items() if k != "2")
    return (f"Seeds: {old} of {total} runs predate seeding scheme 2: their body's initial weights depend on "
            "the strategy. Pairs of equal seed still share the data order, dropout stream and evaluation "
            "sample, so the paired tests are valid but less sharp than with common random numbers.")  # fmt: skip


def _cells(d: Decision, v: MetricVerdicts, robustness: bool) -> list[str]:
    unit = "%" if d.relative else ""
    lo, hi = d.ci
    tlo, thi = d.tost_ci
    c_diff, c_eq = d.confidences()
    needed = "-" if d.verdict != "undecided" else (str(d.seeds_needed) if d.seeds_needed else "> 200")
    cells = [
        str(d.n),
        f"{d.mean:+.2f}{unit} [{lo:+.2f}, {hi:+.2f}] ({_pct(c_diff)})",
        f"[{tlo:+.2f}, {thi:+.2f}] ({_pct(c_eq)})",
        v.margin_text(),
        d.verdict + (" (model-based)" if d.model_based else ""),
        f"{p_cell(d.p_difference_holm)} / {p_cell(d.p_equivalence_holm)}",
    ]
    if robustness:
        cells.append(p_cell(d.p_signflip))
    return [*cells, d.test, needed]


def _pct(confidence: float) -> str:
    return f"{100 * confidence:.4g}%"


def _label(ctx: ReportContext, v: MetricVerdicts) -> str:
    """The metric's label (its captioning label in a captioning comparison); a saved one it no longer declares."""
    declared = BY_KEY.get(v.metric)
    return v.label if declared is None else declared.label_in(ctx.comparison.captioning)


_OLD_LEVELS = ("Student-t intervals over the pairs, each at the level its Holm step tested (1 - a/(m - k) for the "
               "difference, 1 - 2a/(m - k) for equivalence), so an interval excludes 0 or lies inside the margin "
               "exactly when its test rejects.")  # fmt: skip
_LEVELS = ("Student-t intervals over the pairs, each at the level of its step in the comparison's one step-down "
           "family (1 - that level for the difference, 1 - 2 x it for equivalence), so an interval excludes 0 or "
           "lies inside the margin exactly when its test rejects. Sign-flip p: the exact permutation p of the "
           "paired differences (no normality assumed); a better/worse verdict that no sign test could reach at its "
           "level with so few pairs is marked model-based (it rests on the t-test's normal model).")  # fmt: skip


def _table(ctx: ReportContext, v: MetricVerdicts) -> Table:
    unit = f"% of {ctx.baseline}" if v.relative else ""
    better = "higher" if v.higher_is_better else "lower"
    robustness = v.role is not None  # files written before the robustness column have no sign-flip p
    rows = [[n, *_cells(d, v, robustness)] for n in ctx.names if (d := v.decision(n)) is not None]
    delta = f"Δ vs {ctx.baseline}{' (' + unit + ')' if unit else ''} [CI (confidence)]"
    header = ["strategy", "paired seeds", delta, "CI (equivalence)", "margin", "verdict",
              "p: difference / equivalence (Holm)" if not robustness else "p: difference / equivalence (step-down)",
              *(["sign-flip p (exact)"] if robustness else []), "test", "seeds to decide (80% power)"]  # fmt: skip
    role = ("Secondary metric: outside the family that decides this comparison, so its verdicts are exploratory. "
            if v.role == "secondary" else "")  # fmt: skip
    return Table(
        header,
        rows,
        f"{role}{_label(ctx, v)} ({better} is better). Δ: strategy minus {ctx.baseline}, per pair of equal seed, then "
        f"averaged; {_LEVELS if robustness else _OLD_LEVELS} Equivalent: the equivalence interval lies inside the "
        f"margin (TOST); better/worse: the first interval excludes 0 (paired t-test); else undecided, with the "
        f"paired seeds that would decide it at the observed difference and spread. Design: {v.design}.",
    )


def pairing_table(ctx: ReportContext, tested: Metric) -> Table | None:
    """How closely each strategy's per-seed values follow tied's on ``tested`` and how much variance the
    pairing removes (None below 3 paired seeds)."""
    rows = []
    for n in ctx.names:
        if n == ctx.baseline:
            continue
        mine, base = paired_values(ctx.rows, n, ctx.baseline, tested)
        p = pairing(mine, base) if len(mine) >= 3 else None
        if p is not None:
            mark = " †" if p.variance_removed < 0 else ""
            rows.append([n, str(p.n), f"{p.correlation:.2f}", f"{p.sd_paired:.2f}%", f"{p.sd_unpaired:.2f}%",
                         f"{100 * p.variance_removed:.0f}%{mark}"])  # fmt: skip
    if not rows:
        return None
    header = ["strategy", "seeds", f"correlation with {ctx.baseline} ({tested.label})", "sd of paired differences",
              "sd if seeds were independent", "variance removed by pairing"]  # fmt: skip
    return Table(
        header,
        rows,
        f"What pairing by seed buys: the per-seed values' correlation with {ctx.baseline}, the spread of the "
        f"per-seed differences (percent of {ctx.baseline}), the spread independent seeds would give, and the share "
        "of the difference's variance that pairing removes (embtie.decisions.pairing)."
        + _negative_note(rows, ctx.baseline),
    )


NEGATIVE_NOTE = (
    " † A negative share: pairing hurt here, because this strategy's per-seed values are negatively "
    "correlated with tied's, so the paired differences spread more than independent seeds would. With few "
    "seeds that is most likely sampling noise (a correlation over 3 to 5 seeds can come out negative when "
    "the true one is small); the paired tests stay valid, they only gain nothing from the pairing."
)
"""the footnote of a pairing table with a negative "variance removed"."""


def _negative_note(rows: list[list[str]], baseline: str = "tied") -> str:
    """NEGATIVE_NOTE (naming ``baseline``) when a row has a negative share, else nothing."""
    return NEGATIVE_NOTE.replace("tied's", f"{baseline}'s") if any(r[-1].endswith("†") for r in rows) else ""


def verdicts(ctx: ReportContext) -> list[Block]:
    """One table per tested metric (nothing when no strategy has two seeds paired with the baseline), and
    what the pairing buys on the primary metric."""
    tested = list(ctx.comparison.verdicts.values())
    if not tested:
        return []
    blocks: list[Block] = [Heading("Verdicts: paired seeds and margins of equivalence"), Text(seeding_text(ctx))]
    blocks += [_table(ctx, v) for v in tested]
    gain = pairing_table(ctx, primary(ctx.rows, ctx.comparison.metric))
    return blocks + ([gain] if gain is not None else [])
