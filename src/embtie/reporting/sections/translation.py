"""Translation runs: BLEU with significance against the baseline, and vocabulary usage (Shalev et al.)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from embtie.analysis.records import TranslationQuality
from embtie.comparison.records import SeedSummary
from embtie.reporting import plots
from embtie.reporting.document import Figure, Heading, Table
from embtie.reporting.sections.context import MORE_FEWER, Block, ReportContext, ci, delta_cells, seed_values


def _translations(ctx: ReportContext, n: str | None = None) -> list[TranslationQuality]:
    """The translation diagnostics of the runs (of strategy ``n``), runs without them left out."""
    runs = ctx.comparison.per_run if n is None else ctx.comparison.runs_of(n)
    return [mt for p in runs if (mt := p.diag.translation) is not None]


def _per_run(ctx: ReportContext, n: str, get: Callable[[TranslationQuality], float | None]) -> list[float]:
    """``get(translation diagnostics)`` of each run of strategy ``n``, runs without the value left out."""
    return [v for mt in _translations(ctx, n) if (v := get(mt)) is not None]


def _bleu_row(ctx: ReportContext, n: str) -> list[str]:
    s = ctx.comparison.summary[n]
    share = seed_values(ctx, lambda x: x.rare_token_share)[n]
    unk = _per_run(ctx, n, lambda mt: mt.unk_share)
    tok = _per_run(ctx, n, lambda mt: mt.scores.bleu_tok)
    return [
        n,
        ci(s.bleu, 2),
        *delta_cells(ctx, "bleu", n),
        ci(SeedSummary.of(tok), 2) if tok else "-",
        ci(s.vu, 0),
        *delta_cells(ctx, "vu", n, MORE_FEWER),
        f"{100 * float(np.mean(share)):.2f}%" if share else "-",
        f"{100 * float(np.mean(unk)):.2f}%" if unk else "-",
    ]


def _bleu_form(mt: TranslationQuality | None) -> str:
    form = None if mt is None else mt.scores.bleu_text
    return "detokenized" if form is None else form


def _bleu_text(ctx: ReportContext) -> str:
    """How BLEU was computed: on detokenized cased text (subword runs) or on the tokenized lowercased words
    (word-level runs, the papers' multi-bleu.perl setting)."""
    forms = {_bleu_form(p.diag.translation) for p in ctx.comparison.per_run}
    if forms == {"tokenized"}:
        return "sacreBLEU (13a) on the validation split's tokenized, lowercased text (word-level vocabularies)"
    return "sacreBLEU on the validation split (detokenized, cased)"


def _reference_usage_text(ctx: ReportContext) -> str:
    """The vocabulary usage of the references themselves, for the table's caption ('' if unknown)."""
    mts = _translations(ctx)
    if not mts:
        return ""
    ref_vu = mts[0].reference_vocab_usage
    return f" The references themselves: VU {ref_vu.vu}, rare share {100 * ref_vu.rare_token_share:.2f}%."


def bleu_and_vocab_usage(ctx: ReportContext) -> list[Block]:
    """BLEU per strategy over seeds, Δ to the baseline, distinct and rare words; nothing for LM runs."""
    if not _translations(ctx):
        return []
    table = Table(
        [
            "strategy",
            "BLEU: mean ± std [95% CI]",
            f"Δ BLEU vs {ctx.baseline} [95% CI]",
            "p: bootstrap / paired seeds",
            "verdict",
            "tok-BLEU: mean ± std [95% CI]",
            "VU (distinct words)",
            f"Δ VU vs {ctx.baseline} [95% CI]",
            "p: bootstrap / paired seeds",
            "verdict",
            "rare-word share",
            "`<unk>` share",
        ],
        [_bleu_row(ctx, n) for n in ctx.names],
        _bleu_text(ctx) + ". Δ and p: paired bootstrap over sentences "
        "(sacrebleu's resampling and test statistic; with several seeds the same resampled sentences score "
        "every seed and the seed means are compared); p (paired seeds): the paired t-test over seeds, "
        "Holm-corrected; the verdict comes from the paired seeds (section Verdicts). tok-BLEU: multi-bleu.perl "
        "style, on Moses-tokenized hypotheses "
        "and references (how Liu et al. scored; see docs/liu-protocol.md). VU: distinct words (13a-tokenized, "
        "lower-cased) in the hypotheses, `<unk>` left out (Δ VU: bootstrap over sentences, bias-corrected, "
        "and the paired seeds); rare: words seen at most 10 times in the training targets; `<unk>` share: of the "
        "output words." + _reference_usage_text(ctx),
    )
    vals = seed_values(ctx, lambda x: x.bleu)
    figure = Figure(
        plots.metric_by_strategy(vals, ctx.out_dir / "bleu.png", "BLEU"),
        "Validation BLEU per strategy: seed mean with 95% interval, seeds as dots.",
        ctx.cmd,
    )
    return [Heading("Translation: BLEU and vocabulary usage (Shalev et al., Tables 1-2)"), table, figure]
