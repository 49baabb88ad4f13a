"""``embtie data list|get|verify|path``: the datasets embtie reads, where they are, and bringing them."""

from __future__ import annotations

import argparse

from embtie.commands.common import path_arg

HELP = "list, download (get), verify and locate the datasets (PTB, WikiText-2, Multi30k, IWSLT14, WMT, ...)"
DESCRIPTION = (
    "`embtie data list` shows every dataset, its splits, size, licence and where it is now; "
    "`embtie data get NAME [--split S ...]` downloads, verifies, unpacks and prepares it into the data root "
    "($EMBTIE_DATA, else ../shared/data beside the checkout, else the user cache); `embtie data verify [NAME]` "
    "checks the sha256 of every file present; `embtie data path NAME` prints its folder. Without network, "
    "put each file where the error says and run `get` again; --mirror URL (or $EMBTIE_DATA_MIRROR) reads "
    "files from a mirror that holds them under HOST/PATH."
)
EXAMPLES = ("embtie data list", "embtie data verify ptb", "embtie data path ptb")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("list", help="every dataset, its splits, size, licence and where it is now")
    get = sub.add_parser("get", help="download, verify and prepare a dataset into the data root")
    get.add_argument("name", metavar="NAME")
    get.add_argument("--split", action="append", default=None, metavar="SPLIT",
                     help="a split to bring (repeatable, or comma-separated; default: all)")  # fmt: skip
    get.add_argument(
        "--mirror",
        type=path_arg("--mirror", "http://127.0.0.1:8000"),
        metavar="URL",
        default=None,
        help="fetch from a mirror holding MIRROR/HOST/PATH",
    )
    verify = sub.add_parser("verify", help="check the sha256 of every dataset file present")
    verify.add_argument("name", metavar="NAME", nargs="?", default=None)
    path = sub.add_parser("path", help="the folder that holds a dataset")
    path.add_argument("name", metavar="NAME")


def run(args: argparse.Namespace) -> int:
    action = {"list": _list, "get": _get, "verify": _verify, "path": _path}[args.action]
    return action(args)


def _list(args: argparse.Namespace) -> int:
    from embtie.data import catalogue
    from embtie.data.install import present

    for d in catalogue.DATASETS.values():
        sizes = [e.source.size for e in d.entries if e.source is not None]
        known = [s for s in sizes if s is not None]
        size = f"{sum(known) / 1e6:.1f} MB" if known and len(known) == len(d.entries) else "size unknown here"
        where: dict[str, set[str]] = {}
        for s in d.splits:
            found = [(e, present(e)) for e in d.entries_of([s])]
            if all(p is not None for _, p in found):
                where[s] = {str(p.parents[e.relpath.count("/")]) for e, p in found if p is not None}
        here = "; ".join(f"{s} in {', '.join(sorted(where[s]))}" for s in d.splits if s in where) or "nothing"
        missing = [s for s in d.splits if s not in where]
        print(f"{d.name}: {d.title}")
        print(f"  splits: {', '.join(d.splits)}; {size}; licence: {d.licence}")
        print(f"  here: {here}" + (f"; missing: {', '.join(missing)} (embtie data get {d.name})" if missing else ""))
        for note in d.notes:
            print(f"  note: {note}")
    return 0


def _get(args: argparse.Namespace) -> int:
    from embtie.data.download import check_mirror
    from embtie.data.install import get

    check_mirror(args.mirror)
    splits = [s.strip() for item in args.split or [] for s in item.split(",") if s.strip()] or None
    if args.split is not None and splits is None:
        from embtie.errors import ConfigError

        raise ConfigError(f"--split {args.split[-1]!r} names no split; give e.g. --split test, or leave it out for all")
    done = get(args.name, splits, mirror=args.mirror, say=lambda line: print(line, flush=True))
    if done.added:
        print(f"{args.name}: {len(done.added)} file(s) added under {done.root}"
              + (f", {len(done.kept)} already there" if done.kept else ""))  # fmt: skip
    else:
        print(f"{args.name}: all {len(done.kept)} file(s) already there and intact")
    return 0


def _verify(args: argparse.Namespace) -> int:
    from embtie.data import catalogue
    from embtie.data.install import check_file, present

    datasets = [catalogue.dataset(args.name)] if args.name else list(catalogue.DATASETS.values())
    bad = checked = 0
    for d in datasets:
        for e in d.entries:
            p = present(e)
            if p is None:
                continue
            checked += 1
            problem = check_file(p, e)
            if problem is not None:
                bad += 1
                print(f"MISMATCH {p}: {problem}; bring it again with `embtie data get {d.name}` after removing it")
            elif e.sha256 is None and e.git_blob is None:
                from embtie.data.files import sha256_of

                print(f"unverified {p}: sha256 {sha256_of(p)} (no pin here)")
            else:
                print(f"ok {p}")
    print(f"{checked} file(s) checked, {bad} mismatch(es)")
    if checked == 0:
        from embtie.errors import DataError

        which = args.name or "any dataset"
        raise DataError(f"no file of {which} is here to verify; bring it with `embtie data get {args.name or 'NAME'}`")
    return 1 if bad else 0


def _path(args: argparse.Namespace) -> int:
    from embtie.data import catalogue
    from embtie.data.install import present
    from embtie.errors import DataError

    d = catalogue.dataset(args.name)
    for e in d.entries:
        p = present(e)
        if p is not None:
            print(p.parents[len(e.relpath.split("/")) - 2])
            return 0
    raise DataError(f"{d.name} is not here; bring it with `embtie data get {d.name}`")
