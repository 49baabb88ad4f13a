"""Kept for the commands quoted in results/default-job-confirmation: ``embtie confirm --report-only`` now.

    python -m bench.confirm ORIGINAL_FOLDER FRESH_FOLDER [FRESH_FOLDER ...] [--out FILE.md]

is ``embtie confirm ORIGINAL_FOLDER FRESH_FOLDER ... --report-only [--write FILE.md]``
(src/embtie/commands/confirm.py; the logic is embtie.comparison.confirmation_report).
"""

from __future__ import annotations

import argparse

from embtie import cli


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.confirm", description=__doc__.split("\n\n")[0])
    parser.add_argument("original")
    parser.add_argument("fresh", nargs="+")
    parser.add_argument("--out", help="also write the table here")
    args = parser.parse_args(argv)
    write = [] if args.out is None else ["--write", args.out]
    return cli.main(["confirm", args.original, *args.fresh, "--report-only", *write])


if __name__ == "__main__":
    raise SystemExit(main())
