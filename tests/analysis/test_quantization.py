"""Fake quantization of the vocabulary tables (``embtie analyze --quantize``): the per-row rule against
hand-computed grids, the roles a strategy's stored tensors play (a tied matrix quantized once), and the
perplexity change of a tiny trained run (finite; zero where the format is lossless for the matrix)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest
import torch

from embtie import sharing
from embtie.analysis import quantization_table
from embtie.analysis.quantization import fake_quantize, parse_formats
from embtie.analysis.quantized_tables import quantized, stored_tables
from embtie.cli import main
from embtie.config import load_config
from embtie.errors import ConfigError
from embtie.rundir.loading import load_run
from embtie.training import train
from tiny_runs import TINY_GPT_BODY

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))


def test_int4_by_hand():
    w = torch.tensor([[1.75, 0.375, -0.625, 0.1], [-3.5, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    # row 0: scale 1.75 / 7 = 0.25; 0.375 / 0.25 = 1.5 -> 2 and -2.5 -> -2 (half to even), 0.4 -> 0
    # row 1: scale 3.5 / 7 = 0.5 -> -7, 2, 0, 4; row 2: all zero, stays zero
    want = torch.tensor([[1.75, 0.5, -0.5, 0.0], [-3.5, 1.0, 0.0, 2.0], [0.0, 0.0, 0.0, 0.0]])
    assert torch.equal(fake_quantize(w, "int4"), want)


def test_int8_by_hand():
    w = torch.tensor([[127 / 64, 2.5 / 64, -1.5 / 64, 0.5], [1.0, 0.3, -0.7, 0.0]])
    got = fake_quantize(w, "int8")
    # row 0: scale 1/64 -> 127, 2 (2.5 to even), -2 (-1.5 to even), 32
    assert torch.equal(got[0], torch.tensor([127.0, 2.0, -2.0, 32.0]) / 64)
    # row 1: scale 1/127 -> round(38.1) = 38, round(-88.9) = -89
    assert torch.equal(got[1], torch.tensor([127.0, 38.0, -89.0, 0.0]) * (torch.tensor(1.0) / 127))
    assert torch.equal(w[1], torch.tensor([1.0, 0.3, -0.7, 0.0]))  # the input is left as it was


def test_rows_on_the_grid_come_back_unchanged():
    torch.manual_seed(0)
    for fmt, q in (("int8", 127), ("int4", 7)):
        k = torch.randint(-q, q + 1, (20, 6)).float()
        k[:, 0] = q  # each row reaches the end of the grid: its scale is 2^-3 exactly
        w = k * 2.0**-3
        assert torch.equal(fake_quantize(w, fmt), w)
        assert not torch.equal(fake_quantize(w + 0.01, fmt), w + 0.01)


def test_formats_are_parsed_and_unknown_ones_refused():
    assert parse_formats("int8, int4,int8") == ("int8", "int4")
    with pytest.raises(ConfigError, match=r"^--quantize 'int3': no such format; choose from int8, int4"):
        parse_formats("int8,int3")
    with pytest.raises(ConfigError, match="no such format"):
        parse_formats("")


def _vocab_model(name: str) -> sharing.SharingStrategy:
    torch.manual_seed(1)
    return sharing.build(name, vocab_size=12, dim=8)


def test_a_tied_matrix_is_quantized_once_and_read_by_both_roles():
    s = _vocab_model("tied")
    e = s.weight.detach().clone()
    ids = torch.arange(12)
    with quantized(s, "int4", "both") as q:
        assert q.input is q.output and torch.equal(q.input, fake_quantize(e, "int4"))
        assert torch.equal(s.embed(ids), q.input)  # the lookup reads the dequantized rows
        assert s.head().weight is q.input  # and the head the very same tensor
    assert torch.equal(s.weight, e) and torch.equal(s.embed(ids), e) and s.head().weight is s.weight
    assert stored_tables(s).shared and stored_tables(s).output == "weight"
    with quantized(s, "int4", "input") as q:
        assert q.output is None and torch.equal(s.embed(ids), q.input) and s.head().weight is s.weight
    with quantized(s, "int4", "output") as q:
        assert q.input is None and torch.equal(s.embed(ids), e) and torch.equal(s.head().weight, q.output)


def test_untied_quantizes_each_matrix_on_its_own():
    s = _vocab_model("untied")
    assert stored_tables(s) == stored_tables(s).__class__(input="weight", output="out_weight", shared=False)
    with quantized(s, "int8", "both") as q:
        assert q.input is not q.output
        assert torch.equal(q.output, fake_quantize(s.out_weight, "int8"))
        assert torch.equal(s.embed(torch.arange(12)), fake_quantize(s.weight, "int8"))


def test_l2norm_normalises_the_quantized_rows():
    s = _vocab_model("l2norm")
    h = torch.randn(3, 8)
    with quantized(s, "int4", "both") as q:
        assert q.input is not None
        unit = q.input / q.input.norm(dim=-1, keepdim=True)
        assert torch.allclose(s.embed(torch.arange(12)), unit, atol=1e-6)
        assert torch.allclose(s.logits(h), h @ unit.T, atol=1e-5)


def test_quantized_evaluation_equals_a_model_storing_the_quantized_matrices():
    """The roles through a whole loss: quantizing both tables of tied (once) and untied (each) is the
    model whose stored tables were replaced by their dequantized copies."""
    h, y = torch.randn(2, 5, 8), torch.randint(0, 12, (2, 5))
    for name, tables in (("tied", ["weight"]), ("untied", ["weight", "out_weight"])):
        s = _vocab_model(name)
        ids = torch.randint(0, 12, (2, 5))
        with quantized(s, "int4", "both"):
            got = s.loss(h + s.embed(ids), y)
        for t in tables:
            getattr(s, t).data = fake_quantize(getattr(s, t), "int4")
        assert torch.equal(got, s.loss(h + s.embed(ids), y))


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("quant") / "run"
    train(load_config("ptb-gpt-tiny", [*TINY_GPT_BODY, "train.max_steps=4", "train.eval_every=0"]), out)
    return out


def test_perplexity_change_of_a_trained_run_and_its_files(run):
    table = quantization_table.measure(run, ["int8", "int4"])
    cells = [(f, t) for f in ("int8", "int4") for t in ("input", "output", "both")]
    assert table.baseline is not None and table.shared and [(c.format, c.tables) for c in table.cells] == cells
    for c in table.cells:
        assert math.isfinite(c.ppl) and c.ppl_change == c.ppl - table.baseline.ppl
        assert c.bpb is not None and c.bpb_change == c.bpb - table.baseline.bpb
    saved = json.loads((run / "analysis" / "quantization.json").read_text(encoding="utf-8"))
    assert saved == table.to_json() and saved["provenance"]["step"] == 4
    md = (run / "analysis" / "quantization.md").read_text(encoding="utf-8")
    assert f"| int4 | both | {table.cells[-1].ppl:.3f} |" in md
    assert quantization_table.read(run) == table  # current: nothing is evaluated again


def test_zero_change_where_the_format_is_lossless(run):
    loaded = load_run(run)
    s, task = loaded.model.sharing, loaded.task
    with torch.no_grad():  # rows on the int4 grid: entries k 2^-5 with |k| <= 7 and one |k| = 7 per row
        k = torch.clamp(torch.round(s.weight * 2**5), -7, 7)
        k[:, 0] = 7
        s.weight.copy_(k * 2.0**-5)
    full = task.evaluate(loaded.model, "valid")
    for fmt in ("int4", "int8"):  # the int4 grid is not int8's: int8 changes the loss
        with quantized(s, fmt, "both"):
            q = task.evaluate(loaded.model, "valid")
        assert (q["ppl"] == full["ppl"]) == (fmt == "int4")
    assert math.isfinite(full["ppl"])


def test_cli_refuses_an_unknown_format_in_one_line(run, capsys):
    assert main(["analyze", str(run), "--quantize", "int8,fp3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--quantize 'fp3': no such format; choose from int8, int4" in err


FLAT = [n for n in sharing.names() if n != "adaptive"]


@pytest.mark.parametrize("name", FLAT)
def test_every_flat_strategy_is_unchanged_when_its_stored_tables_are_on_the_grid(name):
    """Every strategy with one flat table evaluates with its tables quantized (a finite loss that moves),
    and not at all when the stored tensors both roles read are on the int4 grid."""
    torch.manual_seed(2)
    s = sharing.build(name, vocab_size=16, dim=8)
    h, y = torch.randn(3, 4, 8), torch.randint(0, 16, (3, 4))
    ids = torch.randint(0, 16, (3, 4))
    with torch.no_grad():
        before = s.loss(h + s.embed(ids), y)
        with quantized(s, "int4", "both"):
            moved = s.loss(h + s.embed(ids), y)
        assert torch.isfinite(moved) and moved != before
        roles = stored_tables(s)
        for attr in dict.fromkeys((roles.input, roles.output)):
            t = getattr(s, attr)
            k = torch.clamp(torch.round(t * 2**3), -7, 7)
            k[:, 0] = 7
            t.copy_(k * 2.0**-3)
        full = s.loss(h + s.embed(ids), y)
        with quantized(s, "int4", "both"):
            assert torch.equal(s.loss(h + s.embed(ids), y), full)


def test_adaptive_is_refused_in_one_line():
    s = sharing.build("adaptive", vocab_size=40, dim=8, cutoffs=[10, 20])
    with pytest.raises(ConfigError, match="keeps per-cluster tables, not one"):
        stored_tables(s)


def test_a_damaged_table_is_measured_again(run):
    quantization_table.measure(run, ["int4"], ["both"], baseline=False)
    p = run / "analysis" / "quantization.json"
    for damaged in ('{"version": 1, "cells": []}', "not json", '{"version": 99}'):
        p.write_text(damaged, encoding="utf-8")
        assert quantization_table.read(run) is None
        table = quantization_table.measure(run, ["int4"], ["both"], baseline=False)
        assert table.cell("int4", "both") is not None and quantization_table.read(run) == table
