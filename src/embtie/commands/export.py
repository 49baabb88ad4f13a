"""``embtie export``: write an embtie.hf model as stock transformers weights (loadable without embtie)."""

from __future__ import annotations

import argparse
from pathlib import Path

from embtie.commands.common import path_arg

HELP = "fold a Hugging Face model's sharing strategy into stock transformers weights (loadable without embtie)"
DESCRIPTION = (
    "Load RUN_OR_HF_DIR (a folder saved with save_pretrained after embtie.hf.apply, or an `embtie hf-compare "
    "--save-models` strategy folder holding model/), fold its sharing strategy into a plain input embedding and "
    "lm_head, and save OUT so that transformers' AutoModelForCausalLM / AutoModelForSeq2SeqLM.from_pretrained(OUT) "
    "gives the same logits with embtie not installed. Strategies that a stock model cannot express (softcap, "
    "nGPT's normalized h, a bias where the family's lm_head has none) are refused with the reason. The "
    "tokenizer files of the folder (tokenizer.json, vocab, merges, sentencepiece model, ...) are copied to OUT. "
    "Needs: pip install 'embtie[hf]'."
)
EXAMPLES = ("embtie export runs/hf/l2norm stock/",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "source",
        type=path_arg("RUN_OR_HF_DIR"),
        metavar="RUN_OR_HF_DIR",
        help="folder saved from an embtie.hf model (or RUN/model)",
    )
    parser.add_argument(
        "out", type=path_arg("OUT"), metavar="OUT", help="folder to write the stock transformers model to"
    )


def resolve_source(source: str) -> Path:
    """The save_pretrained folder for RUN_OR_HF_DIR: the folder itself, or its model/ subfolder."""
    from embtie.errors import ConfigError, DataError

    path = Path(source)
    if not path.is_dir():
        raise DataError(f"{path} is not a folder; give a folder saved from an embtie.hf model")
    for candidate in (path, path / "model"):
        if (candidate / "config.json").is_file():
            return candidate
    if (path / "config.yaml").is_file() or (path / "checkpoints").is_dir():
        raise ConfigError(
            f"{path} is a native embtie run; export supports Hugging Face models only (train with "
            "`embtie hf-compare --save-models` or embtie.hf.apply and save_pretrained)"
        )
    raise DataError(f"no config.json in {path} or {path / 'model'}; give a folder saved with save_pretrained")


def _check_finite(model, source: Path) -> None:
    """Weights with NaN or inf are not exported (a CheckpointError naming the tensors and what to do)."""
    from embtie.rundir.checkpoints import CheckpointError, listed, nonfinite

    bad = nonfinite(dict(model.state_dict()))
    if bad:
        raise CheckpointError(
            f"{source} holds weights that are not finite: {listed(bad)}; nothing was exported: export an earlier "
            "save of this model, or train it again with a lower learning rate"
        )


def run(args: argparse.Namespace) -> int:
    from embtie.errors import ConfigError
    from embtie.hf import load  # needs transformers: imported on use
    from embtie.hf.stock_weights import export
    from embtie.hf.tokenizer_files import copy_tokenizer_files

    source = resolve_source(args.source)
    out = Path(args.out)
    if out.resolve() == source.resolve():
        raise ConfigError(f"OUT {out} is the source folder; choose another folder so the embtie model is kept")
    model = load(source)
    _check_finite(model, source)
    result = export(model, out)
    copied = copy_tokenizer_files(source, out) or copy_tokenizer_files(Path(args.source), out)
    if copied:
        result.notes.append(f"tokenizer files copied: {', '.join(copied)}")
    for note in result.notes:
        print(f"- {note}")
    print(f"wrote {result.path} ({'tied' if result.tied else 'untied'}); load it with transformers' from_pretrained")
    return 0
