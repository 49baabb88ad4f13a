"""Captioning runs (Shalev et al., Table 1): COCO scores and vocabulary usage per strategy with paired
tests against the baseline, and example captions of every strategy next to their images."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from embtie.analysis.records import CaptioningQuality
from embtie.comparison.records import RunRecord
from embtie.reporting import plots
from embtie.reporting.document import Example, Figure, Gallery, Heading, Table
from embtie.reporting.sections.context import MORE_FEWER, Block, ReportContext, ci, delta_cells, seed_values

N_EXAMPLES = 8
"""example images in the report (evenly spaced over the validation images, the same for every strategy)."""


def _row(ctx: ReportContext, n: str) -> list[str]:
    s = ctx.comparison.summary[n]
    mine = [x for x in ctx.rows if x.strategy == n]
    share = [x.rare_token_share for x in mine if x.rare_token_share is not None]
    return [
        n,
        ci(s.bleu1, 1),
        ci(s.bleu, 2),
        *delta_cells(ctx, "bleu", n),
        ci(s.meteor, 1),
        ci(s.rouge_l, 1),
        ci(s.cider, 1),
        ci(s.vu, 0),
        *delta_cells(ctx, "vu", n, MORE_FEWER),
        f"{100 * float(np.mean(share)):.2f}%" if share else "-",
    ]


def _captioning(p: RunRecord) -> CaptioningQuality | None:
    return p.diag.captioning


def _image_dir(run_dir: str) -> Path | None:
    """The image folder of a run's config (None when it cannot be read)."""
    from embtie.errors import ConfigError
    from embtie.rundir.loading import read_config

    try:
        folder: Path = read_config(run_dir).data.images()
    except (ConfigError, OSError):
        return None
    return folder


def example_gallery(ctx: ReportContext, n: int = N_EXAMPLES) -> Gallery:
    """The captions of ``n`` validation images (evenly spaced) by every strategy's first seed."""
    caps = {name: cap for name in ctx.names if (cap := _captioning(ctx.seed0[name])) is not None}
    first_name = next(iter(caps))
    first = caps[first_name]
    names = first.examples.names
    picks = sorted({int(i) for i in np.linspace(0, len(names) - 1, num=min(n, len(names)))})
    from embtie.data.image_features import image_file

    folder = _image_dir(ctx.seed0[first_name].run_dir)
    examples = []
    for i in picks:
        path = image_file(folder, names[i]) if folder is not None else None
        image = path if path is not None and path.is_file() else None
        lines = [(s, cap.examples.hyps[i]) for s, cap in caps.items()]
        examples.append(Example(names[i], image, lines))
    beam = first.beam
    caption = (
        f"Captions of {len(picks)} validation images (evenly spaced in the split list), beam {beam}, the first "
        "seed of each strategy (the paper's Figures 3-4)."
    )
    if any(e.image is None for e in examples):
        caption += f" Images not found in {folder}: set data.image_dir to show them."
    return Gallery(examples, caption)


def captions_and_vocab_usage(ctx: ReportContext) -> list[Block]:
    """BLEU-1/4, METEOR, ROUGE-L, CIDEr and VU per strategy with tests vs the baseline; example captions."""
    cap = next((c for p in ctx.comparison.per_run if (c := _captioning(p)) is not None), None)
    if cap is None:
        return []
    ref = cap.reference_vocab_usage
    table = Table(
        [
            "strategy",
            "BLEU-1",
            "BLEU-4: mean ± std [95% CI]",
            f"Δ BLEU-4 vs {ctx.baseline} [95% CI]",
            "p: bootstrap / paired seeds",
            "verdict",
            "METEOR",
            "ROUGE-L",
            "CIDEr",
            "VU (distinct words)",
            f"Δ VU vs {ctx.baseline} [95% CI]",
            "p: bootstrap / paired seeds",
            "verdict",
            "rare-word share",
        ],
        [_row(ctx, n) for n in ctx.names],
        f"COCO metrics x100 (pycocoevalcap) of beam-{cap.beam} captions of the {cap.images} validation "
        "images against their reference captions. Δ and p: paired bootstrap over images (BLEU-4 from sacreBLEU's "
        "statistics on the tokenized text, closest reference length, which matches the COCO scorer to rounding; "
        "VU: distinct words used by the resampled images' captions), the same resampled images for every seed; "
        "p (paired seeds): the paired t-test over seeds, Holm-corrected; the verdict comes from the paired seeds "
        "(section Verdicts). VU leaves <unk> out; "
        f"rare: words seen at most {cap.vocab_usage.rare_max} times in the training captions. The "
        f"reference captions themselves: VU {ref.vu}, rare share {100 * ref.rare_token_share:.2f}%.",
    )
    blocks: list[Block] = [Heading("Captioning: COCO scores and vocabulary usage (Shalev et al., Table 1)"), table]
    for label, name, vals in (
        ("BLEU-4", "bleu4.png", seed_values(ctx, lambda x: x.bleu)),
        ("vocabulary usage (distinct words)", "vu.png", seed_values(ctx, lambda x: x.vu)),
    ):
        blocks.append(
            Figure(
                plots.metric_by_strategy(vals, ctx.out_dir / name, label),
                f"Validation {label} per strategy: seed mean with 95% interval, seeds as dots.",
                ctx.cmd,
            )
        )
    blocks.append(example_gallery(ctx))
    return blocks
