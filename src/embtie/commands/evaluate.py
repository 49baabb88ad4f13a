"""``embtie eval RUN_DIR [--split valid|test] [--test-file PATH]``: token-weighted perplexity of a run.

Translation runs (tasks with ``evaluate_translation``): ``embtie eval RUN_DIR --split valid`` or
``--src-file S --ref-file R`` decodes (``--beam``, ``--lenpen``) and reports sacreBLEU and chrF with
their signatures, plus the perplexity; the outputs go to RUN_DIR/hyps.<split>.txt (and eval.json
under ``<split>``, or ``<split>@<checkpoint>`` when --checkpoint is given).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from embtie.checkpoint import write_atomic

HELP = "perplexity of a trained run on a split or a user-supplied file (writes RUN_DIR/eval.json)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR")
    parser.add_argument(
        "--split", choices=("valid", "test"), default=None, help="default: valid (test with --test-file)"
    )
    parser.add_argument("--test-file", metavar="PATH", help="text file to evaluate (test splits are not shipped)")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--src-file", metavar="S", help="translation: source sentences of a test set")
    parser.add_argument("--ref-file", metavar="R", help="translation: the references of --src-file")
    parser.add_argument("--beam", type=int, default=None, help="translation: beam width (default: the run's)")
    parser.add_argument("--lenpen", type=float, default=None, help="translation: length penalty (default: the run's)")
    parser.add_argument("--checkpoint", metavar="NAME", help="weights to use, e.g. avg-last5 (default: newest)")


def run(args: argparse.Namespace) -> int:
    from embtie.data.files import user_file
    from embtie.runs import load_for_decoding

    split = args.split or ("test" if args.test_file or args.src_file else "valid")
    path = str(user_file(args.test_file, "--test-file")) if args.test_file else None
    run_ = load_for_decoding(args.run_dir, args.checkpoint, device=args.device)
    if hasattr(run_.task, "evaluate_translation"):
        return _translation(run_, split, args)
    res = run_.task.evaluate(run_.model, split, path=path)
    res = {**res, "file": path, "checkpoint": run_.checkpoint.name}
    out = Path(args.run_dir) / "eval.json"
    allres = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    allres[split] = res
    write_atomic(out, json.dumps(allres, indent=1))
    print(f"{split} ppl {res['ppl']:.2f} (loss {res['loss']:.4f}, {res['tokens']} tokens)")
    return 0


def _translation(run_, split: str, args: argparse.Namespace) -> int:
    """BLEU / chrF (+ perplexity) of a translation run; outputs to RUN_DIR/hyps.<split>.txt."""
    from embtie.errors import ConfigError

    if args.test_file:
        raise ConfigError("a translation run takes --src-file S --ref-file R, not --test-file")
    res = run_.task.evaluate_translation(
        run_.model, split, args.src_file, args.ref_file, beam=args.beam, lenpen=args.lenpen
    )
    hyps = res.pop("hyps")
    d = Path(args.run_dir)
    key = split if args.checkpoint is None else f"{split}@{run_.checkpoint.name}"
    write_atomic(d / f"hyps.{key}.txt", "".join(h + "\n" for h in hyps))
    res["checkpoint"] = run_.checkpoint.name
    out = d / "eval.json"
    allres = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    allres[key] = res
    write_atomic(out, json.dumps(allres, indent=1))
    print(
        f"{split}: BLEU {res['bleu']:.2f}  chrF {res['chrf']:.2f}  ppl {res['ppl']:.2f}  (beam {res['beam']}, "
        f"lenpen {res['lenpen']}, {res['sentences']} sentences, checkpoint {res['checkpoint']})"
    )
    print(f"sacreBLEU {res['bleu_signature']}")
    print(f"chrF {res['chrf_signature']}")
    return 0
