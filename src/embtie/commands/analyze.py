"""``embtie analyze RUN_DIR``: the diagnostics of one trained run (JSON + PNG plots from saved files)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from embtie.commands.common import device_arg, number_arg, path_arg

if TYPE_CHECKING:
    from embtie.analysis.records import RunArrays, RunDiagnostics

HELP = (
    "diagnostics of one run: norms, norm vs frequency, word similarity, row updates, parameters, step-0 loss; "
    "with --quantize, the perplexity change of quantized tables"
)
DESCRIPTION = (
    "Compute the diagnostics of a trained run once from its checkpoint (RUN_DIR/analysis/diagnostics.json, "
    "arrays.npz), then draw the plots from those files (RUN_DIR/analysis/*.png) and print a summary. With "
    "--quantize, also evaluate the run with its input table, its output matrix, and both fake-quantized in each "
    "format (symmetric per-row absmax; a shared matrix quantized once) and write the perplexity change as "
    "RUN_DIR/analysis/quantization.json and quantization.md."
)
EXAMPLES = ("embtie analyze runs/tied", "embtie analyze runs/tied --quantize int8,int4")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "run_dir",
        type=path_arg("RUN_DIR"),
        metavar="RUN_DIR",
        help="a run directory of `embtie train` or `embtie compare`",
    )
    parser.add_argument(
        "--batches",
        type=number_arg(int, "--batches", ge=1, most=100_000),
        default=8,
        help="training batches for the row-update counts (default 8)",
    )
    parser.add_argument("--force", action="store_true", help="recompute the diagnostics even if they exist")
    parser.add_argument("--device", default="cpu", type=device_arg, help="cpu (default), cuda or cuda:N")
    parser.add_argument(
        "--quantize",
        type=_formats_arg,
        default=(),
        metavar="FORMATS",
        help="comma-separated formats (int8, int4): validation perplexity (and bits per byte) with the input "
        "table, the output matrix and both fake-quantized per row, beside full precision",
    )


def _formats_arg(text: str) -> tuple[str, ...]:
    """--quantize's formats (one line naming the formats there are when one is unknown)."""
    from embtie.analysis.quantization import parse_formats
    from embtie.errors import ConfigError

    try:
        return parse_formats(text)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def plot_run(diag: RunDiagnostics, arrays: RunArrays, out: Path, command: str) -> list[tuple[Path, str]]:
    """The per-run figures, drawn from the saved diagnostics; returns (path, caption) pairs."""
    from embtie.reporting import plots

    name = diag.strategy
    figs = [
        (
            plots.norm_histograms({name: diag.norms}, out / "norm_histograms.png"),
            "Input (blue) and output (red) vector norms.",
        ),
    ]
    ru, inp, outp = diag.row_updates, arrays.input_update_counts, arrays.output_update_counts
    if ru is not None and inp is not None and outp is not None:
        updates = plots.RowUpdateCounts(batches=ru.batches, input_counts=inp, output_counts=outp)
        figs.append(
            (
                plots.row_update_frequency({name: updates}, out / "row_updates.png"),
                "Share of batches with a non-zero gradient per row, input vs output path, against frequency rank.",
            )
        )
    if diag.norm_frequency is not None and arrays.counts is not None:
        rho = diag.norm_frequency.output.rho
        pts = {name: plots.FrequencyScatter(counts=arrays.counts, norms=arrays.output_norms, rho=rho)}
        figs.append(
            (plots.norm_vs_frequency(pts, out / "norm_vs_frequency.png"), "Output-vector norm against train frequency.")
        )
    return figs


def _plot_atomically(diag: RunDiagnostics, arrays: RunArrays, out: Path, command: str) -> list[tuple[Path, str]]:
    """``plot_run`` into a temporary folder, each figure then moved into ``out`` with ``os.replace``."""
    import os
    import shutil

    tmp = out / f".plots.tmp{os.getpid()}"
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        drawn = plot_run(diag, arrays, tmp, command)
        for p, _ in drawn:
            os.replace(p, out / p.name)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return [(out / p.name, caption) for p, caption in drawn]


def summary_lines(diag: RunDiagnostics) -> dict[str, object]:
    """What ``embtie analyze`` prints: the headline numbers of each diagnostic."""
    s0, nf, ru = diag.step0, diag.norm_frequency, diag.row_updates
    hists = {"input": diag.norms.input, "output": diag.norms.output}
    return {
        "strategy": diag.strategy,
        "step0_loss": {"measured": s0.measured, "su_predicted": s0.predicted, "ln_v": s0.ln_v},
        "params": diag.params.to_json(),
        "norms": {k: {"mean": h.mean, "std": h.std, "min": h.min, "max": h.max} for k, h in hists.items()},
        "norm_frequency_rho": {} if nf is None else {"input": nf.input.rho, "output": nf.output.rho},
        "wordsim": {b: {"input": e.input.rho, "output": e.output.rho} for b, e in (diag.wordsim or {}).items()},
        **({"wordsim_skipped": diag.wordsim_skipped} if diag.wordsim_skipped else {}),
        "row_updates": {}
        if ru is None
        else {
            "batches": ru.batches,
            "input_rows_per_batch": ru.input_rows_per_batch,
            "output_rows_per_batch": ru.output_rows_per_batch,
        },
        "valid_loss": None if diag.valid is None else diag.valid.loss,
    }


def run(args: argparse.Namespace) -> int:
    from embtie.analysis import run_diagnostics

    d = Path(args.run_dir)
    # no writer lock: the newest complete checkpoint is read (the run may be training), and the files
    # written (diagnostics, plots) are replaced atomically; stale diagnostics are computed again
    loaded = None if args.force else run_diagnostics.current(d)
    if loaded is None or not run_diagnostics.covers(loaded[0], "full"):  # a light one from `compare`
        diag, arrays = run_diagnostics.analyse(d, args.batches, args.device, command=f"embtie analyze {d}")
    else:
        diag, arrays = loaded
    out = d / run_diagnostics.ANALYSIS_DIR
    figs = _plot_atomically(diag, arrays, out, f"embtie analyze {d}")
    print(json.dumps(summary_lines(diag), indent=1))
    print(f"diagnostics: {(out / 'diagnostics.json').resolve()}")
    for p, _ in figs:
        print(f"plot: {p.resolve()}")
    if args.quantize:
        _quantization(d, args)
    return 0


def _quantization(d: Path, args: argparse.Namespace) -> None:
    """Measure (or read, when current) the quantized evaluations and print their table and files."""
    from embtie.analysis import quantization_table

    command = f"embtie analyze {d} --quantize {','.join(args.quantize)}"
    table = quantization_table.measure(d, args.quantize, device=args.device, command=command)
    print(quantization_table.markdown(table), end="")
    out = d / "analysis"
    print(f"quantization: {(out / quantization_table.JSON_NAME).resolve()}")
    print(f"              {(out / quantization_table.MD_NAME).resolve()}")
