"""``embtie eval RUN_DIR [--split valid|test] [--test-file PATH]``: token-weighted perplexity of a run."""

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


def run(args: argparse.Namespace) -> int:
    from embtie.data.files import user_file
    from embtie.train import load_run

    split = args.split or ("test" if args.test_file else "valid")
    path = str(user_file(args.test_file, "--test-file")) if args.test_file else None
    run_ = load_run(args.run_dir, device=args.device)
    res = run_.task.evaluate(run_.model, split, path=path)
    res = {**res, "file": path, "checkpoint": run_.checkpoint.name}
    out = Path(args.run_dir) / "eval.json"
    allres = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    allres[split] = res
    write_atomic(out, json.dumps(allres, indent=1))
    print(f"{split} ppl {res['ppl']:.2f} (loss {res['loss']:.4f}, {res['tokens']} tokens)")
    return 0
