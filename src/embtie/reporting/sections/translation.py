"""Translation runs: BLEU with significance against the baseline, and vocabulary usage (Shalev et al.)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embtie import stats
from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table
from embtie.reporting.sections.context import Block, ReportContext, ci, delta_cells


def _per_run(ctx: ReportContext, n: str, get: Callable[[dict], float | None]) -> list[float]:
    """``get(translation diagnostics)`` of each run of strategy ``n``, runs without the value left out."""
    vals = (get(p["diag"].get("translation") or {}) for p in ctx.results["per_run"] if p["strategy"] == n)
    return [v for v in vals if v is not None]


def _bleu_row(ctx: ReportContext, n: str) -> list[str]:
    s = ctx.results["summary"][n]
    base = n == ctx.baseline
    mine = [x for x in ctx.rows if x["strategy"] == n]
    share = [x["rare_token_share"] for x in mine if x["rare_token_share"] is not None]
    unk = _per_run(ctx, n, lambda mt: mt.get("unk_share"))
    tok = _per_run(ctx, n, lambda mt: (mt.get("scores") or {}).get("bleu_tok"))
    return [
        n,
        ci(s["bleu"], 2),
        *delta_cells(ctx.results["bleu_tests"].get(n), base, 2),
        ci(stats.seed_summary(tok), 2) if tok else "-",
        ci(s["vu"], 0),
        *delta_cells((ctx.results.get("vu_tests") or {}).get(n), base, 0, {"better": "more", "worse": "fewer"}),
        f"{100 * float(np.mean(share)):.2f}%" if share else "-",
        f"{100 * float(np.mean(unk)):.2f}%" if unk else "-",
    ]


def _bleu_text(ctx: ReportContext) -> str:
    """How BLEU was computed: on detokenized cased text (subword runs) or on the tokenized lowercased words
    (word-level runs, the papers' multi-bleu.perl setting)."""
    forms = {
        (p["diag"].get("translation") or {}).get("scores", {}).get("bleu_text", "detokenized")
        for p in ctx.results["per_run"]
    }
    if forms == {"tokenized"}:
        return "sacreBLEU (13a) on the validation split's tokenized, lowercased text (word-level vocabularies)"
    return "sacreBLEU on the validation split (detokenized, cased)"


def _reference_usage_text(ctx: ReportContext) -> str:
    """The vocabulary usage of the references themselves, for the table's caption ('' if unknown)."""
    ref_vu = next(
        (
            p["diag"]["translation"]["reference_vocab_usage"]
            for p in ctx.results["per_run"]
            if p["diag"].get("translation")
        ),
        None,
    )
    return (
        f" The references themselves: VU {ref_vu['vu']}, rare share {100 * ref_vu['rare_token_share']:.2f}%."
        if ref_vu
        else ""
    )


def bleu_and_vocab_usage(ctx: ReportContext) -> list[Block]:
    """BLEU per strategy over seeds, Δ to the baseline, distinct and rare words; nothing for LM runs."""
    if not any(p["diag"].get("translation") for p in ctx.results["per_run"]):
        return []
    table = Table(
        [
            "strategy",
            "BLEU: mean ± std [95% CI]",
            "Δ BLEU vs tied [95% CI]",
            "p: bootstrap / seeds",
            "verdict",
            "tok-BLEU: mean ± std [95% CI]",
            "VU (distinct words)",
            "Δ VU vs tied [95% CI]",
            "p: bootstrap / seeds",
            "verdict",
            "rare-word share",
            "`<unk>` share",
        ],
        [_bleu_row(ctx, n) for n in ctx.names],
        _bleu_text(ctx) + ". Δ and p: paired bootstrap over sentences "
        "(sacrebleu's resampling and test statistic; with several seeds the same resampled sentences score "
        "every seed and the seed means are compared); p (seeds): Welch's t-test over per-seed BLEU; "
        "the verdict needs both below 0.05. tok-BLEU: multi-bleu.perl style, on Moses-tokenized hypotheses "
        "and references (how Liu et al. scored; see docs/liu-protocol.md). VU: distinct words (13a-tokenized, "
        "lower-cased) in the hypotheses, `<unk>` left out (Δ VU: bootstrap over sentences, bias-corrected, "
        "and the seed test); rare: words seen at most 10 times in the training targets; `<unk>` share: of the "
        "output words." + _reference_usage_text(ctx),
    )
    vals = {n: [x["bleu"] for x in ctx.rows if x["strategy"] == n and x["bleu"] is not None] for n in ctx.names}
    figure = Figure(
        plots.metric_by_strategy(vals, ctx.out_dir / "bleu.png", "BLEU"),
        "Validation BLEU per strategy: seed mean with 95% interval, seeds as dots.",
        ctx.cmd,
    )
    return [Heading("Translation: BLEU and vocabulary usage (Shalev et al., Tables 1-2)"), table, figure]
