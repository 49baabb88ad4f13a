"""``embtie hf-audit``: the tie state of any local transformers checkpoint, a verdict, and a corrected copy."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

from embtie.commands.common import path_arg

HELP = "check a transformers checkpoint's tied/untied embeddings against its config, and write a fixed copy"
DESCRIPTION = (
    "Read PATH (any folder written by save_pretrained with safetensors weights: embtie's or not; or a run folder "
    "holding model/) without loading its model: the config's tie_word_embeddings, which embedding and output "
    "keys the file holds, whether input and output share storage once from_pretrained has loaded it, whether "
    "the two matrices are equal, the family's embedding scale, final-logit soft cap and output rescale. Then a "
    "verdict: consistent tied / consistent untied / flag-tied with diverged tensors (transformers #45127) / "
    "tied with a missing key / tied on disk but untied in config / an untied head that started as a copy "
    "(peft-merged, peft #2777) / untied equal copies / an embtie export / an embtie save / no embedding; and "
    "its repair. --fix OUT writes the corrected copy to OUT (never in place). Needs: pip install 'embtie[hf]'."
)
EXAMPLES = (
    "embtie hf-audit stock/",
    "embtie hf-audit runs/hf/l2norm --fix audited-stock/",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=path_arg("PATH", "my-checkpoint/"), metavar="PATH", help="checkpoint folder")
    parser.add_argument(
        "--fix", type=path_arg("--fix", "fixed/"), metavar="OUT", help="write the corrected copy to OUT (a new folder)"
    )
    parser.add_argument(
        "--tie-from",
        choices=("input", "output"),
        help="with --fix: tie two stored matrices into one, keeping the input embedding's or the output layer's",
    )
    parser.add_argument("--json", action="store_true", help="print the audit as JSON instead of text")


def resolve(path: str) -> Path:
    """The checkpoint folder for PATH: PATH itself, or its model/ subfolder."""
    from embtie.errors import DataError

    folder = Path(path)
    if not folder.is_dir():
        raise DataError(f"{folder} is not a folder; give a folder written by save_pretrained")
    return folder / "model" if not (folder / "config.json").is_file() and (folder / "model").is_dir() else folder


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def report_lines(found) -> list[str]:
    """The text report of an Audit, one fact per line."""
    files = f"{found.n_keys} tensors in {', '.join(found.weight_files)}"
    keys = "; ".join(f"{k} {found.shapes[k]}" for k in found.shapes) or "none of the embedding or output keys"
    missing = [k for k in (found.input_keys[0], found.output_keys[0]) if k not in found.shapes]
    cmp = found.comparison
    equal = (
        "n/a (the file holds one matrix)"
        if cmp is None
        else f"{_yes(cmp.equal)} (max |diff| {cmp.max_abs_diff:.3g}, median row cosine {cmp.median_row_cosine:.3f})"
    )
    v = found.described
    lines = [
        f"checkpoint       {found.path}",
        f"model            {found.architecture} (model_type {found.model_type})",
        f"tie flag         tie_word_embeddings={found.tie_flag}",
        f"keys held        {keys} ({files})" + (f"; not held: {', '.join(missing)}" if missing else ""),
        f"shares storage   {_yes(found.shares_storage)} (input and output once loaded)",
        f"equal            {equal}",
        f"embedding scale  {found.embed_scale}",
        f"logit softcap    {'none' if found.softcap is None else f'{found.softcap:g}'}",
    ]
    if found.output_rescale:
        lines.append(f"output rescale   {found.output_rescale}")
    if found.embtie:
        lines.append(f"embtie           strategy {found.embtie.get('strategy')!r}")
    lines += [f"note             {n}" for n in found.notes]
    lines += [f"verdict          {v.key}{' (PROBLEM)' if v.problem else ''}: {v.says}", f"repair           {v.repair}"]
    return lines


def run(args: argparse.Namespace) -> int:
    from embtie.errors import ConfigError
    from embtie.hf.audit import audit  # needs transformers: imported on use
    from embtie.hf.audit_fix import repair

    if args.tie_from and not args.fix:
        raise ConfigError("--tie-from needs --fix OUT (it says which matrix the fixed copy keeps)")
    found = audit(resolve(args.path))
    if args.json:
        print(json.dumps(asdict(found), default=str, indent=2))
    else:
        print("\n".join(report_lines(found)))
    if not args.fix:
        return 0
    fixed = repair(found, args.fix, tie_from=args.tie_from)
    if fixed is None:
        print(f"nothing to fix ({found.verdict}); nothing written")
    else:
        print(f"wrote {args.fix}: {fixed.verdict}, tie_word_embeddings={fixed.tie_flag}")
    return 0
