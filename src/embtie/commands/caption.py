"""``embtie caption RUN_DIR IMAGE... [--beam 10]``: print a caption for each image file with a trained
captioning run (``IMAGE<TAB>caption`` per line; images are encoded by the run's encoder, not cached)."""

from __future__ import annotations

import argparse
from pathlib import Path

from embtie.commands.common import device_arg, number_arg, path_arg
from embtie.rundir.folders import read_run_config

HELP = "caption image files with a trained captioning run"
DESCRIPTION = HELP
EXAMPLES: tuple[str, ...] = ()  # a captioning run needs the Flickr8k images (docs/captioning.md)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg("RUN_DIR"), metavar="RUN_DIR")
    parser.add_argument("images", metavar="IMAGE", nargs="+", help="image files (.jpg, .png)")
    parser.add_argument(
        "--beam",
        type=number_arg(int, "--beam", ge=1, most=1000),
        default=None,
        help="beam width (1: greedy; default: the run's)",
    )
    parser.add_argument("--checkpoint", metavar="NAME", help="e.g. best (default: newest)")
    parser.add_argument("--device", default="cpu", type=device_arg, help="cpu (default), cuda or cuda:N")


def run(args: argparse.Namespace) -> int:
    from embtie import tasks
    from embtie.errors import ConfigError, DataError
    from embtie.rundir.loading import load_for_decoding
    from embtie.tasks.capabilities import Captions

    cfg = read_run_config(args.run_dir)
    if not issubclass(tasks.get(cfg.task), Captions):
        raise ConfigError(f"{args.run_dir} is a {cfg.task!r} run, not a captioning run")
    paths = [Path(p).expanduser() for p in args.images]
    for p in paths:  # checked before the model is loaded
        if not p.is_file():
            raise DataError(f"image {p} does not exist; give paths of .jpg or .png files")
    run_ = load_for_decoding(args.run_dir, args.checkpoint, args.device)
    assert isinstance(run_.task, Captions)  # the run's task class was checked above
    for p, cap in zip(paths, run_.task.caption_files(run_.model, paths, beam=args.beam)):
        print(f"{p}\t{cap}")
    return 0
