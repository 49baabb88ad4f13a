"""``embtie eval`` of a captioning run: caption a split's images, print and save the scores."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

from embtie.errors import DataError
from embtie.files import write_atomic


def captioning(run_, split: str, captions_file: str | None, args: argparse.Namespace,
               save: Callable[[Path, str, dict], None], name: str | None = None) -> int:  # fmt: skip
    """BLEU-1..4, METEOR, ROUGE-L, CIDEr, vocabulary usage of ``split`` (captions from ``captions_file``
    when given); captions to RUN_DIR/hyps.<name>.txt (``IMAGE<TAB>caption``), scores to eval.json under
    ``name`` (default: the split; a captions file evaluated in place of the validation split is named by it)."""
    res = run_.task.evaluate_captions(run_.model, split, captions_file, beam=args.beam, lenpen=args.lenpen)
    hyps, names = res.pop("hyps"), res.pop("names")
    split = name or split
    key = split if args.checkpoint is None else f"{split}@{run_.checkpoint.name}"
    res["checkpoint"] = run_.checkpoint.name
    print(
        f"{split}: BLEU-1 {res['bleu1']:.2f}  BLEU-2 {res['bleu2']:.2f}  BLEU-3 {res['bleu3']:.2f}  "
        f"BLEU-4 {res['bleu4']:.2f}  METEOR {res['meteor']:.2f}  ROUGE-L {res['rouge_l']:.2f}  "
        f"CIDEr {res['cider']:.2f}  ppl {res['ppl']:.2f}"
    )
    print(
        f"vocabulary usage {res['vocab_usage']} words, rare (seen <= {res['rare_max']}x in training) "
        f"{res['rare_types']} words / {100 * res['rare_token_share']:.2f}% of tokens, <unk> "
        f"{100 * res['unk_share']:.2f}%, mean length {res['mean_length']:.2f} "
        f"({res['images']} images, beam {res['beam']}, checkpoint {res['checkpoint']})"
    )
    out = Path(args.run_dir) / f"hyps.{key.replace('file:', 'file-', 1)}.txt"
    try:
        write_atomic(out, "".join(f"{n}\t{h}\n" for n, h in zip(names, hyps)))
    except OSError as e:
        raise DataError(f"cannot write {out}: {e.strerror or e}; the scores above were not saved") from None
    save(Path(args.run_dir), key, res)
    return 0
