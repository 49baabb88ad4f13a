"""lightconv / dynamicconv translation models: the convolutions against naive loops, incremental
decoding against the full forward pass, beam search against a brute-force re-run, sharing, training."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor

from embtie import sharing
from embtie.config import load_config
from embtie.data.subwords import PAD
from embtie.errors import ConfigError
from embtie.evaluation.beam_search import beam_search, greedy
from embtie.models.conv_mt import ConvMT, DynamicConvMT, DynamicConvMTConfig, LightConvMT, LightConvMTConfig
from embtie.models.conv_ops import TimeConv, dynamic_conv, encoder_padding, lightweight_conv
from embtie.models.seq2seq import PlainEmbedding, map_state

torch.set_num_threads(1)
V = 23


# ------------------------------------------------------------------ naive references (explicit loops)
def naive_conv(x: Tensor, weight: Tensor, padding_l: int) -> Tensor:
    """x (B, T, C); weight (H, K) or per-step (B, T, H, K): y[b,t,c] = sum_j w[j] x[b, t-P+j, c]."""
    b, t, c = x.shape
    h, k = weight.shape[-2:]
    y = torch.zeros_like(x)
    for bi in range(b):
        for ti in range(t):
            for ci in range(c):
                head = ci // (c // h)
                for j in range(k):
                    src = ti - padding_l + j
                    if 0 <= src < t:
                        w = weight[head, j] if weight.dim() == 2 else weight[bi, ti, head, j]
                        y[bi, ti, ci] += w * x[bi, src, ci]
    return y


CASES = [(k, h, t, causal) for k in (1, 2, 3, 4, 7) for h, t in ((1, 5), (2, 9), (4, 3)) for causal in (False, True)]


@pytest.mark.parametrize("k,h,t,causal", CASES)
def test_convolutions_match_naive_loops(k: int, h: int, t: int, causal: bool) -> None:
    g = torch.Generator().manual_seed(k * 100 + h * 10 + t)
    x = torch.randn(2, t, 8, generator=g, dtype=torch.float64)
    pad = k - 1 if causal else encoder_padding(k)
    w_light = torch.softmax(torch.randn(h, k, generator=g, dtype=torch.float64), -1)
    w_dyn = torch.softmax(torch.randn(2, t, h, k, generator=g, dtype=torch.float64), -1)
    assert torch.allclose(lightweight_conv(x, w_light, pad), naive_conv(x, w_light, pad), atol=1e-12)
    assert torch.allclose(dynamic_conv(x, w_dyn, pad), naive_conv(x, w_dyn, pad), atol=1e-12)


def test_encoder_padding_is_symmetric_for_odd_kernels():
    assert [encoder_padding(k) for k in (1, 3, 7, 31, 4)] == [0, 1, 3, 15, 1]


@pytest.mark.parametrize("dynamic", [False, True])
@pytest.mark.parametrize("k", [1, 3, 5])
def test_time_conv_step_equals_full_causal_conv(dynamic, k):
    torch.manual_seed(k)
    conv = TimeConv(8, 2, k, weight_dropout=0.1, dynamic=dynamic).eval()
    x = torch.randn(3, 7, 8)
    full = conv(x, k - 1)
    window = conv.initial_window(x[:, 0])
    steps = []
    for t in range(x.shape[1]):
        y, window = conv.step(x[:, t], window)
        steps.append(y)
        assert window.shape == (3, k - 1, 8)
    assert (torch.stack(steps, 1) - full).abs().max() < 1e-6


@pytest.mark.parametrize("dynamic", [False, True])
def test_kernels_are_softmax_normalised_with_dropconnect_in_training_only(dynamic):
    torch.manual_seed(0)
    conv = TimeConv(8, 2, 5, weight_dropout=0.5, dynamic=dynamic)
    x = torch.randn(4, 6, 8)
    conv.eval()
    w = conv.kernels(x)
    assert w.shape[-2:] == (2, 5) and torch.allclose(w.sum(-1), torch.ones(()))
    conv.train()
    w = conv.kernels(x)
    assert bool((w == 0).any())  # dropped connections
    kept = w[w != 0]
    assert bool((kept > 0).all())


# ------------------------------------------------------------------ models
def make(dynamic: bool, *, pre_norm: bool = True, joint: bool = True, strategy: str = "tied", **kw) -> ConvMT:
    torch.manual_seed(0)
    tgt = sharing.build(strategy, vocab_size=V, dim=16)
    src = tgt if joint else PlainEmbedding(V + 5, 16)
    cls, cfg_cls = (DynamicConvMT, DynamicConvMTConfig) if dynamic else (LightConvMT, LightConvMTConfig)
    args = dict(dim=16, heads=2, ffn_dim=32, enc_kernels=[3, 4, 5], dec_kernels=[2, 3, 5], dropout=0.1)
    cfg = cfg_cls(**{**args, "pre_norm": pre_norm, **kw})
    return cls(cfg, tgt, src).eval()


def batch() -> tuple[Tensor, Tensor]:
    g = torch.Generator().manual_seed(1)
    src = torch.randint(4, V, (3, 7), generator=g)
    src[1, 5:] = PAD
    src[2, 3:] = PAD
    tgt_in = torch.randint(4, V, (3, 6), generator=g)
    tgt_in[:, 0] = 2
    return src, tgt_in


KINDS = [(False, True), (False, False), (True, True), (True, False)]
KIND_IDS = ["light-pre", "light-post", "dyn-pre", "dyn-post"]


@pytest.mark.parametrize("dynamic,pre_norm", KINDS, ids=KIND_IDS)
def test_incremental_logits_equal_the_full_forward_pass(dynamic, pre_norm):
    model = make(dynamic, pre_norm=pre_norm)
    src, tgt_in = batch()
    full = model.sharing.logits(model(src, tgt_in)).float()
    state = model.start(src)
    for t in range(tgt_in.shape[1]):
        z, state = model.next_logits(tgt_in[:, t], state)
        assert (z - full[:, t]).abs().max() < 1e-5
    assert [w.shape[1] for w in state["windows"]] == [1, 2, 4]  # K-1 inputs per layer, never more


@pytest.mark.parametrize("dynamic", [False, True])
def test_padding_never_leaks_into_the_encoding(dynamic):
    model = make(dynamic)
    src, tgt_in = batch()
    h_batch = model(src, tgt_in)
    for i in (1, 2):
        n = int((src[i] != PAD).sum())
        alone = model(src[i : i + 1, :n], tgt_in[i : i + 1])
        assert (h_batch[i : i + 1] - alone).abs().max() < 1e-5
    other = src.clone()
    other[2, 3:] = 7  # real tokens where the pads were: the comparison above is sensitive to them
    assert not torch.allclose(model(other, tgt_in)[2], h_batch[2])


class FullRerun:
    """Brute force: every step re-runs the model's full (non-incremental) forward pass on the prefix."""

    source_state_keys: tuple[str, ...] = ()

    def __init__(self, model) -> None:
        self.model = model
        self.max_positions = model.max_positions

    def start(self, src: Tensor) -> dict:
        return {"src": src, "prefix": torch.empty(src.shape[0], 0, dtype=torch.long)}

    def reorder_state(self, state: dict, index: Tensor) -> dict:
        return map_state(state, lambda t: t.index_select(0, index))

    def next_logprobs(self, prev: Tensor, state: dict) -> tuple[Tensor, dict]:
        prefix = torch.cat([state["prefix"], prev[:, None]], 1)
        z = self.model.sharing.logits(self.model(state["src"], prefix)[:, -1]).float()
        return F.log_softmax(z, -1), {**state, "prefix": prefix}


@pytest.mark.parametrize("dynamic", [False, True])
def test_greedy_and_beam_search_equal_a_brute_force_rerun(dynamic):
    model = make(dynamic, joint=False, strategy="untied")
    src, _ = batch()
    opts = dict(max_len_ratio=1.0, max_len_extra=4)
    for search, kw in ((greedy, {}), (beam_search, {"beam": 1}), (beam_search, {"beam": 3, "lenpen": 0.6})):
        fast, slow = search(model, src, **kw, **opts), search(FullRerun(model), src, **kw, **opts)
        assert [h.tokens for h in fast] == [h.tokens for h in slow]
        assert [h.score for h in fast] == pytest.approx([h.score for h in slow], abs=1e-4)


def test_reorder_state_groups_beams_and_expands_otherwise():
    model = make(True)
    src, _ = batch()
    state = model.start(src)
    beams = model.reorder_state(state, torch.tensor([0, 0, 1, 1, 2, 2]))
    assert beams["beams"] == 2 and beams["mem_k"][0].shape[0] == 3 and beams["windows"][0].shape[0] == 6
    dropped = model.reorder_state(beams, torch.tensor([2, 3, 4, 5]))  # sentence 0 finished
    assert dropped["beams"] == 2 and dropped["mask"].shape[0] == 2
    mixed = model.reorder_state(state, torch.tensor([2, 0]))
    assert mixed["beams"] == 1 and torch.equal(mixed["mask"], state["mask"][[2, 0]])


@pytest.mark.parametrize("strategy", sharing.names())
def test_every_sharing_strategy_plugs_in(strategy):
    model = make(True, strategy=strategy)
    model.train()
    src, tgt_in = batch()
    h = model(src, tgt_in)
    loss = model.sharing.loss(h, tgt_in.roll(-1, 1), ignore_index=PAD) + model.regularization()
    loss.backward()
    assert torch.isfinite(loss)
    assert model.decoder[0].block.conv.weight_linear.weight.grad is not None


@pytest.mark.parametrize("dynamic", [False, True])
def test_three_way_tying_is_one_tensor_and_separate_vocabularies_are_not(dynamic):
    tied = make(dynamic, joint=True)
    assert tied.three_way_tied and tied.src_embed.weight is tied.sharing.weight
    n_tied = sum(p.numel() for p in tied.parameters())
    sep = make(dynamic, joint=False)
    assert sum(p.numel() for p in sep.parameters()) == n_tied + (V + 5) * 16


def test_config_validation_and_presets():
    with pytest.raises(ConfigError, match="enc_kernels"):
        LightConvMTConfig(enc_kernels=[])
    with pytest.raises(ConfigError, match="dec_kernels"):
        DynamicConvMTConfig(dec_kernels=[3, 0])
    with pytest.raises(ConfigError, match="divisible"):
        LightConvMTConfig(dim=10, heads=4)
    for name, kind in (("multi30k-lightconv-small", "lightconv"), ("multi30k-dynamicconv-small", "dynamicconv")):
        cfg = load_config(name, ["model.enc_kernels=[3,5]"])
        assert cfg.model.name == kind and cfg.model.enc_kernels == [3, 5]
        assert cfg.data.vocab == "joint" and cfg.data.share_encoder_embedding


def test_tiny_dynamicconv_trains_through_the_pipeline(tmp_path):
    from embtie.training import train
    from embtie.training.metrics_log import read_metrics

    overrides = [
        "data.vocab_size=200",
        "data.train_pairs=400",
        "data.valid_pairs=40",
        "data.max_tokens=1200",
        "model.dim=32",
        "model.heads=2",
        "model.ffn_dim=64",
        "model.enc_kernels=[3,5]",
        "model.dec_kernels=[3,5]",
        "model.dropout=0.0",
        "model.max_positions=128",
        "train.lr=0.003",
        "train.warmup_steps=5",
        "train.epochs=null",
        "train.max_steps=20",
        "train.log_every=4",
        "train.eval_batches=1",
        "train.threads=1",
        "train.progress=false",
    ]
    run = tmp_path / "run"
    train(load_config("multi30k-dynamicconv-small", overrides), run)
    losses = [r["loss"] for r in read_metrics(run) if r["split"] == "train"]
    assert len(losses) >= 2 and losses[-1] < losses[0] - 0.5
