"""Training throughputs embtie has measured, per preset and hardware: ``embtie plan`` uses them in place of
the FLOP estimate when the planned runs are those presets on that hardware, unchanged in shape.

CPU: tokens/s of one run on one thread (``train.threads=1``, two runs at a time on the project's 2-core
Xeon machine), the median over every run of the cited comparison (all its strategies and seeds).
GPU: tokens/s of one run alone on the device. Each entry names its source; tests/planning checks the
CPU entries against the results files they cite.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Measurement:
    preset: str
    hardware: str
    """"cpu" (one core) or a GPU name of ``planning.hardware.GPUS``."""
    precision: str
    tokens_per_s: float
    source: str


MEASURED: tuple[Measurement, ...] = (
    Measurement("ptb-gpt-tiny", "cpu", "fp32", 5226, "results/su-convergence/results.json"),
    Measurement("wikitext2-gpt-flat", "cpu", "fp32", 4926, "results/wikitext2-adaptive/results.json"),
    Measurement("ptb-lstm-small", "cpu", "fp32", 1996, "results/press-wolf/results.json"),
    Measurement("multi30k-transformer-small", "cpu", "fp32", 1685, "results/liu-multi30k/transformer/results.json"),
    Measurement("multi30k-dynamicconv-small", "cpu", "fp32", 1932, "results/liu-multi30k/dynamicconv/results.json"),
    Measurement("multi30k-rnn-shalev", "cpu", "fp32", 1596, "results/shalev-multi30k/de-en/results.json"),
    Measurement("flickr8k-show-tell", "cpu", "fp32", 975, "results/shalev-captioning/show-tell/results.json"),
    Measurement(
        "flickr8k-show-attend-tell", "cpu", "fp32", 497, "results/shalev-captioning/show-attend-tell/results.json"
    ),
    Measurement("ptb-gpt-tiny", "h100", "fp32", 132_500, "BENCHMARKS-cuda.md (embtie train ptb-gpt-tiny, 300 steps)"),
    Measurement("multi30k-transformer-small", "h100", "fp32", 61_700, "results/multi30k-h100/results.csv"),
)

SHAPE_KEYS = ("model.", "sharing.options", "data.dataset", "data.vocab", "data.src_lang", "data.tgt_lang",
              "data.batch_size", "data.bptt", "data.max_tokens", "data.max_sentences", "train.precision")  # fmt: skip
"""override keys (prefixes) that change what a step computes: a measurement of the preset does not apply."""


def lookup(preset: str, hardware: str, precision: str, overrides: list[str]) -> Measurement | None:
    """The measurement of ``preset`` on ``hardware`` at ``precision``, unless an override changes its shape."""
    if any(o.split("=", 1)[0].startswith(SHAPE_KEYS) for o in overrides):
        return None
    for m in MEASURED:
        if (m.preset, m.hardware, m.precision) == (preset, hardware, precision):
            return m
    return None
