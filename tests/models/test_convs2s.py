"""ConvS2S: shapes, pad invariance, causality, incremental == full, decoding, strategies, a tiny run."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from embtie import sharing
from embtie.config import load_config
from embtie.evaluation.beam_search import beam_search, greedy
from embtie.models import model_class
from embtie.models.convs2s import ConvS2S, ConvS2SConfig
from embtie.models.seq2seq import PlainEmbedding
from embtie.training import train
from embtie.training.metrics_log import read_metrics

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))

V = 23
D = 16


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def make(strategy: str = "tied", joint: bool = True, dropout: float = 0.1) -> ConvS2S:
    torch.manual_seed(0)
    tgt = sharing.build(strategy, vocab_size=V, dim=D)
    src = None if joint else PlainEmbedding(V + 5, D)
    cfg = ConvS2SConfig(
        dim=D,
        encoder_layers=[[12, 3], [12, 3], [20, 2]],  # a channel change (residual projection), an even kernel
        decoder_layers=[[12, 3], [20, 4], [20, 1]],
        dropout=dropout,
        max_positions=64,
    )
    return ConvS2S(cfg, tgt, src).eval()


def batch() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, V, (3, 7), generator=g)
    src[1, 5:] = 0  # padding
    src[2, 3:] = 0
    tgt_in = torch.randint(4, V, (3, 6), generator=g)
    tgt_in[:, 0] = 2
    return src, tgt_in


def test_registered_and_shapes():
    assert model_class("convs2s") is ConvS2S
    model = make()
    src, tgt_in = batch()
    assert model(src, tgt_in).shape == (3, 6, D)
    state = model.start(src)
    assert state["keys"].shape == state["values"].shape == (3, 7, D)
    assert [tuple(b.shape) for b in state["conv"]] == [(3, 2, 12), (3, 3, 12), (3, 0, 20)]
    logits, state = model.next_logits(tgt_in[:, 0], state)
    assert logits.shape == (3, V) and state["pos"] == 1


def test_bad_layer_lists_are_config_errors():
    from embtie.errors import ConfigError

    for bad in ([], [[12]], [[12, 0]], [[12, 3.5]]):
        with pytest.raises(ConfigError):
            ConvS2SConfig(encoder_layers=bad)


def test_padding_does_not_change_outputs():
    model = make()
    src, tgt_in = batch()
    h = model(src, tgt_in)
    for i in range(3):  # each sentence alone, without pads
        n = int((src[i] != 0).sum())
        assert torch.allclose(h[i : i + 1], model(src[i : i + 1, :n], tgt_in[i : i + 1]), atol=1e-5)
    longer = torch.cat([src, torch.zeros(3, 4, dtype=src.dtype)], 1)
    assert torch.allclose(model(longer, tgt_in), h, atol=1e-5)


def test_pad_vectors_do_not_leak():
    """Whatever vectors the pads get (another pad row, other position vectors), real outputs stay."""
    model = make()
    src, tgt_in = batch()
    h = model(src, tgt_in)
    with torch.no_grad():
        model.sharing.weight[0].add_(torch.randn(D) * 10)  # the pad id's row
        model.enc_pos.weight[5:].add_(1.0)  # positions 5.. are pads in rows 1 and 2, real in row 0
    h2 = model(src, tgt_in)
    assert torch.allclose(h[1:], h2[1:], atol=1e-5)
    assert not torch.allclose(h[0], h2[0])


def test_causal():
    model = make()
    src, tgt_in = batch()
    h = model(src, tgt_in)
    changed = tgt_in.clone()
    changed[:, 4:] = torch.randint(4, V, (3, 2))
    h2 = model(src, changed)
    assert torch.allclose(h[:, :4], h2[:, :4], atol=1e-6)
    assert not torch.allclose(h[:, 4:], h2[:, 4:])


@pytest.mark.parametrize("joint", [True, False], ids=["joint", "separate"])
def test_incremental_logits_equal_full_forward(joint):
    model = make(joint=joint)
    src, tgt_in = batch()
    with torch.no_grad():
        full = model.sharing.logits(model(src, tgt_in)).float()
        state = model.start(src)
        for t in range(tgt_in.shape[1]):
            z, state = model.next_logits(tgt_in[:, t], state)
            assert (z - full[:, t]).abs().max() < 1e-5


def _full_rerun(model: ConvS2S) -> ConvS2S:
    """The same model, decoding by re-running the full forward pass on the growing prefix."""

    class Rerun(ConvS2S):
        def start(self, src):
            return {"src": src, "prefix": src.new_zeros((src.shape[0], 0))}

        def step(self, prev, state):
            prefix = torch.cat([state["prefix"], prev[:, None]], 1)
            h = ConvS2S.forward(self, state["src"], prefix)[:, -1]
            return h, {"src": state["src"], "prefix": prefix}

    other = Rerun(model.config, model.sharing, None if model.three_way_tied else model.src_embed)
    other.load_state_dict(model.state_dict())
    return other.eval()


@pytest.mark.parametrize("beam", [1, 4])
def test_decoding_equals_decoding_by_full_forward(beam):
    model = make(joint=False, strategy="untied")
    ref = _full_rerun(model)
    src, _ = batch()
    kw = {"max_len_ratio": 1.0, "max_len_extra": 3}
    if beam == 1:
        a, b = greedy(model, src, **kw), greedy(ref, src, **kw)
    else:
        a, b = beam_search(model, src, beam=beam, **kw), beam_search(ref, src, beam=beam, **kw)
    assert [h.tokens for h in a] == [h.tokens for h in b]
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-4)
    assert any(len(h.tokens) > 0 for h in a)


@pytest.mark.parametrize("strategy", sharing.names())
def test_every_strategy_trains_one_step(strategy):
    model = make(strategy=strategy).train()
    src, tgt_in = batch()
    tgt_out = torch.cat([tgt_in[:, 1:], torch.full((3, 1), 3)], 1)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=1e-2)
    out = model.sharing.loss(model(src, tgt_in), tgt_out)
    loss = (out[0] if isinstance(out, tuple) else out).float().mean() + model.regularization()
    opt.zero_grad()
    loss.backward()
    assert all(torch.isfinite(p.grad).all() for p in params if p.grad is not None)
    assert model.enc_in.weight.grad is not None and model.attention[0].in_proj.weight.grad is not None
    opt.step()
    with torch.no_grad():
        assert torch.isfinite(model.eval()(src, tgt_in)).all()


def test_tiny_training_run_loss_falls(tmp_path):
    overrides = ["data.vocab_size=200", "data.train_pairs=400", "data.valid_pairs=40", "data.max_tokens=512",
                 "model.dim=32", "model.encoder_layers=[[32,3],[32,3]]", "model.decoder_layers=[[32,3],[32,3]]",
                 "model.dropout=0.0", "train.max_steps=20", "train.warmup_steps=5", "train.lr=0.003",
                 "train.log_every=1", "train.threads=1", "train.progress=false"]  # fmt: skip
    train(load_config("multi30k-convs2s-small", overrides), tmp_path)
    losses = [r["loss"] for r in read_metrics(tmp_path) if r["split"] == "train"]
    assert len(losses) >= 2 and losses[-1] < losses[0] - 0.1


def test_presets_load():
    small = load_config("multi30k-convs2s-small")
    assert small.model.name == "convs2s" and small.model.dim == 256
    assert small.model.encoder_layers == [[256, 3]] * 4 and small.model.decoder_layers == [[256, 3]] * 3
    paper = load_config("wmt14-convs2s-paper")
    layers = [[512, 3]] * 9 + [[1024, 3]] * 4 + [[2048, 1]] * 2
    assert paper.model.encoder_layers == layers and paper.model.decoder_layers == layers
    assert paper.model.dim == 768
