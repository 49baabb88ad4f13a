"""The quantization sensitivity of one trained run: its validation perplexity (and bits per byte, for a
language model) with the input table, the output matrix, or both fake-quantized in each format
(``embtie.analysis.quantized_tables``), beside the full-precision evaluation and the change from it.

``RUN_DIR/analysis/quantization.json`` holds the table (a ``QuantizationTable``, with the checkpoint it
came from) and ``quantization.md`` the same as Markdown. ``measure`` evaluates only the cells the file
lacks, and all of them again when the run has a newer checkpoint or its validation text is not the one the
table records (``embtie.rundir.provenance``; a changed file is refused): ``embtie analyze --quantize`` and the
``ppl-int8``/``ppl-int4`` metrics of ``embtie compare`` share the file.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from embtie import progress
from embtie.analysis.json_records import Record, optional
from embtie.analysis.quantization import FORMATS
from embtie.analysis.quantized_tables import TABLES, quantized, stored_tables
from embtie.analysis.records import Provenance
from embtie.errors import DataError
from embtie.files import write_atomic
from embtie.rundir import provenance
from embtie.sharing.base import strategy_of

VERSION = 1
JSON_NAME, MD_NAME = "quantization.json", "quantization.md"
SPLIT = "valid"
RULE = "symmetric per-row absmax scale, round half to even, fake-quantized (quantize then dequantize)"


@dataclass(kw_only=True)
class QuantizedEvaluation(Record):
    """The evaluation of the run with ``tables`` ("input", "output", "both") quantized to ``format`` (format
    "full" with tables "none": full precision), and its change from full precision when that is known."""

    format: str
    tables: str
    loss: float
    ppl: float
    bpb: float | None = optional()
    ppl_change: float | None = optional()
    """ppl - the full-precision ppl."""
    bpb_change: float | None = optional()
    """bpb - the full-precision bpb."""


@dataclass(kw_only=True)
class QuantizationTable(Record):
    """Every quantized evaluation of one run (``RUN_DIR/analysis/quantization.json``)."""

    version: int
    strategy: str
    split: str
    rule: str
    input_table: str
    """the strategy's attribute the input role reads (``weight``: E)."""
    output_table: str
    """the attribute the output role reads (``weight`` when shared, ``out_weight``, ``fixed_weight``)."""
    shared: bool
    """one matrix serves both roles: it is quantized once."""
    baseline: QuantizedEvaluation | None
    cells: list[QuantizedEvaluation] = field(default_factory=list)
    provenance: Provenance | None = None

    def cell(self, fmt: str, tables: str) -> QuantizedEvaluation | None:
        return next((c for c in self.cells if (c.format, c.tables) == (fmt, tables)), None)


def read(run_dir: Path) -> QuantizationTable | None:
    """The stored table when it describes the run's newest checkpoint; None when missing, unreadable,
    written by another version, or stale."""
    p = Path(run_dir) / "analysis" / JSON_NAME
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
        table = QuantizationTable.from_json(raw) if isinstance(raw, dict) and raw.get("version") == VERSION else None
    except (OSError, ValueError, DataError):  # missing, not JSON, or not a table: measured again
        return None
    prov = None if table is None else table.provenance
    if prov is None or provenance.stale_reason(run_dir, prov.checkpoint, prov.model_sha256, prov.inputs or {}):
        return None
    return table


def measure(
    run_dir: Path,
    formats: Sequence[str],
    tables: Sequence[str] = TABLES,
    *,
    baseline: bool = True,
    device: str | torch.device = "cpu",
    command: str = "embtie analyze --quantize",
) -> QuantizationTable:
    """The table with (at least) the cells ``formats`` x ``tables`` (and the full-precision evaluation
    when ``baseline``), evaluating only what the stored table lacks, and written back."""
    from embtie.rundir.loading import load_run

    old = read(run_dir)
    wanted = [(f, t) for f in formats for t in tables]
    if old is not None and all(old.cell(f, t) for f, t in wanted) and (old.baseline or not baseline):
        return old
    run = load_run(run_dir, device)
    source = Provenance.from_json(run.source().to_json(command))
    if old is not None and old.provenance is not None and old.provenance.model_sha256 != source.model_sha256:
        old = None  # a checkpoint newer than the one read a moment ago
    strategy = strategy_of(run.model)
    stored = stored_tables(strategy)
    table = old or QuantizationTable(version=VERSION, strategy=run.config.sharing.name, split=SPLIT, rule=RULE,
                                     input_table=stored.input, output_table=stored.output, shared=stored.shared,
                                     baseline=None, provenance=source)  # fmt: skip
    todo = [(f, t) for f, t in wanted if table.cell(f, t) is None]
    if baseline and table.baseline is None:
        todo.insert(0, ("full", "none"))
    bar = progress.bar(todo, desc="quantized evaluations", unit="evaluation", leave=True)
    for fmt, what in bar:
        bar.set_description(f"{fmt} {what}")
        result = _evaluate(run, fmt, what)
        if what == "none":
            table.baseline = result
        else:
            table.cells.append(result)
    table.cells = _ordered(table.cells, table.baseline)
    write(run_dir, table)
    return table


def _evaluate(run: Any, fmt: str, tables: str) -> QuantizedEvaluation:
    """The task's validation with ``tables`` quantized to ``fmt`` ("none": full precision)."""
    if tables == "none":
        res = run.task.evaluate(run.model, SPLIT)
    else:
        with quantized(strategy_of(run.model), fmt, tables):
            res = run.task.evaluate(run.model, SPLIT)
    bpb = res.get("bpb")
    return QuantizedEvaluation(format=fmt, tables=tables, loss=float(res["loss"]), ppl=float(res["ppl"]),
                               bpb=None if bpb is None else float(bpb))  # fmt: skip


def _ordered(cells: list[QuantizedEvaluation], base: QuantizedEvaluation | None) -> list[QuantizedEvaluation]:
    """The cells in format then role order, each with its change from full precision (when known)."""
    order = {(f, t): i for i, (f, t) in enumerate((f, t) for f in FORMATS for t in TABLES)}
    out = sorted(cells, key=lambda c: order.get((c.format, c.tables), len(order)))
    for c in out:
        c.ppl_change = None if base is None else c.ppl - base.ppl
        c.bpb_change = None if base is None or c.bpb is None or base.bpb is None else c.bpb - base.bpb
    return out


def write(run_dir: Path, table: QuantizationTable) -> tuple[Path, Path]:
    """RUN_DIR/analysis/quantization.json and quantization.md, each written atomically."""
    out = Path(run_dir) / "analysis"
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / JSON_NAME, json.dumps(table.to_json(), indent=1))
    write_atomic(out / MD_NAME, markdown(table))
    return out / JSON_NAME, out / MD_NAME


def _number(x: float | None, fmt: str, signed: bool = False) -> str:
    return "" if x is None else format(x, ("+" if signed else "") + fmt)


def markdown(table: QuantizationTable) -> str:
    """The table as Markdown: one row per evaluation, the change from full precision beside it."""
    roles = (
        f"one matrix `{table.output_table}` serves both roles and is quantized once"
        if table.shared
        else f"input table `{table.input_table}`, output matrix `{table.output_table}`"
    )
    lines = [
        f"# Quantization sensitivity: `{table.strategy}`",
        "",
        f"Validation split ({table.split}); {table.rule}; {roles}.",
        "",
        "| format | quantized | perplexity | Δ perplexity | Δ % | bits per byte | Δ bits per byte |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    base = table.baseline
    for c in [*([base] if base is not None else []), *table.cells]:
        pct = None if base is None or c.ppl_change is None else 100 * c.ppl_change / base.ppl
        lines.append(
            f"| {c.format} | {c.tables} | {c.ppl:.3f} | {_number(c.ppl_change, '.3f', True)} | "
            f"{_number(pct, '.2f', True)} | {_number(c.bpb, '.4f')} | {_number(c.bpb_change, '.4f', True)} |"
        )
    return "\n".join(lines) + "\n"
