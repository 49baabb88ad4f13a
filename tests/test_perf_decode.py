"""Beam search's fast path (source-only state entries are not reordered) gives the same hypotheses."""

from __future__ import annotations

import torch

from embtie import sharing
from embtie.data.subwords import PAD
from embtie.decode import beam_search
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
    model.source_state_keys = ()  # every entry reordered at every step: the reference
    slow = beam_search(model, src, beam=3, max_len_ratio=1.5, max_len_extra=2)
    assert [h.tokens for h in fast] == [h.tokens for h in slow]
    assert [h.score for h in fast] == [h.score for h in slow]
    assert len({len(h.tokens) for h in fast}) > 1  # the case where rows are dropped mid-search is covered
