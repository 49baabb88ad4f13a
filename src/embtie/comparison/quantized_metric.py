"""``embtie compare --metric ppl-int8`` (or ``ppl-int4``): the tested metric is each run's validation
perplexity with its input table and output matrix fake-quantized (a shared matrix once; the rule and the
tensors: ``embtie.analysis.quantization``, ``embtie.analysis.quantized_tables``), so that paired seeds
decide whether a strategy quantizes better than tied.

It is measured for every finished run when the comparison's results are read (``results.read_run``, for
the report and for each look of a sequential design), once per run and checkpoint: the value is the
"both" cell of ``RUN_DIR/analysis/quantization.json``, the table ``embtie analyze --quantize`` writes and
reads too. Other metrics never cost a quantized evaluation.
"""

from __future__ import annotations

from embtie.analysis import quantization_table
from embtie.comparison.grid import CompareSpec, PlannedRun
from embtie.metrics import chosen


def formats(spec: CompareSpec) -> list[str]:
    """The formats the comparison's ``--metric`` quantizes to ([] for any other metric)."""
    if spec.metric is None:
        return []
    fmt = chosen(spec.metric).quantized
    return [] if fmt is None else [fmt]


def perplexities(r: PlannedRun, spec: CompareSpec) -> dict[str, float]:
    """format -> the run's validation perplexity with both tables quantized, for ``formats(spec)``;
    measured (with a line on stdout) when the run's table lacks it or is stale."""
    out = {}
    for fmt in formats(spec):
        table = quantization_table.read(r.run_dir)
        measured = table is None or table.cell(fmt, "both") is None
        if measured:
            command = f"embtie compare --metric ppl-{fmt}"
            table = quantization_table.measure(r.run_dir, [fmt], ["both"], baseline=False, command=command)
        cell = None if table is None else table.cell(fmt, "both")
        if cell is not None:  # always, after measure()
            out[fmt] = cell.ppl
            if measured:
                print(f"[quantized {fmt}] {r.strategy} seed {r.seed}: valid ppl {cell.ppl:.2f}", flush=True)
    return out
