"""Beam search's fast paths (source entries neither reordered nor expanded per beam; grouped
cross-attention) give the same hypotheses as reordering every state entry of every row."""

from __future__ import annotations

import types

import pytest
import torch

from embtie import sharing
from embtie.data.subwords import PAD
from embtie.evaluation.beam_search import TOPK_BLOCK, beam_search, row_topk
from embtie.models.seq2seq import Seq2Seq
from embtie.models.transformer_mt import TransformerMT, TransformerMTConfig


def test_beam_search_without_reordering_source_state_is_unchanged():
    torch.manual_seed(0)
    cfg = TransformerMTConfig(dim=16, enc_layers=1, dec_layers=2, heads=2, ffn_dim=32, dropout=0.0, max_positions=64)
    model = TransformerMT(cfg, sharing.build("tied", vocab_size=23, dim=16)).eval()
    assert model.source_state_keys
    src = torch.randint(4, 23, (5, 7))
    for row, n in enumerate([7, 3, 5, 1, 6]):  # different lengths: sentences finish at different steps
        src[row, n:] = PAD
    fast = beam_search(model, src, beam=3, max_len_ratio=1.5, max_len_extra=2)
    state = model.reorder_state(model.start(src), torch.arange(5).repeat_interleave(3))
    assert state["beams"] == 3 and state["mem_k"][0].shape[0] == 5  # memory kept once per sentence
    # the reference: every entry of every row reordered at every step, memory expanded per beam
    model.source_state_keys = ()
    model.reorder_state = types.MethodType(Seq2Seq.reorder_state, model)
    slow = beam_search(model, src, beam=3, max_len_ratio=1.5, max_len_extra=2)
    assert [h.tokens for h in fast] == [h.tokens for h in slow]
    assert [h.score for h in fast] == pytest.approx([h.score for h in slow], rel=1e-5)
    assert len({len(h.tokens) for h in fast}) > 1  # the case where rows are dropped mid-search is covered


@pytest.mark.parametrize("v", [6000, 5 * TOPK_BLOCK * 4, 37, 40 * TOPK_BLOCK + 77])
def test_row_topk_equals_torch_topk(v):
    g = torch.Generator().manual_seed(v)
    x = torch.randn(9, v, generator=g)
    x[2] = float("-inf")  # a row forced to end: only one finite entry
    x[2, 5] = -3.0
    x[3, -1] = 50.0  # the largest entry in the tail outside the whole blocks
    x[4, :] = torch.arange(v, dtype=torch.float32)  # the largest entries all in the last block(s)
    for k in (1, 10):
        ref, got = x.topk(k, dim=1), row_topk(x, k)
        assert torch.equal(got[0], ref[0])
        finite = torch.isfinite(ref[0])
        assert torch.equal(got[1][finite], ref[1][finite])
