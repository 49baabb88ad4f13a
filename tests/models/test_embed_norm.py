"""model.embed_norm (modded-nanogpt's x = norm(embed(ids))): the first block reads RMS-normalised input
vectors (plus learned positions, added after the norm), for any strategy, with no new parameter."""

from __future__ import annotations

import pytest
import torch

from embtie import sharing
from embtie.models.gpt import GPT, GPTConfig

V, D = 40, 16


def _first_block_input(model: GPT, ids: torch.Tensor) -> torch.Tensor:
    seen: list[torch.Tensor] = []
    handle = model.blocks[0].register_forward_pre_hook(lambda _m, args: seen.append(args[0].detach()))
    model(ids)
    handle.remove()
    return seen[0]


@pytest.mark.parametrize("name", ["untied", "l2norm", "tied"])
def test_the_first_block_reads_unit_rms_vectors(name):
    torch.manual_seed(0)
    options = {"embed_scale": "sqrt_d"} if name == "tied" else {}
    s = sharing.build(name, vocab_size=V, dim=D, **options)
    cfg = GPTConfig(dim=D, n_heads=2, n_layers=1, max_len=8, positions="rotary", embed_norm=True)
    model = GPT(cfg, s)
    ids = torch.randint(0, V, (2, 8))
    x = _first_block_input(model, ids)
    rms = x.pow(2).mean(-1).sqrt()
    assert torch.allclose(rms, torch.ones_like(rms), atol=1e-5)
    e = s.embed(ids).detach()
    assert torch.allclose(x, e / e.pow(2).mean(-1, keepdim=True).sqrt(), atol=1e-6)
    plain = GPT(GPTConfig(dim=D, n_heads=2, n_layers=1, max_len=8, positions="rotary"), s)
    assert not torch.allclose(_first_block_input(plain, ids).pow(2).mean(-1).sqrt(), rms, atol=1e-2)
    assert sum(p.numel() for p in model.parameters()) == sum(p.numel() for p in plain.parameters())


def test_learned_positions_are_added_after_the_norm():
    torch.manual_seed(1)
    s = sharing.build("untied", vocab_size=V, dim=D)
    model = GPT(GPTConfig(dim=D, n_heads=2, n_layers=1, max_len=8, embed_norm=True), s)
    ids = torch.randint(0, V, (2, 8))
    e = s.embed(ids).detach()
    expected = e / e.pow(2).mean(-1, keepdim=True).sqrt() + model.pos.weight[:8].detach()
    assert torch.allclose(_first_block_input(model, ids), expected, atol=1e-6)
