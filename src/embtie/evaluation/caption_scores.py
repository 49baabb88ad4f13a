"""Captioning metrics with the COCO caption evaluation code (PyPI ``pycocoevalcap``, ``pip install
'embtie[caption]'``): BLEU-1..4, METEOR (Java), ROUGE-L and CIDEr, all x100 as papers report them.

Captions are scored as given: hypotheses and references are already tokenized and lowercased
(``embtie.data.caption_corpus.tokenize``), so the PTB tokenizer step of the COCO toolkit is not run.
SPICE is left out (it downloads models at run time).
"""

from __future__ import annotations

import contextlib
import io
import shutil

from embtie.errors import DataError

CAPTION_EXTRA = "pip install 'embtie[caption]'"


def _scorers(names: tuple[str, ...]) -> dict:
    try:
        from pycocoevalcap.bleu.bleu import Bleu
        from pycocoevalcap.cider.cider import Cider
        from pycocoevalcap.meteor.meteor import Meteor
        from pycocoevalcap.rouge.rouge import Rouge
    except ImportError:
        raise DataError(f"captioning metrics need pycocoevalcap, which is not installed: {CAPTION_EXTRA}") from None
    makers = {"bleu": lambda: Bleu(4), "meteor": Meteor, "rouge_l": Rouge, "cider": Cider}
    if "meteor" in names and shutil.which("java") is None:
        raise DataError("METEOR needs Java (the `java` command), which is not on PATH; install a JRE or leave it out")
    return {n: makers[n]() for n in names}


def _inputs(hyps: list[str], refs: list[list[str]]) -> tuple[dict, dict]:
    if len(hyps) != len(refs):
        raise ValueError(f"{len(hyps)} hypotheses for {len(refs)} reference sets")
    if any(not r for r in refs):
        raise DataError("an image has no reference caption; every scored image needs at least one")
    return {i: list(r) for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)}


def coco_scores(
    hyps: list[str], refs: list[list[str]], metrics: tuple[str, ...] = ("bleu", "meteor", "rouge_l", "cider")
) -> dict[str, float]:
    """Corpus scores x100 of one hypothesis per image against its references:
    {"bleu1".."bleu4", "meteor", "rouge_l", "cider"} (those of ``metrics``)."""
    gts, res = _inputs(hyps, refs)
    out: dict[str, float] = {}
    for name, scorer in _scorers(metrics).items():
        with contextlib.redirect_stdout(io.StringIO()):  # the BLEU scorer prints its counts
            score, _ = scorer.compute_score(gts, res)
        if name == "bleu":
            out.update({f"bleu{n}": 100.0 * float(s) for n, s in enumerate(score, start=1)})
        else:
            out[name] = 100.0 * float(score)
    return out
