"""``embtie analyze RUN_DIR``: the diagnostics of one trained run (JSON + PNG plots from saved files)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from embtie.commands.common import device_arg

HELP = "diagnostics of one run: norms, norm vs frequency, word similarity, row updates, parameters, step-0 loss"
DESCRIPTION = (
    "Compute the diagnostics of a trained run once from its checkpoint (RUN_DIR/analysis/diagnostics.json, "
    "arrays.npz), then draw the plots from those files (RUN_DIR/analysis/*.png) and print a summary."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory of `embtie train` or `embtie compare`")
    parser.add_argument("--batches", type=int, default=8, help="training batches for the row-update counts (default 8)")
    parser.add_argument("--force", action="store_true", help="recompute the diagnostics even if they exist")
    parser.add_argument("--device", default="cpu", type=device_arg, help="cpu (default), cuda or cuda:N")


def plot_run(diag: dict, arrays: dict, out: Path, command: str) -> list[tuple[Path, str]]:
    """The per-run figures, drawn from the saved diagnostics; returns (path, caption) pairs."""
    from embtie.reporting import plots

    name = diag["strategy"]
    figs = [
        (
            plots.norm_histograms({name: diag["norms"]}, out / "norm_histograms.png"),
            "Input (blue) and output (red) vector norms.",
        ),
        (
            plots.row_update_frequency(
                {
                    name: {
                        "batches": diag["row_updates"]["batches"],
                        "input_counts": arrays["input_update_counts"],
                        "output_counts": arrays["output_update_counts"],
                    }
                },
                out / "row_updates.png",
            ),
            "Share of batches with a non-zero gradient per row, input vs output path, against frequency rank.",
        ),
    ]
    if diag.get("norm_frequency"):
        rho = diag["norm_frequency"]["output"]["rho"]
        pts = {name: {"counts": arrays["counts"], "norms": arrays["output_norms"], "rho": rho}}
        figs.append(
            (plots.norm_vs_frequency(pts, out / "norm_vs_frequency.png"), "Output-vector norm against train frequency.")
        )
    return figs


def run(args: argparse.Namespace) -> int:
    from embtie.analysis import run_diagnostics
    from embtie.errors import ConfigError
    from embtie.rundir.loading import load_run

    if args.batches < 1:
        raise ConfigError(f"--batches {args.batches} must be >= 1")
    d = Path(args.run_dir)
    loaded = None if args.force else run_diagnostics.read(d)
    if loaded is None:
        r = load_run(d, args.device)
        diag, arrays = run_diagnostics.diagnose(r.model, r.task, r.config, r.summary or {}, args.batches)
        run_diagnostics.write(d, diag, arrays)
    else:
        diag, arrays = loaded
    out = d / run_diagnostics.ANALYSIS_DIR
    figs = plot_run(diag, arrays, out, f"embtie analyze {d}")
    s0 = diag["step0"]
    lines = {
        "strategy": diag["strategy"],
        "step0_loss": {"measured": s0["measured"], "su_predicted": s0["predicted"], "ln_v": s0["ln_v"]},
        "params": diag["params"],
        "norms": {k: {m: diag["norms"][k][m] for m in ("mean", "std", "min", "max")} for k in ("input", "output")},
        "norm_frequency_rho": {k: v["rho"] for k, v in (diag.get("norm_frequency") or {}).items()},
        "wordsim": {b: {k: e[k]["rho"] for k in e} for b, e in (diag.get("wordsim") or {}).items()},
        "row_updates": {
            k: diag["row_updates"][k] for k in ("batches", "input_rows_per_batch", "output_rows_per_batch")
        },
        "valid_loss": diag["valid"]["loss"],
    }
    print(json.dumps(lines, indent=1))
    print(f"diagnostics: {(out / 'diagnostics.json').resolve()}")
    for p, _ in figs:
        print(f"plot: {p.resolve()}")
    return 0
