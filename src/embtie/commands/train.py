"""``embtie train PRESET_OR_YAML [key=value ...] --out RUN_DIR``: train (or resume) one run."""

from __future__ import annotations

import argparse
import json

from embtie.commands.common import path_arg
from embtie.config import load_config, preset_names

HELP = "train a model with a sharing strategy (a preset or YAML config, key=value overrides)"
DESCRIPTION = (
    "Train one run into RUN_DIR (config.yaml, metrics.jsonl, checkpoints/, summary.json). Running the "
    "same command again resumes from the newest checkpoint; a finished run is not retrained. "
    "Several processes (DDP, or FSDP with train.parallel=fsdp): start it with torchrun, as in the last example."
)
EXAMPLES = (
    "embtie train ptb-gpt-tiny --out runs/tied",
    "embtie train ptb-gpt-tiny sharing.name=l2norm train.max_steps=300 --out runs/l2norm",
    "embtie train ptb-gpt-tiny --out runs/tied --print-config",
    "embtie train multi30k-transformer-small --out runs/tf",
    "torchrun --nproc_per_node=2 -m embtie train ptb-gpt-tiny --out runs/ddp",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("config", help=f"preset ({', '.join(preset_names())}) or path to a YAML config")
    parser.add_argument("overrides", nargs="*", metavar="key=value", help="e.g. sharing.name=l2norm train.max_steps=50")
    parser.add_argument(
        "--out", type=path_arg("--out"), required=True, metavar="RUN_DIR", help="run directory (created, or resumed)"
    )
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def run(args: argparse.Namespace) -> int:
    cfg = load_config(args.config, args.overrides)
    if args.print_config:
        print(cfg.to_yaml(), end="")
        return 0
    from pathlib import Path

    from embtie import tasks
    from embtie.commands.common import removed_if_refused
    from embtie.rundir.folders import check_out_dir, warn_held_out_copies
    from embtie.training import train

    # before anything is written: a bad --out or missing/corrupted data leaves no half-made run directory
    check_out_dir(Path(args.out))
    tasks.get(cfg.task).check_data(cfg)
    warn_held_out_copies(cfg.data)
    with removed_if_refused(Path(args.out)):
        summary = train(cfg, args.out)
    import os

    if int(os.environ.get("RANK", "0")) == 0:
        keys = ("valid_ppl", "best_valid_ppl", "step0_loss", "steps", "tokens_per_s", "params_learned")
        print(json.dumps({k: summary.get(k) for k in keys}))
    return 0
