"""A model that fails to compile on the machine's torch is a row of findings, not the end of the section:
on 2026-11-27 torch 2.11's Dynamo stopped the GPU campaign's first step at embtie's first strategy."""

from __future__ import annotations

import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import compile_speed  # noqa: E402


def test_a_failing_model_is_named_and_the_others_are_measured(monkeypatch):
    def measure(name, shape, device, repeats):
        if name == "untied":
            raise RuntimeError("Unexpected type in sourceless builder\nmore")
        return {"ratio": 1.5, "eager": 2.0, "compiled": 1.0}

    monkeypatch.setattr(compile_speed, "measure", measure)
    monkeypatch.setattr(compile_speed, "matmul_peak", lambda device: 1e9)
    monkeypatch.setattr(compile_speed, "_row", lambda shape, name, m, flops, peak: [name, m["ratio"]])
    sec = compile_speed.run("cpu", 1, ("tiny",), ("tied", "untied"), reference=False)
    assert sec.figures == {"compiled_speedup[tiny,tied]": 1.5}
    assert f"Failed (torch {torch.__version__}): ptb-gpt-tiny untied (RuntimeError: Unexpected type" in sec.body
    assert "| tied | 1.5 |" in sec.body
