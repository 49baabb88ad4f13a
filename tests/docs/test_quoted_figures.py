# ruff: noqa: E501  (one line per quoted figure: the table reads as a list)
"""Every figure that README.md, docs/reproductions.md and docs/results.md quote from a results folder is
re-computed here from that folder's files (results.csv / results.json, or a table of its report.md) and
compared at the precision the document prints it, so the documents cannot drift from the data.

A row of ``FIGURES`` is (document, phrase, folder under results/, expression): the expression gets the
folder (``Folder``: its rows, its verdicts, its report's tables) and returns the values that fill the
phrase's ``{}`` fields with their format specs; the filled phrase must occur in the document (read with
Unicode minus signs as ASCII ones). Adding a figure is one line."""

from __future__ import annotations

import math
import re
import statistics
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from embtie.comparison.records import SeedSummary
from embtie.comparison.verdicts import all_verdicts, paired_values
from embtie.decisions import ONE_FAMILY, Decision, SequentialDesign, rule_of
from embtie.decisions.pairing import Pairing, pairing
from embtie.decisions.sequential import replay
from embtie.metrics import DEFAULT_MARGINS
from embtie.metrics import metric as declared
from embtie.metrics import primary as declared_primary
from embtie.reporting.sections.context import ci

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.saved_results import read_rows  # noqa: E402

from bench import quantization_cost, su_ordering  # noqa: E402


class Folder:
    """A results folder's files, read once."""

    def __init__(self, name: str) -> None:
        self.path = ROOT / "results" / name
        tables = any((self.path / n).is_file() for n in ("results.json", "results.csv"))
        self.rows, self.saved = read_rows(self.path) if tables else ([], {})  # a design's folder: README only
        self.report = (self.path / "report.md").read_text(encoding="utf-8") if (self.path / "report.md").is_file() else ""

    def values(self, strategy: str, column: str) -> list[float]:
        """The per-seed values of ``column`` for ``strategy``, in seed order."""
        rows = sorted((r for r in self.rows if r.strategy == strategy), key=lambda r: r.seed)
        return [float(v) for r in rows if (v := getattr(r, column)) is not None]

    def rows_of(self, strategy: str) -> list[Any]:
        """The rows of ``strategy``, in seed order."""
        return sorted((r for r in self.rows if r.strategy == strategy), key=lambda r: r.seed)

    def mean(self, strategy: str, column: str) -> float:
        return statistics.mean(self.values(strategy, column))

    def sd(self, strategy: str, column: str) -> float:
        return statistics.stdev(self.values(strategy, column))

    def seed(self, strategy: str, seed: int, column: str) -> float:
        return next(float(getattr(r, column)) for r in self.rows if r.strategy == strategy and r.seed == seed)

    def delta(self, strategy: str, column: str, baseline: str = "tied") -> float:
        """Difference of the seed means."""
        return self.mean(strategy, column) - self.mean(baseline, column)

    def pct(self, strategy: str, column: str, baseline: str = "tied") -> float:
        """Difference of the seed means, percent of the baseline's."""
        return 100 * (self.mean(strategy, column) / self.mean(baseline, column) - 1)

    def decision(self, metric: str, strategy: str, baseline: str | None = None) -> Decision:
        """The verdict the folder's report prints: the saved one of a sequential design (results.json's
        verdicts with looks), else recomputed from the per-seed values (one look, Holm, default margins)."""
        saved = self.saved.get("verdicts", {}).get(metric)
        if saved is not None and "looks at" in saved["design"] and baseline is None:
            d = saved["decisions"][strategy]
            return Decision(**{**d, "ci": tuple(d["ci"]), "tost_ci": tuple(d["tost_ci"])})
        rule = rule_of(self.saved)  # a one-family folder decides its primary metric over all pairs (the choice)
        key = declared_primary(self.rows, self.saved.get("metric")).key if rule == ONE_FAMILY else None
        base = baseline or self.saved.get("baseline", "tied")
        d = all_verdicts(self.rows, base, rule=rule, primary_key=key)[metric].decision(strategy)
        assert d is not None
        return d

    def said(self, metric: str, strategy: str, baseline: str | None = None) -> str:
        """A verdict as the documents write it: 'worse, -6.25 [-12.33, -0.17] (97.5%)', 'equivalent within
        ±0.5, +0.25 [-0.00, +0.50] (97.5%)', 'undecided, ... ; about 57 paired seeds would decide it'."""
        d = self.decision(metric, strategy, baseline)
        if d.verdict == "equivalent":
            return f"equivalent within ±{d.margin:g}{'%' if d.relative else ''}, {_interval(d)}"
        if d.verdict != "undecided":
            return f"{d.verdict}, {_interval(d)}"
        more = (f"about {d.seeds_needed} paired seeds would decide it" if d.seeds_needed is not None
                else "more than 200 paired seeds would be needed")  # fmt: skip
        return f"undecided, {_interval(d)}; {more}"

    def cell(self, header: str, row: str, column: str) -> str:
        """The cell of a report.md table whose header line contains ``header``: the row whose first cell
        starts with ``row``, the column whose header starts with ``column``."""
        lines = self.report.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("|") and header in line)
        names = [c.strip() for c in lines[start].strip().strip("|").split(" | ")]
        col = next(i for i, n in enumerate(names) if n.startswith(column))
        for line in lines[start + 2 :]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0].startswith(row):
                return cells[col]
        raise AssertionError(f"no row {row!r} in the table {header!r} of {self.path}/report.md")

    def summary(self, strategy: str, column: str, digits: int = 1) -> str:
        """'mean ± std [95% CI]' over seeds, as the reports print it."""
        return ci(SeedSummary.of(self.values(strategy, column)), digits)

    def col(self, header: str, row: str, index: int) -> str:
        """The ``index``-th cell of a report.md table row (see ``cell``)."""
        lines = self.report.splitlines()
        start = next(i for i, line in enumerate(lines) if line.startswith("|") and header in line)
        for line in lines[start + 2 :]:
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            if cells[0].startswith(row):
                return cells[index]
        raise AssertionError(f"no row {row!r} in the table {header!r} of {self.path}/report.md")

    def budget(self, what: str) -> str:
        """A figure of the report's Budget line: the text before " training tokens" or " epochs"."""
        match = re.search(rf"Budget: [^.]*?([\d,.]+) {what}", self.report)
        assert match is not None, f"{self.path}/report.md has no {what} in its Budget line"
        return match[1]

    def budget_minutes(self) -> float:
        """The median training time per run that the report's Budget line gives, in minutes."""
        match = re.search(r"about (\S+) s of training each", self.report)
        assert match is not None, f"{self.path}/report.md has no Budget line with a training time"
        return float(match[1]) / 60

    def pairing(self, metric: str, strategy: str) -> Pairing:
        """How closely ``strategy``'s per-seed ``metric`` follows tied's (embtie.decisions.pairing)."""
        return pairing(*paired_values(self.rows, strategy, "tied", declared(metric)))

    def dynamics(self, strategy: str, key: str) -> list[float]:
        """results.json's update_dynamics values of ``key`` for ``strategy`` (one per seed)."""
        return [r[key] for r in self.saved["update_dynamics"] if r["strategy"] == strategy]


def _interval(d: Decision) -> str:
    """A decision's difference and interval as the documents write it: '-1.61% [-3.59, +0.37] (97.5%)' (the
    equivalence interval for an equivalent verdict)."""
    c_diff, c_eq = d.confidences()
    lo, hi = d.tost_ci if d.verdict == "equivalent" else d.ci
    conf = c_eq if d.verdict == "equivalent" else c_diff
    return f"{d.mean:+.2f}{'%' if d.relative else ''} [{lo:+.2f}, {hi:+.2f}] ({100 * conf:.4g}%)"


@cache
def folder(name: str) -> Folder:
    return Folder(name)


@cache
def document(name: str) -> str:
    return (ROOT / name).read_text(encoding="utf-8").replace("−", "-")


R, P, D, H = "README.md", "docs/reproductions.md", "docs/results.md", "docs/hf-agreement.md"
M = "results/modded-nanogpt-head/README.md"
Q = "results/quantization/README.md"
L = "results/ladder-ptb-gpt-tiny/README.md"
MM = "results/ladder-matched-m/README.md"
FC = "results/shalev-captioning-decisive/fixed-check/README.md"
PWD = "results/press-wolf-decisive/README.md"
AD = "results/wikitext2-adaptive-decisive/README.md"
DJC = "results/default-job-confirmation/README.md"
CD = "results/shalev-captioning-decisive/README.md"
Expr = Callable[[Folder], Any]


def trainer_route(f: Folder, init: str) -> tuple[float, float, float, float, float]:
    """(tied's and l2norm's valid ppl at step 0, the same at the end, l2norm's change in percent) of the
    Hugging Face Trainer route with ``init`` (trainer-init-INIT/results.json beside the folder ``f``)."""
    import json

    rows = json.loads((f.path.parent / f"trainer-init-{init}" / "results.json").read_text(encoding="utf-8"))["results"]
    r = {x["strategy"]: x for x in rows}
    tied, l2 = r["tied"], r["l2norm"]
    pct = 100 * (l2["valid_ppl"] / tied["valid_ppl"] - 1)
    return tied["valid_ppl_start"], l2["valid_ppl_start"], tied["valid_ppl"], l2["valid_ppl"], pct


def _pooled_job(strategy: str) -> str:
    """The default job's confirmation pooled over its two kernel paths (the path a block), as the README
    writes it: 'better, -8.89% [-10.24, -7.55] (97.5%)'; decided here from the two folders' rows."""
    from embtie.decisions import decide_all
    from embtie.decisions.pooled import blocked_difference

    metric = declared("valid_ppl")
    blocks = {}
    for name in ("native", "avx2"):
        f = folder(f"default-job-confirmation/{name}")
        blocks[name] = paired_values(f.rows, strategy, "tied", metric)
    diffs = {s: blocked_difference({k: paired_values(folder(f"default-job-confirmation/{k}").rows, s, "tied", metric)
                                    for k in blocks}, DEFAULT_MARGINS["valid_ppl"]) for s in ("untied", "tied-loginit")}
    d = decide_all(diffs, higher_is_better=False)[strategy]
    return f"{d.verdict}, {d.mean:+.2f}% [{d.ci[0]:+.2f}, {d.ci[1]:+.2f}] ({100 * d.confidences()[0]:.4g}%)"



FIGURES: list[tuple[str, str, str, Expr]] = [
    *[(DJC, f"| {s} | better, {{:+.2f}}% | {{}}: confirmed | {{}}: confirmed | {{}}, 10 pairs |", "default-job-confirmation/native",
       lambda f, s=s: (folder("default-job/make-run").decision("valid_ppl", s).mean, f.said("valid_ppl", s),
                       folder("default-job-confirmation/avx2").said("valid_ppl", s), _pooled_job(s))) for s in ("untied", "tied-loginit")],
    *[(R, f"{s} better in both (pooled with the kernel path as a block: {{}})" if s == "untied" else "tied-loginit better in both ({})",
       "default-job-confirmation/native", lambda f, s=s: (_pooled_job(s).split(", ", 1)[1],)) for s in ("untied", "tied-loginit")],
    (DJC, "Training took {:.2f} core-hours (native) and {:.2f} (avx2)", "default-job-confirmation/native",
     lambda f: (_core_hours(f), _core_hours(folder("default-job-confirmation/avx2")))),
    # README.md, the claims table
    (R, "; {} paired seeds, AMD EPYC Zen 5, one thread a run): untied {} validation perplexity", "press-wolf-decisive",
     lambda f: (f.decision("valid_ppl", "untied").n, f.said("valid_ppl", "untied"))),
    (R, "decided at the second look ({} paired seeds, AMD EPYC Zen 5): tied-proj {} validation perplexity", "press-wolf-decisive",
     lambda f: (f.decision("valid_ppl", "tied-proj").n, f.said("valid_ppl", "tied-proj"))),
    (R, "Procrustes cosine {:.2f} to untied's output vs {:.2f} to its input ({} seeds of the decisive design", "press-wolf-decisive",
     lambda f: (statistics.mean(f.dynamics("tied", "to_output")), statistics.mean(f.dynamics("tied", "to_input")), len(f.dynamics("tied", "to_output")))),
    (R, "step-0 loss tied {:.2f} vs ln V {:.2f}", "su-convergence", lambda f: (f.mean("tied", "step0_loss"), f.mean("tied", "ln_v"))),
    (R, "{:.2f} over su-ordering's {} scheme-2 seeds", "su-ordering", lambda f: (f.mean("tied", "step0_loss"), len(f.rows_of("tied")))),
    (R, "tied-loginit the least: {}", "su-convergence", lambda f: f.said("valid_ppl", "tied-loginit")),
    (R, "untied: {};", "su-convergence", lambda f: f.said("valid_ppl", "untied")),
    *[(R, f"{name}: {{}}", "su-ordering", lambda f, n=name: f.said("valid_ppl", n)) for name in ("tied-shuffle", "tied-bert", "untied", "tied")],
    *[(P, f"\n{name}: {{}}\n", "su-ordering", lambda f, n=name: f.said("valid_ppl", n)) for name in ("tied", "untied", "tied-bert", "tied-shuffle")],
    (P, "AMD EPYC Zen 5, {} runs, 0.94 core-hours)", "su-ordering", lambda f: len(f.rows)),
    *[(Q, f"| {fmt} | {name} vs tied | {{}} |", f"quantization/{fmt}", lambda f, n=name, m=fmt: f.said(f"valid_ppl_{m}", n)) for fmt in ("int8", "int4") for name in ("untied", "l2norm")],
    (Q, "(untied {:+.2f}%, l2norm {:+.2f}% at full precision)", "quantization/int8", lambda f: (f.decision("valid_ppl", "untied").mean, f.decision("valid_ppl", "l2norm").mean)),
    (Q, "| int4 | {:+.3f}% | {:+.3f}% (undecided) | {:+.3f}% (undecided) |", "quantization/int4", lambda f: tuple(statistics.mean(_quant_costs("int4")[s]) for s in ("tied", "untied", "l2norm"))),
    (Q, "| int8 | {:+.3f}% | {:+.3f}% (equivalent to tied's) | {:+.3f}% (equivalent to tied's) |", "quantization/int8", lambda f: tuple(statistics.mean(_quant_costs("int8")[s]) for s in ("tied", "untied", "l2norm"))),
    (M, "| untied-zero vs untied | {} |", "modded-nanogpt-head/head-recipes", lambda f: f.said("valid_ppl", "untied-zero")),
    (M, "| untied-tablelr vs untied | {} |", "modded-nanogpt-head/head-recipes", lambda f: f.said("valid_ppl", "untied-tablelr")),
    (M, "seed 0 ends at validation loss {:.2f} against untied's {:.2f}", "modded-nanogpt-head/head-recipes", lambda f: (f.seed("untied-zero", 0, "valid_loss"), f.seed("untied", 0, "valid_loss"))),
    (M, "(seed 0: validation loss {:.2f} against untied's {:.2f})", "modded-nanogpt-head/head-recipes", lambda f: (f.seed("untied-tablelr", 0, "valid_loss"), f.seed("untied", 0, "valid_loss"))),
    (M, "gains {:.1f}% of perplexity at 300 steps", "modded-nanogpt-head/head-recipes", lambda f: -f.decision("valid_ppl", "untied-tablelr").mean),
    (R, "tie-untie vs tied: {};", "modded-nanogpt-head/untie-vs-tied", lambda f: f.said("valid_ppl", "tie-untie")),
    (R, "tie-untie vs untied: {} |", "modded-nanogpt-head/untie-vs-untied", lambda f: f.said("valid_ppl", "tie-untie")),
    (R, "zero head {};", "modded-nanogpt-head/head-recipes", lambda f: f.said("valid_ppl", "untied-zero")),
    (R, "betas (0.8, 0.95) {} |", "modded-nanogpt-head/head-recipes", lambda f: f.said("valid_ppl", "untied-tablelr")),
    (R, "int4 tied {:+.3f}%, untied {:+.3f}%, l2norm {:+.3f}%", "quantization/int4", lambda f: tuple(statistics.mean(_quant_costs("int4")[s]) for s in ("tied", "untied", "l2norm"))),
    *[(L, "| {:,} | {:,} | {} | {} |", f"ladder-ptb-gpt-tiny/rungs/size-{rung}", lambda f, r=rung: (_ladder()["body"][r], f.rows[0].steps, f.said("valid_ppl", "untied"), f.said("valid_ppl", "l2norm"))) for rung in ("xs", "s", "m", "l")],
    *[(L, f"{name}'s\nslope {{:.2f}} points per tenfold body [{{:.2f}}, {{:+.2f}}]" if name == "untied" else f"{name}'s {{:.2f}} [{{:.2f}}, {{:+.2f}}]", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f, n=name: _ladder()["slope"][n]) for name in ("untied", "l2norm")],
    (L, "{:,.0f} core-seconds of training steps", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: sum(_ladder_train_s(r) for r in ("xs", "s", "m", "l"))),
    (L, "rung xs {:.0f} s, s {:.0f} s, m {:.0f} s, l {:,.0f} s", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: tuple(_ladder_train_s(r) for r in ("xs", "s", "m", "l"))),
    (L, "reduced χ² {:.2f} on the standard errors", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: _ladder()["scale"]["untied"]),
    (L, "({:.2f} on the rungs' own standard errors)", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: _ladder()["raw_scale"]["untied"]),
    (L, "would take {:.2f}, {:.1f} and {:.0f} H100 GPU-hours", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: tuple(_ladder()["gpu"][r] for r in ("2xl", "4xl", "6xl"))),
    *[(MM, f"| {name} | {layers} | {{:,}} | {{}} |", "ladder-matched-m", lambda f, n=name: (f.rows_of(n)[0].params_learned, f.said("valid_ppl", n))) for name, layers in (("untied", 1), ("l2norm", 14))],
    (MM, "(1,329,984 learned\nparameters against untied's {:,}, {:+.2f}%)", "ladder-matched-m", lambda f: (f.rows_of("untied")[0].params_learned, 100 * (f.rows_of("tied")[0].params_learned / f.rows_of("untied")[0].params_learned - 1))),
    (MM, "(untied ran\nat {:,.0f}-{:,.0f} tokens/s, tied and l2norm at {:,.0f}-{:,.0f})", "ladder-matched-m", lambda f: (min(r.tokens_per_s for r in f.rows_of("untied")), max(r.tokens_per_s for r in f.rows_of("untied")), min(r.tokens_per_s for r in f.rows_of("tied") + f.rows_of("l2norm")), max(r.tokens_per_s for r in f.rows_of("tied") + f.rows_of("l2norm")))),
    (MM, "6.1% worse than the deepened tied one, where at equal shape (the ladder's rung m) untied was {:.2f}% better", "ladder-ptb-gpt-tiny/rungs/size-m", lambda f: -f.decision("valid_ppl", "untied").mean),
    (R, "(rung l: {})", "ladder-ptb-gpt-tiny/rungs/size-l", lambda f: f.said("valid_ppl", "untied")),
    (R, "slope per tenfold body {:.2f} [{:.2f}, {:+.2f}]: no trend shown", "ladder-ptb-gpt-tiny/rungs/size-l", lambda f: _ladder()["slope"]["untied"]),
    (R, "(tied deepened to 14 blocks): untied {} |", "ladder-matched-m", lambda f: f.said("valid_ppl", "untied")),
    (M, "| untied vs tied | {} |", "modded-nanogpt-head/untie-vs-tied", lambda f: f.said("valid_ppl", "untied")),
    (M, "| tie-untie vs tied | {} |", "modded-nanogpt-head/untie-vs-tied", lambda f: f.said("valid_ppl", "tie-untie")),
    (M, "| tie-untie vs untied | {} |", "modded-nanogpt-head/untie-vs-untied", lambda f: f.said("valid_ppl", "tie-untie")),
    *[(P, f"\n{name}: {{}}", "su-convergence", lambda f, n=name: f.said("valid_ppl", n, "tied-loginit")) for name in ("tied-shuffle", "untied", "tied-bert")],
    (R, "l2norm {}; cosine", "liu-decisive/transformer", lambda f: f.said("bleu", "l2norm")),
    (R, "cosine {}: the paper", "liu-decisive/transformer", lambda f: f.said("bleu", "cosine")),
    (R, "l2norm {}; cosine {}. These held", "liu-decisive/transformer",
     lambda f: (f.said("valid_ppl", "l2norm"), f.said("valid_ppl", "cosine"))),
    (R, "the paper's fixed head (the check's pick) {}; the paper", "shalev-captioning-decisive/show-tell", lambda f: f.said("bleu", "fixed-paper")),
    (R, "Show-Attend-Tell: the same design not run (about {:.0f} core-hours to its first look)", "shalev-captioning-decisive", lambda f: 8 * _sat_step_s() * 938 * 10 / 3600),
    (R, "(4 paired seeds, ±5%): fixed {} (fewer words), {:+.2f}% [{:+.2f}, {:+.2f}] ({:.4g}%)", "shalev-captioning-decisive/show-tell",
     lambda f: (f.decision("vu", "fixed-paper").verdict, *_verdict_cells(f.decision("vu", "fixed-paper"))[1:5])),
    (R, "at 1 epoch fixed {} |", "shalev-captioning/show-attend-tell", lambda f: f.said("bleu", "fixed")),
    (R, "Show-Attend-Tell at 1 epoch: fixed {} |", "shalev-captioning/show-attend-tell", lambda f: f.said("vu", "fixed")),
    (R, "is {}, with fewer distinct words: {} |", "shalev-decisive/de-en",
     lambda f: (f.said("bleu", "fixed-lr10"), f.said("vu", "fixed-lr10"))),
    (R, "adaptive against flat tied: {}, with {:.1f}× fewer learned parameters (a loss above {:.2f}% is ruled out)", "wikitext2-adaptive-decisive",
     lambda f: (f.said("valid_ppl", "adaptive"), f.mean("tied", "params_learned") / f.mean("adaptive", "params_learned"), f.decision("valid_ppl", "adaptive").ci[1])),
    (R, "l2norm within clusters: {};", "wikitext2-adaptive-decisive", lambda f: f.said("valid_ppl", "adaptive-l2norm")),
    (R, "flat l2norm: {} |", "wikitext2-adaptive-decisive", lambda f: f.said("valid_ppl", "l2norm")),
    # docs/results.md
    (D, "tied {:.2f}, untied {:.2f}, l2norm {:.2f}, sqnorm {:.2f}, distance {:.2f}, cosine\n{:.2f}, fixed {:.2f}.", "multi30k-h100",
     lambda f: tuple(f.mean(s, "bleu") for s in ("tied", "untied", "l2norm", "sqnorm", "distance", "cosine", "fixed"))),
    (D, "ahead of tied by {:+.2f}, {:+.2f} and {:+.2f} BLEU", "multi30k-h100", lambda f: tuple(f.delta(s, "bleu") for s in ("l2norm", "distance", "cosine"))),
    (D, "sqnorm is level ({:.2f}) and fixed behind ({:.2f})", "multi30k-h100", lambda f: (f.delta("sqnorm", "bleu"), f.delta("fixed", "bleu"))),
    (D, "(p {}-{} for the three normalized ones)", "multi30k-h100",
     lambda f: tuple(f"{x:.2f}" for x in sorted(float(f.cell("Δ BLEU vs tied", s, "p: bootstrap").split(" / ")[0]) for s in ("l2norm", "distance", "cosine"))[::2])),
    (D, "**undecided, {} paired seed**", "multi30k-h100", lambda f: len(f.values("tied", "bleu"))),
    # docs/reproductions.md: Su 2023
    *[(P, f"| {label} | {{}} | {{}} | {{}} / {{}} |", "su-convergence",
       lambda f, n=n: (f.summary(n, "valid_ppl"), f.said("valid_ppl", n) if n != "tied" else "—", f.col("steps to valid loss", n, 1).split()[0], f.col("steps to valid loss", n, 2).split()[0]))
      for n, label in [("tied", "tied"), ("tied-loginit", "tied-loginit (σ = ln V / d)"), ("tied-bert", "tied-bert"), ("tied-shuffle", "tied-shuffle"), ("untied", "untied")]],
    (P, "(141 / 283 steps to tied's 25% / 50% loss, against {}–{} / {}–{} for the other three)", "su-convergence",
     lambda f: tuple(g(int(f.col("steps to valid loss", n, c).split()[0]) for n in ("tied-bert", "tied-shuffle", "untied")) for c in (1, 2) for g in (min, max))),
    (P, "with the highest perplexity of the four ({:.1f})", "su-convergence", lambda f: max(f.mean(n, "valid_ppl") for n in ("tied-loginit", "tied-bert", "tied-shuffle", "untied"))),
    (P, "tied's problem: {:.2f}\nagainst ln V = {:.2f}, {:.2f}–{:.2f} for the countermeasures", "su-convergence",
     lambda f: (f.mean("tied", "step0_loss"), f.mean("tied", "ln_v"), *(g(f.mean(n, "step0_loss") for n in ("tied-loginit", "tied-bert", "tied-shuffle", "untied")) for g in (min, max)))),
    # Press & Wolf
    *[(P, f"| {label} | {{:.1f}} / {{:.1f}} | **{{}}** ± {{}} | {{}} |", "press-wolf",
       lambda f, n=n: (*f.values(n, "valid_ppl"), *f.summary(n, "valid_ppl").split(" ± "), f.said("valid_ppl", n) if n != "tied" else "—"))
      for n, label in [("untied", "untied"), ("tied", "tied"), ("tied-proj", "tied-proj (λ = 0.15)")]],
    (P, "untied is {:+.1f}% above tied (the paper: +1.9%), with a paired t-test p of {:.2f} ({:.2f} after Holm)", "press-wolf",
     lambda f: (f.pct("untied", "valid_ppl"), f.decision("valid_ppl", "untied").p_difference, f.decision("valid_ppl", "untied").p_difference_holm)),
    (P, "ahead of tied in both seeds ({:.1f} and {:.1f}) and would need about {} paired\nseeds", "press-wolf",
     lambda f: (*[a - b for a, b in zip(f.values("tied-proj", "valid_ppl"), f.values("tied", "valid_ppl"))], f.decision("valid_ppl", "tied-proj").seeds_needed)),
    (P, "far smaller than the paper's ({:.1f}% vs -10.2%)", "press-wolf", lambda f: f.pct("tied-proj", "valid_ppl")),
    (P, "(p {} for both)", "press-wolf", lambda f: {f.cell("Δ ppl vs tied", n, "p: bootstrap").split(" / ")[0] for n in ("untied", "tied-proj")}.pop()),
    (P, "(Procrustes mean row cosine {:.3f} ± {:.3f} vs {:.3f} ± {:.3f};\nfrequent third {:.3f} vs {:.3f}; tied-proj {:.3f} vs {:.3f})", "press-wolf",
     lambda f: (statistics.mean(f.dynamics("tied", "to_output")), statistics.stdev(f.dynamics("tied", "to_output")), statistics.mean(f.dynamics("tied", "to_input")), statistics.stdev(f.dynamics("tied", "to_input")),
                statistics.mean(f.dynamics("tied", "to_output_frequent")), statistics.mean(f.dynamics("tied", "to_input_frequent")), statistics.mean(f.dynamics("tied-proj", "to_output")), statistics.mean(f.dynamics("tied-proj", "to_input")))),
    # Shalev et al., captioning
    *[(P, f"| {label} | {{}} | {{}} | {{}} | {{}} |", "shalev-captioning/show-tell",
       lambda f, n=n: (f.summary(n, "bleu", 2), f.said("bleu", n) if n != "tied" else "—", f.summary(n, "vu", 0), f.said("vu", n) if n != "tied" else "—"))
      for n, label in [("untied", 'untied ("non-fixed")'), ("tied", "tied"), ("fixed", "fixed")]],
    (P, "Fixed targets cost {:.2f} BLEU-4\nagainst tied, but the equivalence interval, [{:+.2f}, {:+.2f}] (95%)", "shalev-captioning/show-tell",
     lambda f: (f.decision("bleu", "fixed").mean, *f.decision("bleu", "fixed").tost_ci)),
    (P, "Untied is {:.2f} behind tied", "shalev-captioning/show-tell", lambda f: -f.decision("bleu", "untied").mean),
    (P, "fixed uses no more distinct words than tied\n({:.0f} vs {:.0f}; the paper", "shalev-captioning/show-tell", lambda f: (f.mean("fixed", "vu"), f.mean("tied", "vu"))),
    (P, "(the references use {}\ndistinct words, {}% of their tokens rare)", "shalev-captioning/show-tell", lambda f: re.search(r"themselves: VU (\d+), rare share ([\d.]+)%", f.report).groups()),
    (P, "validation perplexity is also much worse ({:.1f} vs {:.1f})", "shalev-captioning/show-tell", lambda f: (f.mean("fixed", "valid_ppl"), f.mean("tied", "valid_ppl"))),
    *[(P, f"| {label} | {{}} | {{}} | {{}} | {{}} | {{}} |", "shalev-captioning/show-attend-tell",
       lambda f, n=n: (f.summary(n, "bleu", 2), f.said("bleu", n) if n != "tied" else "—", f.summary(n, "vu", 0), f.said("vu", n) if n != "tied" else "—", f"{f.mean(n, 'valid_ppl'):.3g}"))
      for n, label in [("untied", 'untied ("non-fixed")'), ("tied", "tied"), ("fixed", "fixed")]],
    (P, "step-0 loss of {:.0f} (ln V = {:.1f}) and after one epoch is still far behind (valid perplexity {:.0f} vs {:.0f})", "shalev-captioning/show-attend-tell",
     lambda f: (f.mean("fixed", "step0_loss"), f.mean("fixed", "ln_v"), f.mean("fixed", "valid_ppl"), f.mean("tied", "valid_ppl"))),
    (P, "It uses\n{:.0f}% more distinct words on average ({:.0f} vs {:.0f})", "shalev-captioning/show-attend-tell", lambda f: (f.pct("fixed", "vu"), f.mean("fixed", "vu"), f.mean("tied", "vu"))),
    (P, "(rare-word share {:.2f}%)", "shalev-captioning/show-attend-tell", lambda f: 100 * f.mean("fixed", "rare_token_share")),
    (P, "Untied\nagainst tied is undecided in BLEU-4 ({:.2f})", "shalev-captioning/show-attend-tell", lambda f: f.decision("bleu", "untied").mean),
    # Shalev et al., translation, 2 epochs
    *[(P, f"| {d} | {label} | {{}} | {{}} | {{:.2f}} | {{:.0f}} | {{}} |", name,
       lambda f, n=n: (f.summary(n, "bleu", 2), f.said("bleu", n) if n != "tied" else "—", f.mean(n, "valid_ppl"), f.mean(n, "vu"), f.said("vu", n) if n != "tied" else "—"))
      for d, name in [("De→En", "shalev-multi30k/de-en"), ("En→De", "shalev-multi30k/en-de")]
      for n, label in [("untied", 'untied ("non-fixed")'), ("tied", "tied"), ("fixed", "fixed"), ("fixed-lr10", "fixed, scale at 10 × lr")]],
    (P, "the fixed head is {:.2f} (De→En)", "shalev-multi30k/de-en", lambda f: -f.decision("bleu", "fixed").mean),
    (P, "and {:.2f} (En→De) BLEU behind", "shalev-multi30k/en-de", lambda f: -f.decision("bleu", "fixed").mean),
    (P, "the gap shrinks to {:.2f} and", "shalev-multi30k/de-en", lambda f: -f.decision("bleu", "fixed-lr10").mean),
    (P, "and {:.2f}\nBLEU, still worse", "shalev-multi30k/en-de", lambda f: -f.decision("bleu", "fixed-lr10").mean),
    (P, "fewer distinct words ({:.0f}% to", "shalev-multi30k/de-en", lambda f: f.decision("vu", "fixed-lr10").mean),
    (P, "to {:.0f}%), the opposite", "shalev-multi30k/en-de", lambda f: f.decision("vu", "fixed").mean),
    (P, "Untied against tied is undecided De→En\n({:+.2f})", "shalev-multi30k/de-en", lambda f: f.decision("bleu", "untied").mean),
    (P, "and better En→De ({:+.2f})", "shalev-multi30k/en-de", lambda f: f.decision("bleu", "untied").mean),
    (P, "De→En untied {:,.0f}, tied {:,.0f} ({:.1f}%; paper", "shalev-multi30k/de-en",
     lambda f: (f.mean("untied", "params_learned"), f.mean("tied", "params_learned"), f.pct("tied", "params_learned", "untied"))),
    (P, "En→De untied {:,.0f}, tied {:,.0f} ({:.1f}%; paper", "shalev-multi30k/en-de",
     lambda f: (f.mean("untied", "params_learned"), f.mean("tied", "params_learned"), f.pct("tied", "params_learned", "untied"))),
    (P, "Fixed learns V + 1 more than tied here ({:,.0f} / ", "shalev-multi30k/de-en", lambda f: f.delta("fixed", "params_learned")),
    (P, " / {:,.0f}: the output bias and the scale)", "shalev-multi30k/en-de", lambda f: f.delta("fixed", "params_learned")),
    (P, "Spearman ρ (norm vs count) is {:.2f} ± {:.2f} untied and\n{:.2f} ± {:.2f} tied De→En", "shalev-multi30k/de-en",
     lambda f: (f.mean("untied", "rho_output_norm_freq"), f.sd("untied", "rho_output_norm_freq"), f.mean("tied", "rho_output_norm_freq"), f.sd("tied", "rho_output_norm_freq"))),
    (P, "and {:.2f} / {:.2f} En→De", "shalev-multi30k/en-de", lambda f: (f.mean("untied", "rho_output_norm_freq"), f.mean("tied", "rho_output_norm_freq"))),
    (P, "input: SimLex-999 {}, MEN {}, MTurk-771 {}, WS-353 {}.", "shalev-multi30k/de-en",
     lambda f: tuple(re.sub(r" ± [\d.]+", "", f.col("SimLex-999: output", "untied", i)) for i in range(1, 5))),
    (P, "on WS-353 ({}\npairs found)", "shalev-multi30k/de-en", lambda f: f.col("SimLex-999: output", "coverage", 4).split("/")[0]),
    (P, "Tied gives {} / {} / {} (one matrix); fixed rows are at\nchance ({} / {} / {})", "shalev-multi30k/de-en",
     lambda f: tuple(f.col("SimLex-999: output", n, i).split(" ± ")[0] for n in ("tied (", "fixed (") for i in range(1, 4))),
    # Shalev et al., decided
    (P, "| tied | {:.2f} | — |", "shalev-decisive/de-en", lambda f: f.mean("tied", "bleu")),
    (P, "| fixed-lr10 | {:.2f} | **{}** (paired t-test, Holm) | {} | {} |", "shalev-decisive/de-en",
     lambda f: (f.mean("fixed-lr10", "bleu"), f.said("bleu", "fixed-lr10"), f.said("valid_ppl", "fixed-lr10"), f.said("vu", "fixed-lr10"))),
    (P, "still cost {:.2f} BLEU here, more than\nthe {:.2f} after 2 epochs", "shalev-decisive/de-en",
     lambda f: (-f.decision("bleu", "fixed-lr10").mean, -folder("shalev-multi30k/de-en").decision("bleu", "fixed-lr10").mean)),
    (P, "Pairing by seed removed {:.0f}% of the variance of the BLEU\ndifference (correlation with tied {:.2f})", "shalev-decisive/de-en",
     lambda f: (100 * f.pairing("bleu", "fixed-lr10").variance_removed, f.pairing("bleu", "fixed-lr10").correlation)),
    # Liu et al., 2 epochs
    *[(P, f"| {fam} | {n} | {{}} | {{}} | {{}} | {{}} / 3 |", name,
       lambda f, n=n: (f.summary(n, "bleu", 2), f.col("Δ BLEU vs tied", n, 5).split(" ± ")[0], f.said("bleu", n), sum(a > b for a, b in zip(f.values(n, "bleu"), f.values("tied", "bleu")))))
      for fam, name in [("Transformer", "liu-multi30k/transformer"), ("DynamicConv", "liu-multi30k/dynamicconv")]
      for n in ("l2norm", "sqnorm", "distance", "cosine")],
    *[(P, f"| {fam} | tied (Liu's baseline) | {{}} | {{}} | — |", name,
       lambda f: (f.summary("tied", "bleu", 2), f.col("Δ BLEU vs tied", "tied", 5).split(" ± ")[0]))
      for fam, name in [("Transformer", "liu-multi30k/transformer"), ("DynamicConv", "liu-multi30k/dynamicconv")]],
    (P, "every normalization is ahead of tied on the Transformer ({:+.2f} to {:+.2f} BLEU)", "liu-multi30k/transformer",
     lambda f: tuple(g(f.decision("bleu", n).mean for n in ("l2norm", "sqnorm", "distance", "cosine")) for g in (min, max))),
    (P, "l2norm ({:+.2f}) and cosine ({:+.2f}) are ahead, sqnorm is level ({:+.2f}) and distance slightly behind ({:+.2f})", "liu-multi30k/dynamicconv",
     lambda f: tuple(f.decision("bleu", n).mean for n in ("l2norm", "cosine", "sqnorm", "distance"))),
    (P, "(BLEU sd {:.1f}–{:.1f} over 3 seeds)", "liu-multi30k/transformer",
     lambda f: tuple(g(folder(x).sd(n, "bleu") for x in ("liu-multi30k/transformer", "liu-multi30k/dynamicconv") for n in ("tied", "l2norm", "sqnorm", "distance", "cosine")) for g in (min, max))),
    (P, "Perplexity does not separate the strategies either (Transformer {:.2f}–{:.2f}, DynamicConv\n{:.2f}–{:.2f})", "liu-multi30k/dynamicconv",
     lambda f: tuple(g(folder(x).mean(n, "valid_ppl") for n in ("tied", "l2norm", "sqnorm", "distance", "cosine")) for x in ("liu-multi30k/transformer", "liu-multi30k/dynamicconv") for g in (min, max))),
    (P, "A Transformer tied model trained 5 epochs reaches {:.2f} (the mean of {} seeds below)", "liu-decisive/transformer",
     lambda f: (f.mean("tied", "bleu"), len(f.values("tied", "bleu")))),
    # Liu et al., decided
    (P, "| tied | {:.2f} | — | — | — |", "liu-decisive/transformer", lambda f: f.mean("tied", "bleu")),
    *[(P, f"| {n} | {{:.2f}} | **{{}}** (TOST p", "liu-decisive/transformer", lambda f, n=n: (f.mean(n, "bleu"), f.said("bleu", n))) for n in ("l2norm", "cosine")],
    *[(P, f"| {{}} | +0.{tail}", "liu-decisive/transformer", lambda f, n=n: f.said("valid_ppl", n)) for n, tail in (("l2norm", "70 / +0.6"), ("cosine", "62 / +0.4"))],
    (R, "one re-trained pair gives l2norm {:+.2f} BLEU", "liu-decisive/amd-epyc-zen5", lambda f: (f.seed("l2norm", 1, "bleu") - f.seed("tied", 1, "bleu"),)),
    (P, "= {:+.2f} BLEU ({:.2f} vs {:.2f})", "liu-decisive/amd-epyc-zen5", lambda f: (f.seed("l2norm", 1, "bleu") - f.seed("tied", 1, "bleu"), f.seed("tied", 1, "bleu"), f.seed("l2norm", 1, "bleu"))),
    (P, "against {:+.2f} for the same seed on the first machine", "liu-decisive/transformer", lambda f: (f.seed("l2norm", 1, "bleu") - f.seed("tied", 1, "bleu"),)),
    (P, "(TOST p {:.4f}, level {:.4f})", "liu-decisive/transformer", lambda f: (f.decision("bleu", "l2norm").p_equivalence_holm, f.decision("bleu", "l2norm").level)),
    (P, "(TOST p {:.4f}, Holm)", "liu-decisive/transformer", lambda f: f.decision("bleu", "cosine").p_equivalence_holm),
    (P, "whose interval ends at {:+.3f}", "liu-decisive/transformer", lambda f: f.decision("bleu", "l2norm").tost_ci[1]),
    (P, "Pairing by seed removed {:.0f}% (l2norm) and {:.0f}% (cosine) of the variance", "liu-decisive/transformer",
     lambda f: tuple(100 * f.pairing("bleu", n).variance_removed for n in ("l2norm", "cosine"))),
    # adaptive input + softmax
    *[(P, f"| {label} | {{}} | {{}} | {{:,.0f}} | {{:,.0f}}–{{:,.0f}} |", "wikitext2-adaptive",
       lambda f, n=n: (f.summary(n, "valid_ppl"), f.said("valid_ppl", n) if n != "tied" else "—", f.mean(n, "params_learned"), min(f.values(n, "tokens_per_s")), max(f.values(n, "tokens_per_s"))))
      for n, label in [("tied", "flat tied"), ("l2norm", "flat l2norm"), ("adaptive", "adaptive (tied clusters)"), ("adaptive-l2norm", "adaptive, l2norm within clusters")]],
    (P, "ends {:.1f}% below the flat softmax's perplexity on the seed means, with {:.1f}× fewer\nlearned parameters and about {:.0f}× the training throughput", "wikitext2-adaptive",
     lambda f: (-f.pct("adaptive", "valid_ppl"), f.mean("tied", "params_learned") / f.mean("adaptive", "params_learned"), f.mean("adaptive", "tokens_per_s") / f.mean("tied", "tokens_per_s"))),
    (P, "paired interval of\n{:.2f}% to {:+.2f}%", "wikitext2-adaptive", lambda f: f.decision("valid_ppl", "adaptive").ci),
    (P, "(sd {:.1f}) swamps the differences of the seed means ({:.1f}% flat l2norm, {:.1f}% adaptive, {:.1f}% adaptive with\nl2norm)", "wikitext2-adaptive",
     lambda f: (f.sd("tied", "valid_ppl"), *(f.pct(n, "valid_ppl") for n in ("l2norm", "adaptive", "adaptive-l2norm")))),
    # the budgets the sections state: steps per run (every run of the folder)
    *[(P, phrase, name, lambda f: {int(r.steps) for r in f.rows if r.steps is not None}.pop()) for phrase, name in [
        ("preset, {} steps of", "su-convergence"), ("{:,} steps = 12.1M tokens", "press-wolf"), ("({:,} steps of 32 pairs", "shalev-captioning/show-tell"),
        ("per run ({} steps, about 12 min", "shalev-captioning/show-attend-tell"), ("per run ({} steps of 128", "shalev-multi30k/de-en"),
        ("per run ({} steps, 8–9 minutes", "liu-multi30k/transformer"), ("V = 33,278, {} steps of 16 × 64", "wikitext2-adaptive")]],
    # ... and the median training time per run (the reports' Budget lines)
    (P, "0.66 epochs, about {:.0f} minutes per run", "su-convergence", lambda f: f.budget_minutes()),
    (P, "about {:.0f} minutes of training per run (median)", "press-wolf", lambda f: f.budget_minutes()),
    (P, "about {:.0f} min of training per run on one shared core", "shalev-captioning/show-tell", lambda f: f.budget_minutes()),
    (P, "about {:.0f} min of training (median)", "shalev-captioning/show-attend-tell", lambda f: f.budget_minutes()),
    (P, "sentences, {:.1f}–{:.0f} minutes of training per run (medians)", "shalev-multi30k/de-en", lambda f: (f.budget_minutes(), folder("shalev-multi30k/en-de").budget_minutes())),
    (P, "{:.0f}–{:.0f} minutes of training per run (medians)", "liu-multi30k/transformer", lambda f: (folder("liu-multi30k/dynamicconv").budget_minutes(), f.budget_minutes())),
    (P, "Absolute BLEU is {:.1f}–{:.1f} below the\npaper's converged models", "shalev-multi30k/de-en",
     lambda f: (33.08 - f.mean("tied", "bleu"), 31.49 - folder("shalev-multi30k/en-de").mean("tied", "bleu"))),  # the paper's tied BLEU, De→En / En→De
    (P, "{:,} steps = {:.1f}M tokens per run", "press-wolf", lambda f: (int(f.seed("tied", 0, "steps")), int(f.budget("training tokens").replace(",", "")) / 1e6)),
    (P, "16 × 64 tokens, {} epochs, about", "su-convergence", lambda f: f.budget("epochs")),
    (P, "600 steps is {} epochs: early training", "su-convergence", lambda f: f.budget("epochs")),
    (P, "tokens = {} epochs, validation on", "wikitext2-adaptive", lambda f: f.budget("epochs")),
    (P, "d = 512, V = {}, **3 epochs**", "shalev-captioning/show-tell", lambda f: re.search(r"vocabulary V = (\d[\d,]*\d)", f.report)[1]),
    (P, "2 × 128 GPT, V = {}, 300 steps", "wikitext2-adaptive", lambda f: re.search(r"vocabulary V = (\d[\d,]*\d)", f.report)[1]),
    (P, "a step costs ~{:.0f}× Show-Tell's", "shalev-captioning/show-attend-tell",
     lambda f: (folder("shalev-captioning/show-tell").seed("tied", 0, "steps") / folder("shalev-captioning/show-tell").budget_minutes()) / (f.seed("tied", 0, "steps") / f.budget_minutes())),
    (P, "had not improved for 3 epochs, {}\nepochs;", "shalev-decisive/de-en", lambda f: re.search(r"Budget: [^;]*?([\d]+-[\d]+) \(median [\d]+\) epochs", f.report)[1].replace("-", "–")),
    # docs/hf-agreement.md: HF GPT-2 vs embtie's GPT of the same shape, and the Trainer route
    (H, "| HF GPT-2 (`model.name=hf`), 3 seeds | {} | {} | {} |", "hf-agreement/hf-gpt2",
     lambda f: (f.summary("tied", "valid_ppl"), f.summary("l2norm", "valid_ppl"), f.said("valid_ppl", "l2norm"))),
    (H, "| embtie GPT, same shape, 3 seeds | {} | {} | {} |", "hf-agreement/embtie-gpt",
     lambda f: (f.summary("tied", "valid_ppl"), f.summary("l2norm", "valid_ppl"), f.said("valid_ppl", "l2norm"))),
    (H, "| Trainer, E from GPT-2's init (`init=\"model\"`), seed 0 | {:.0f} → {:.1f} | {:.0f} → {:.1f} | {:+.1f}% |", "hf-agreement/hf-gpt2",
     lambda f: tuple(trainer_route(f, "model")[i] for i in (0, 2, 1, 3, 4))),
    (H, "| Trainer, E from the strategy's init (`init=\"strategy\"`), seed 0 | {:.0f} → {:.1f} | {:.0f} → {:.1f} | {:+.1f}% |", "hf-agreement/hf-gpt2",
     lambda f: tuple(trainer_route(f, "strategy")[i] for i in (0, 2, 1, 3, 4))),
    (H, "tied's step-0 loss {:.2f} (HF GPT-2) and {:.2f} (embtie GPT)", "hf-agreement/hf-gpt2",
     lambda f: (f.mean("tied", "step0_loss"), folder("hf-agreement/embtie-gpt").mean("tied", "step0_loss"))),
    # the captioning decision's fixed-head check (results/shalev-captioning-decisive/fixed-check)
    *[(FC, f"| `{name}` | {{:.2f}} | {{:.1f}} | {{:.2f}} | {{:.0f}} |", "shalev-captioning-decisive/fixed-check",
       lambda f, n=name: tuple(f.seed(n, 0, c) for c in ("bleu", "valid_ppl", "step0_loss", "vu"))) for name in ("fixed-paper", "fixed-lr10")],
    (FC, "(+{:.2f} BLEU-4;", "shalev-captioning-decisive/fixed-check", lambda f: f.seed("fixed-paper", 0, "bleu") - f.seed("fixed-lr10", 0, "bleu")),
    (FC, "puts fixed-lr10 at {}", "shalev-captioning-decisive/fixed-check", lambda f: f.cell("BLEU-4: mean", "fixed-lr10", "Δ BLEU-4")),
    (FC, "(|h| ≤ √512 ≈ {:.1f})", "shalev-captioning-decisive/fixed-check", lambda f: math.sqrt(512)),
    (FC, "(16.84 against ln V = {:.2f})", "shalev-captioning-decisive/fixed-check", lambda f: f.seed("fixed-paper", 0, "ln_v")),
    (FC, "(training loss at step 100: {:.2f}, fixed-lr10's {:.2f};", "shalev-captioning-decisive/fixed-check",
     lambda f: tuple(_train_loss(f, n, 0, 100) for n in ("fixed-paper", "fixed-lr10"))),
    (FC, "about {:.0f} s of training per run", "shalev-captioning-decisive/fixed-check", lambda f: f.budget_minutes() * 60),
    # Press & Wolf's decision: its design's cost (results/press-wolf-decisive)
    (P, "run was planned at about {:.2f} core-hours on a busy Zen 5 core (the\nfirst look, 12 runs, about {:.0f} core-hours); the {} runs of the first look took {:.2f}\ncore-hours, the {} of the second {:.2f}", "press-wolf-decisive",
     lambda f: (_pw_run_hours(folder("press-wolf")), 12 * _pw_run_hours(folder("press-wolf")), *_pw_progress(range(4))[:2],
                *_pw_progress(range(4, 6))[:2])),
    (P, "\nuntied: {}, final at the first look, {} paired seeds", "press-wolf-decisive",
     lambda f: (f.said("valid_ppl", "untied"), f.decision("valid_ppl", "untied").n)),
    (P, "\ntied-proj: {}, final at the second look, {} paired seeds", "press-wolf-decisive",
     lambda f: (f.said("valid_ppl", "tied-proj"), f.decision("valid_ppl", "tied-proj").n)),
    (P, "At the first look tied-proj was undecided,\n{}.", "press-wolf-decisive", lambda f: _interval(_pw_first_look(f)["tied-proj"])),
    (PWD, "vocab.json, the PTB vocabulary every run rebuilds from the training text); {} runs, {:.2f} core-hours of training in all ({:,.0f}–{:,.0f} s a\nrun", "press-wolf-decisive",
     lambda f: _pw_progress(range(6))),
    *[(PWD, f"| {arm} | {look} look, {{}} paired seeds | {{:.2f}} ± {{:.2f}} | {{:.2f}} ± {{:.2f}} | {{:+.2f}}% [{{:+.2f}}, {{:+.2f}}] ({{:.4g}}%) | **{{}}** (paired t-test, Holm, p {{:.3f}})", "press-wolf-decisive",
       lambda f, a=arm: _pw_row(f, a)) for arm, look in (("untied", "first"), ("tied-proj", "second"))],
    *[(PWD, "| " + str(seed) + " | {:.2f} | {} | {:.2f} |", "press-wolf-decisive",
       lambda f, k=seed: (f.seed("tied", k, "valid_ppl"), f"{f.seed('untied', k, 'valid_ppl'):.2f}" if k < 4 else "-",
                          f.seed("tied-proj", k, "valid_ppl"))) for seed in range(6)],
    (PWD, "costs {:.2f}% validation perplexity", "press-wolf-decisive", lambda f: f.decision("valid_ppl", "untied").mean),
    (PWD, "decided at the second look: {:.2f}% at {} paired seeds, ahead of tied in every\nseed ({:.1f}% to {:.1f}%)", "press-wolf-decisive",
     lambda f: (f.decision("valid_ppl", "tied-proj").mean, f.decision("valid_ppl", "tied-proj").n, max(_pw_seed_pcts(f)), min(_pw_seed_pcts(f)))),
    (PWD, "At the first look it was undecided ({}, p {:.3f} against the\nlook's 0.025; about {} paired seeds would have decided it)", "press-wolf-decisive",
     lambda f: (_interval(_pw_first_look(f)["tied-proj"]), _pw_first_look(f)["tied-proj"].p_difference_holm, _pw_first_look(f)["tied-proj"].seeds_needed)),
    (PWD, "whose far end is\n{:.2f}%", "press-wolf-decisive", lambda f: f.decision("valid_ppl", "tied-proj").ci[0]),
    (PWD, "agrees with Press & Wolf in all {} seeds that have an untied run", "press-wolf-decisive", lambda f: len(f.dynamics("tied", "to_output"))),
    (PWD, "(Procrustes mean\nrow cosine {:.3f} vs {:.3f}", "press-wolf-decisive",
     lambda f: (statistics.mean(f.dynamics("tied", "to_output")), statistics.mean(f.dynamics("tied", "to_input")))),
    (PWD, "**Cost of the second look**: {} runs (tied and tied-proj, seeds 4 and 5), {:.2f} core-hours of training ({:,.0f}–{:,.0f}\ns a run; planned at about {:.1f} from the first look's mean)", "press-wolf-decisive",
     lambda f: (*_pw_progress(range(4, 6)), 4 * _pw_progress(range(4))[1] / _pw_progress(range(4))[0])),
    (PWD, "A run is {} optimizer steps of {:.0f} tokens", "press-wolf", lambda f: (f.budget("optimizer steps"), _pw_tokens_per_step())),
    (PWD, "trained {:,.0f} tokens/s, so a run is about {:.2f}\ncore-hours", "press-wolf", lambda f: (_pw_timing()["tokens_per_s"], _pw_run_hours(f))),
    (PWD, "(4 seeds × 3 arms = 12 runs) costs\nabout {:.0f} core-hours, the second (6 more runs) about {:.0f} more", "press-wolf",
     lambda f: (12 * _pw_run_hours(f), 6 * _pw_run_hours(f))),
    # the adaptive row decided afresh (results/wikitext2-adaptive-decisive)
    *[(P, f"\n{name}: {{}}\n", "wikitext2-adaptive-decisive", lambda f, n=name: f.said("valid_ppl", n)) for name in ("adaptive", "adaptive-l2norm")],
    (P, "\nl2norm: {}\nSo \"keeps perplexity\"", "wikitext2-adaptive-decisive", lambda f: f.said("valid_ppl", "l2norm")),
    (P, "margin ±1%; AMD EPYC Zen 5, {} runs)", "wikitext2-adaptive-decisive", lambda f: len(f.rows)),
    (P, "narrowed from {:.2f}%..{:+.2f}% to {:.2f}%..{:+.2f}%: a cost above {:.1f}% is ruled out", "wikitext2-adaptive-decisive",
     lambda f: (*folder("wikitext2-adaptive").decision("valid_ppl", "adaptive").ci, *f.decision("valid_ppl", "adaptive").ci, f.decision("valid_ppl", "adaptive").ci[1])),
    (AD, "left a paired interval of {:.2f}% to {:+.2f}%", "wikitext2-adaptive", lambda f: f.decision("valid_ppl", "adaptive").ci),
    (AD, "a loss of more than {:.1f}% is ruled out (at {:.4g}%)", "wikitext2-adaptive-decisive",
     lambda f: (f.decision("valid_ppl", "adaptive").ci[1], 100 * f.decision("valid_ppl", "adaptive").confidences()[0])),
    (AD, "35 runs, {:.2f}\ncore-hours of training steps", "wikitext2-adaptive-decisive", lambda f: _core_hours(f)),
    *[(AD, f"| {label} | {{}} | {{:+.2f}}% [{{:+.2f}}, {{:+.2f}}] ({{:.4g}}%) | {{}}", "wikitext2-adaptive-decisive",
       lambda f, n=name: _verdict_cells(f.decision("valid_ppl", n))) for label, name in (("l2norm (flat)", "l2norm"), ("adaptive", "adaptive"), ("adaptive-l2norm", "adaptive-l2norm"))],
    *[(AD, "(99.5%) | undecided; about {} paired seeds would decide it |", "wikitext2-adaptive-decisive",
       lambda f, n=name: f.decision("valid_ppl", n).seeds_needed) for name in ("adaptive", "adaptive-l2norm")],
    (AD, "from {:.2f}%..{:+.2f}% to an\ninterval of {:.2f}% to {:+.2f}%", "wikitext2-adaptive-decisive",
     lambda f: (*folder("wikitext2-adaptive").decision("valid_ppl", "adaptive").ci, *f.decision("valid_ppl", "adaptive").ci)),
    (AD, "with {:.1f}× fewer learned\nparameters", "wikitext2-adaptive-decisive", lambda f: f.seed("tied", 0, "params_learned") / f.seed("adaptive", 0, "params_learned")),
    (AD, "(pairing already\nremoves {:.0f}% of the variance", "wikitext2-adaptive-decisive", lambda f: 100 * f.pairing("valid_ppl", "adaptive").variance_removed),
    (AD, "lands where adaptive does ({:.2f}%)", "wikitext2-adaptive-decisive", lambda f: f.decision("valid_ppl", "adaptive-l2norm").mean),
    (AD, "its gain on the flat softmax ({:.2f}%,\ndecided better at {} seeds)", "wikitext2-adaptive-decisive",
     lambda f: (f.decision("valid_ppl", "l2norm").mean, f.decision("valid_ppl", "l2norm").n)),
    (AD, "300 steps is {} epochs", "wikitext2-adaptive-decisive", lambda f: f.budget("epochs")),
    # the captioning decision (results/shalev-captioning-decisive/README.md)
    (P, "scored\n{:.2f} against {:.2f} for the translation recommendation", "shalev-captioning-decisive/fixed-check",
     lambda f: (f.seed("fixed-paper", 0, "bleu"), f.seed("fixed-lr10", 0, "bleu"))),
    (P, "8 runs of {} epochs, {:.2f} core-hours", "shalev-captioning-decisive/show-tell", lambda f: (_epoch_range(f)[0] + "–" + _epoch_range(f)[1], _run_hours(f)[2])),
    (P, "\nBLEU-4: {} (the paper", "shalev-captioning-decisive/show-tell", lambda f: f.said("bleu", "fixed-paper")),
    (P, "\nVU: {} (the paper", "shalev-captioning-decisive/show-tell", lambda f: f.said("vu", "fixed-paper")),
    (P, "(about {:.0f}\ncore-hours to its first look", "shalev-captioning-decisive", lambda f: 8 * _sat_step_s() * 938 * 10 / 3600),
    (CD, "8 runs, {} epochs each (median {}), {:.2f} core-hours in all", "shalev-captioning-decisive/show-tell",
     lambda f: (_epoch_range(f)[0] + "–" + _epoch_range(f)[1], _epoch_range(f)[2], _run_hours(f)[2])),
    (CD, "| BLEU-4, beam 10 (primary) | {:.2f} ± {:.2f} | {:.2f} ± {:.2f} | {:+.2f} [{:+.2f}, {:+.2f}] | **{}** (±0.5; paired t-test, Holm, p {:.3f}) |", "shalev-captioning-decisive/show-tell",
     lambda f: (f.mean("tied", "bleu"), f.sd("tied", "bleu"), f.mean("fixed-paper", "bleu"), f.sd("fixed-paper", "bleu"), *_verdict_cells(f.decision("bleu", "fixed-paper"))[1:4], f.decision("bleu", "fixed-paper").verdict, f.decision("bleu", "fixed-paper").p_difference_holm)),
    (CD, "| distinct words of the captions (VU) | {:.0f} ± {:.0f} | {:.0f} ± {:.0f} | {:+.2f}% [{:+.2f}, {:+.2f}] | **{}**: fewer words (±5%; p {:.3f}) |", "shalev-captioning-decisive/show-tell",
     lambda f: (f.mean("tied", "vu"), f.sd("tied", "vu"), f.mean("fixed-paper", "vu"), f.sd("fixed-paper", "vu"), *_verdict_cells(f.decision("vu", "fixed-paper"))[1:4], f.decision("vu", "fixed-paper").verdict, f.decision("vu", "fixed-paper").p_difference_holm)),
    (CD, "| validation perplexity | {:.1f} ± {:.1f} | {:.1f} ± {:.1f} | {:+.2f}% [{:+.2f}, {:+.2f}] | **{}** (±1%; p < 0.001) |", "shalev-captioning-decisive/show-tell",
     lambda f: (f.mean("tied", "valid_ppl"), f.sd("tied", "valid_ppl"), f.mean("fixed-paper", "valid_ppl"), f.sd("fixed-paper", "valid_ppl"), *_verdict_cells(f.decision("valid_ppl", "fixed-paper"))[1:4], f.decision("valid_ppl", "fixed-paper").verdict)),
    *[(CD, "| " + str(seed) + " | {:.2f} / {:.2f} ({}) / {} / {} | {:.2f} / {:.2f} ({}) / {} / {} | {:+.2f} |", "shalev-captioning-decisive/show-tell",
       lambda f, k=seed: (*_caption_seed(f, "tied", k), *_caption_seed(f, "fixed-paper", k), f.seed("fixed-paper", k, "bleu") - f.seed("tied", k, "bleu"))) for seed in range(4)],
    (CD, "correlates with tied's at {:.2f}; the sd of\nthe paired differences is {:.2f}% of tied's BLEU-4 against {:.2f}% for independent seeds, so pairing removes\n{:.0f}% of the variance", "shalev-captioning-decisive/show-tell",
     lambda f: (f.pairing("bleu", "fixed-paper").correlation, f.pairing("bleu", "fixed-paper").sd_paired, f.pairing("bleu", "fixed-paper").sd_unpaired, 100 * f.pairing("bleu", "fixed-paper").variance_removed)),
    (CD, "**costs {:.2f} BLEU-4** on Show-Tell", "shalev-captioning-decisive/show-tell", lambda f: -f.decision("bleu", "fixed-paper").mean),
    (CD, "captions use {:.0f}% fewer distinct words", "shalev-captioning-decisive/show-tell", lambda f: -f.decision("vu", "fixed-paper").mean),
    (CD, "(rare-word\nshare {} against tied's {})", "shalev-captioning-decisive/show-tell", lambda f: (f.cell("BLEU-4: mean", "fixed-paper", "rare-word"), f.cell("BLEU-4: mean", "tied", "rare-word"))),
    (CD, "tied gained {:.2f} BLEU-4 ({:.2f} → {:.2f}) and the fixed head {:.2f}\n({:.2f} → {:.2f})", "shalev-captioning-decisive/show-tell",
     lambda f: (f.mean("tied", "bleu") - _old_st().mean("tied", "bleu"), _old_st().mean("tied", "bleu"), f.mean("tied", "bleu"),
                f.mean("fixed-paper", "bleu") - _old_st().mean("fixed", "bleu"), _old_st().mean("fixed", "bleu"), f.mean("fixed-paper", "bleu"))),
    (CD, "The three-epoch reading ({:.2f}, undecided;", "shalev-captioning/show-tell", lambda f: f.decision("bleu", "fixed").mean),
    (CD, "the 8 runs took {:.2f} core-hours ({:,.0f}–{:,.0f} s each", "shalev-captioning-decisive/show-tell", lambda f: (_run_hours(f)[2], _run_hours(f)[0], _run_hours(f)[1])),
    (CD, "took {:.2f} s a step, {:.1f} minutes an epoch of 938 steps; at Show-Tell's median of\n10 epochs a run is about {:.1f} core-hours and the first look (8 runs) about {:.0f} core-hours", "shalev-captioning-decisive/show-tell",
     lambda f: (_sat_step_s(), _sat_step_s() * 938 / 60, _sat_step_s() * 938 * 10 / 3600, 8 * _sat_step_s() * 938 * 10 / 3600)),
]  # fmt: skip


def _ladder_train_s(rung: str) -> float:
    """Core-seconds of training steps of a rung: steps x 1,024 tokens per step / tokens per second, summed over
    its runs (results.json rows)."""
    return 3600 * _core_hours(folder(f"ladder-ptb-gpt-tiny/rungs/size-{rung}"))


@cache
def _ladder() -> dict[str, dict[str, Any]]:
    """results/ladder-ptb-gpt-tiny/ladder.json's rungs' bodies, GPU-hours, and each trend refitted from its
    per-rung effects with embtie.ladder.trend.fit (slope, its interval, the reduced chi^2 scale)."""
    import json

    from embtie.ladder.trend import fit

    data = json.loads((ROOT / "results" / "ladder-ptb-gpt-tiny" / "ladder.json").read_text(encoding="utf-8"))
    out: dict[str, dict[str, Any]] = {"body": {r["value"]: r["body"] for r in data["rungs"]}, "gpu": data["gpu_hours"],
                                      "slope": {}, "scale": {}, "raw_scale": {}}  # fmt: skip
    for name in ("untied", "l2norm"):
        e = [x for x in data["effects"] if x["strategy"] == name]
        t = fit([x["body"] for x in e], [x["mean"] for x in e], [x["se"] for x in e], [x["n"] for x in e])
        out["slope"][name] = (t.slope, *t.slope_interval())
        out["scale"][name] = t.scale
        out["raw_scale"][name] = fit([x["body"] for x in e], [x["mean"] for x in e], [x["se"] for x in e]).scale
    return out


def _pw_timing() -> dict[str, Any]:
    """results/press-wolf-decisive/timing/summary.json: the 300-step timing of ptb-lstm-small."""
    import json

    return dict(json.loads((ROOT / "results" / "press-wolf-decisive" / "timing" / "summary.json").read_text(encoding="utf-8")))


def _pw_tokens_per_step() -> float:
    t = _pw_timing()
    return float(t["tokens_seen"] / t["steps"])


def _pw_run_hours(f: Folder) -> float:
    """Core-hours of one 13-epoch run of press-wolf's budget at the timing's tokens/s."""
    return float(f.budget("optimizer steps").replace(",", "")) * _pw_tokens_per_step() / _pw_timing()["tokens_per_s"] / 3600


def _pw_finished() -> dict[tuple[str, int], dict[str, Any]]:
    """(strategy, seed) -> summary.json of each finished run of results/press-wolf-decisive (committed without
    checkpoints while the decision trains)."""
    import json

    runs = ROOT / "results" / "press-wolf-decisive" / "runs"
    out = {}
    for path in sorted(runs.glob("*/seed*/summary.json")):
        summary = json.loads(path.read_text(encoding="utf-8"))
        if summary.get("finished"):
            out[(path.parent.parent.name, int(path.parent.name.removeprefix("seed")))] = summary
    return out


def _pw_progress(seeds: range) -> tuple[int, float, float, float]:
    """(finished runs of ``seeds``, their core-hours of training, fastest and slowest run in seconds)."""
    times = [s["train_time_s"] for (_, seed), s in _pw_finished().items() if seed in seeds]
    return len(times), sum(times) / 3600, min(times), max(times)


def _pw_first_look(f: Folder) -> dict[str, Decision]:
    """The design's first look replayed from seeds 0-3 (looks at 4 and 6, each at 0.025, Holm, ±1%)."""
    design = SequentialDesign(first=4, step=2, max_seeds=6, rule=rule_of(f.saved))
    values = {a: [f.seed(a, k, "valid_ppl") for k in range(4)] for a in ("untied", "tied-proj")}
    tied = [f.seed("tied", k, "valid_ppl") for k in range(4)]
    return replay(design, values, tied, DEFAULT_MARGINS["valid_ppl"], higher_is_better=False)


def _pw_row(f: Folder, arm: str) -> tuple[Any, ...]:
    """A row of the folder README's verdict table: paired seeds, tied's and ``arm``'s mean ± sd over those
    seeds, the decision's cells and its Holm p."""
    d = f.decision("valid_ppl", arm)
    tied = [f.seed("tied", k, "valid_ppl") for k in range(d.n)]
    own = [f.seed(arm, k, "valid_ppl") for k in range(d.n)]
    return (d.n, statistics.mean(tied), statistics.stdev(tied), statistics.mean(own), statistics.stdev(own),
            *_verdict_cells(d)[1:], d.p_difference_holm)  # fmt: skip


def _pw_seed_pcts(f: Folder) -> list[float]:
    """tied-proj minus tied per seed, percent of tied's validation perplexity."""
    return [100 * (f.seed("tied-proj", k, "valid_ppl") / f.seed("tied", k, "valid_ppl") - 1) for k in range(6)]


def _core_hours(f: Folder) -> float:
    """Core-hours of training steps of a language-model folder: steps x 1,024 tokens / tokens per second, summed."""
    return sum(r.steps * 1024 / r.tokens_per_s for r in f.rows) / 3600


def _verdict_cells(d: Decision) -> tuple[int, float, float, float, float, str]:
    """(paired seeds, mean, CI low, CI high, its confidence in percent, verdict) of a saved decision."""
    return d.n, d.mean, d.ci[0], d.ci[1], 100 * d.confidences()[0], d.verdict


def _run_hours(f: Folder) -> tuple[float, float, float]:
    """(shortest, longest run in seconds, all runs in hours) of a folder's runs/*/seed*/summary.json elapsed_s."""
    import json

    t = [json.loads(p.read_text(encoding="utf-8"))["elapsed_s"] for p in (f.path / "runs").glob("*/seed*/summary.json")]
    return min(t), max(t), sum(t) / 3600


def _caption_seed(f: Folder, strategy: str, seed: int) -> tuple[float, float, int, int, int]:
    """(beam BLEU-4, best greedy validation BLEU-4, its epoch, epochs trained, VU) of one captioning run."""
    import json

    d = json.loads((f.path / "runs" / strategy / f"seed{seed}" / "summary.json").read_text(encoding="utf-8"))
    per_epoch = d["steps"] / d["epochs"]
    return (f.seed(strategy, seed, "bleu"), d["best_metric"], round(d["best_metric_step"] / per_epoch), round(d["epochs"]),
            round(f.seed(strategy, seed, "vu")))  # fmt: skip


def _epoch_range(f: Folder) -> tuple[str, str, str]:
    """(fewest, most, median) epochs of the report's Budget line of early-stopped runs."""
    m = re.search(r"(\d+)-(\d+) \(median (\d+)\) epochs", f.report)
    assert m is not None
    return m[1], m[2], m[3]


def _old_st() -> Folder:
    return folder("shalev-captioning/show-tell")


def _sat_step_s() -> float:
    """Seconds a step of the Show-Attend-Tell timing (timing-sat/metrics.jsonl at its step 150)."""
    return float(_logged(ROOT / "results" / "shalev-captioning-decisive" / "timing-sat" / "metrics.jsonl", 150)["elapsed"] / 150)


def _logged(path: Path, step: int) -> dict[str, Any]:
    """The training record a run's metrics.jsonl logged at ``step``."""
    import json

    lines = path.read_text(encoding="utf-8").splitlines()
    return dict(next(r for r in map(json.loads, lines) if r.get("split") == "train" and r.get("step") == step))


def _train_loss(f: Folder, strategy: str, seed: int, step: int) -> float:
    """The training loss a run logged at ``step`` (runs/STRATEGY/seedSEED/metrics.jsonl of folder ``f``)."""
    return float(_logged(f.path / "runs" / strategy / f"seed{seed}" / "metrics.jsonl", step)["loss"])


def _quant_costs(fmt: str) -> dict[str, list[float]]:
    """bench/quantization_cost.py's per-seed costs (its own reading of the two results.json files)."""
    return quantization_cost.costs(fmt)


def _id(row: tuple[str, str, str, Expr]) -> str:
    return f"{row[0]}:{row[2]}:{row[1][:40]}"


def test_each_folder_ran_one_budget():
    """The budget rows above read one step count per folder: every run of it trained the same steps."""
    for name in {"su-convergence", "press-wolf", "shalev-captioning/show-tell", "shalev-captioning/show-attend-tell",
                 "shalev-multi30k/de-en", "shalev-multi30k/en-de", "liu-multi30k/transformer", "liu-multi30k/dynamicconv",
                 "wikitext2-adaptive"}:  # fmt: skip
        assert len({r.steps for r in folder(name).rows}) == 1, name


@pytest.mark.parametrize("doc, phrase, name, expression", FIGURES, ids=[_id(r) for r in FIGURES])
def test_quoted_figure_matches_its_results_folder(doc: str, phrase: str, name: str, expression: Expr):
    values = expression(folder(name))
    values = values if isinstance(values, tuple) else (values,)
    assert all(not isinstance(v, float) or math.isfinite(v) for v in values)
    want = phrase.format(*values)
    assert want in document(doc), f"{doc} should say {want!r} (from results/{name})"


RESULTS_LINK = re.compile(r"\((?:\.\./)?results/([\w./-]+)\)")


def _folder_of(link: str) -> str:
    """The results folder a link points into (a file's folder, or the folder itself)."""
    parts = link.rstrip("/").split("/")
    return "/".join(parts[:-1] if "." in parts[-1] else parts)


@pytest.mark.parametrize("doc", [R, P, D, H])
def test_every_results_folder_a_document_cites_has_figures_checked(doc: str):
    """A results folder a document links must have at least one of its figures in the table above (a
    folder cited for nothing but a link, e.g. a README, may be listed in ``LINK_ONLY``)."""
    cited = {_folder_of(m[1]) for m in RESULTS_LINK.finditer(document(doc))}
    checked = {name for d, _, name, _ in FIGURES if d == doc}
    missing = {c for c in cited if not any(c == n or n.startswith(c + "/") for n in checked)}
    assert not missing - LINK_ONLY.get(doc, set()), f"{doc} quotes results folders no figure row checks: {missing}"


LINK_ONLY: dict[str, set[str]] = {
    R: {"default-job", "shalev-multi30k/de-en", "wikitext2-adaptive", "modded-untie-confirmation",
        "su-ordering-confirmation", "quantization-confirmation", "su-alike", "ladder-matched-m-confirmation"},  # default job: its section has its own rows; wikitext2-adaptive: the superseded grid, linked beside its decision; the confirmations: cited for their status words, their figures checked by tests/docs/test_confirmation_figures.py
    D: {"press-wolf"},
}
"""document -> results folders it links without quoting a figure of theirs."""



def test_su_ordering_page_is_what_its_script_writes():
    """results/su-convergence/ordering.md is its script's output from results.json, byte for byte."""
    path = ROOT / "results" / "su-convergence" / "ordering.md"
    assert path.read_text(encoding="utf-8") == su_ordering.ordering_markdown()


def test_quantization_pages_are_recomputed_from_their_files():
    """results/quantization: cost.md is its script's output byte for byte, and the per-role figures the README
    quotes are the Δ % column of each seed-0 table (int4, output vs input)."""
    folder = ROOT / "results" / "quantization"
    assert (folder / "cost.md").read_text(encoding="utf-8") == quantization_cost.cost_markdown()
    readme = (folder / "README.md").read_text(encoding="utf-8").replace("\n", " ")
    for name in ("tied", "untied", "l2norm"):
        cells = {(c[1], c[2]): c[5] for line in (folder / f"seed0-{name}.md").read_text(encoding="utf-8").splitlines()
                 if line.startswith("| int") and len(c := [x.strip() for x in line.split("|")]) > 6}  # fmt: skip
        assert f"{name} +{float(cells['int4', 'output']):.2f}% vs +{float(cells['int4', 'input']):.2f}%" in readme
