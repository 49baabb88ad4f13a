"""GPT and LSTM language models, perplexity arithmetic, schedules, parameter groups, and tying
through a checkpoint round trip."""

import math
import os
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from embtie import sharing
from embtie.config import load_config
from embtie.evaluation.loss_meter import LossMeter, perplexity
from embtie.models.gpt import GPT, GPTConfig
from embtie.models.lstm_lm import LSTMLM, LSTMConfig
from embtie.rundir import checkpoints
from embtie.tasks.lm import LMTask
from embtie.training.optim import lr_factor, param_groups

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
V = 50


def _gpt(strategy: str = "tied", **kw) -> GPT:
    cfg = GPTConfig(dim=16, n_layers=2, n_heads=2, max_len=12, **kw)
    return GPT(cfg, sharing.build(strategy, vocab_size=V, dim=16))


@pytest.mark.parametrize("positions", ["learned", "rotary"])
def test_gpt_is_causal(positions):
    torch.manual_seed(0)
    m = _gpt(positions=positions).eval()
    ids = torch.randint(0, V, (2, 10))
    ids2 = ids.clone()
    ids2[:, 6:] = (ids2[:, 6:] + 1) % V
    h, h2 = m(ids), m(ids2)
    assert h.shape == (2, 10, 16)
    assert torch.allclose(h[:, :6], h2[:, :6], atol=1e-6)
    assert not torch.allclose(h[:, 6:], h2[:, 6:], atol=1e-3)


def test_zero_init_residual_starts_as_a_bigram_model():
    """Su's regime: with zero residual branches and rotary positions, h = RMSNorm(embed(i)) at step 0."""
    torch.manual_seed(0)
    m = _gpt(positions="rotary", norm="rmsnorm", zero_init_residual=True, bias=False)
    ids = torch.randint(0, V, (3, 12))
    e = m.sharing.embed(ids)
    expected = e * torch.rsqrt(e.pow(2).mean(-1, keepdim=True) + torch.finfo(e.dtype).eps)
    assert torch.allclose(m(ids), expected, atol=1e-5)
    # and not without it
    assert not torch.allclose(_gpt(positions="rotary", norm="rmsnorm")(ids), expected, atol=1e-3)


def test_gpt_refuses_a_strategy_of_another_width():
    from embtie.errors import ConfigError

    with pytest.raises(ConfigError, match=r"width 8 != model.dim=16"):
        GPT(GPTConfig(dim=16, n_heads=2), sharing.build("tied", vocab_size=V, dim=8))


def test_lstm_init_projection_and_state_carry():
    torch.manual_seed(0)
    cfg = LSTMConfig(emb_dim=8, hidden=12, n_layers=2, init_range=0.1)
    m = LSTMLM(cfg, sharing.build("tied", vocab_size=V, dim=8, init_range=0.1))
    for p in m.parameters():
        assert p.abs().max() <= 0.1 and p.abs().max() > 0.05
    assert m.proj is not None and m.proj.weight.shape == (8, 12)
    ids = torch.randint(0, V, (2, 10))
    h_all, _ = m(ids)
    h1, st = m(ids[:, :4])
    h2, _ = m(ids[:, 4:], st)
    assert h_all.shape == (2, 10, 8)
    assert torch.allclose(h_all, torch.cat([h1, h2], 1), atol=1e-6)
    assert LSTMLM(LSTMConfig(emb_dim=8, hidden=8), sharing.build("tied", vocab_size=V, dim=8)).proj is None


def test_perplexity_is_token_weighted():
    m = LossMeter()
    m.add(2.0, 10)
    m.add(4.0, 30)
    assert m.loss == pytest.approx((20 + 120) / 40)
    assert m.ppl == pytest.approx(math.exp(3.5))
    assert m.ppl != pytest.approx(math.exp((2.0 + 4.0) / 2))
    assert perplexity(0.0, 5) == 1.0


@pytest.mark.parametrize("model", ["gpt", "lstm"])
def test_evaluate_matches_a_hand_computation(model, tmp_path):
    """Task.evaluate on a user file == exp(mean over every predicted token of -log p), by hand."""
    preset = {"gpt": "ptb-gpt-tiny", "lstm": "ptb-lstm-small"}[model]
    shape = {
        "gpt": ["model.dim=16", "model.n_layers=1", "model.n_heads=2", "model.max_len=8", "model.dropout=0.1"],
        "lstm": ["model.emb_dim=16", "model.hidden=16", "model.dropout=0.1"],
    }[model]
    cfg = load_config(preset, [*shape, "data.bptt=8", "data.eval_batch_size=3"])
    torch.manual_seed(0)
    task = LMTask(cfg)
    m = task.build_model()
    f = tmp_path / "text.txt"
    f.write_text("".join(f" the {w} said N \n" for w in ["company", "market", "zzznotaword", "bank"] * 5))
    res = task.evaluate(m, "test", path=f)
    ids = task.vocab.encode(
        " ".join(f"the {w} said N <eos>" for w in ["company", "market", "zzznotaword", "bank"] * 5).split()
    )
    assert ids.numel() == 100
    streams = min(3, 100 // 9)  # 3 streams of 33 tokens; the last token of the file is dropped
    data = ids[: 33 * streams].view(streams, 33)
    nll, count = 0.0, 0
    m.eval()
    with torch.no_grad():
        state = None
        for s in range(0, 32, 8):
            x, y = data[:, s : s + 8], data[:, s + 1 : s + 9]
            x = x[:, : y.shape[1]]
            if model == "lstm":
                h, state = m(x, state)
            else:
                h = m(x)
            logp = F.log_softmax(m.sharing.logits(h).double(), -1)
            for b in range(y.shape[0]):
                for t in range(y.shape[1]):
                    nll -= float(logp[b, t, y[b, t]])
                    count += 1
    assert res["tokens"] == count == 3 * 32
    assert res["ppl"] == pytest.approx(math.exp(nll / count), rel=1e-5)


def test_schedules():
    t = load_config("ptb-lstm-small").train  # step: lr for 4 epochs, then halved every epoch
    assert [lr_factor(e * 100, t, 1300, 100) for e in range(7)] == [1, 1, 1, 1, 0.5, 0.25, 0.125]
    g = load_config("ptb-gpt-tiny", ["train.warmup_steps=10", "train.min_lr_ratio=0.1"]).train
    assert lr_factor(0, g, 110, 50) == pytest.approx(0.1) and lr_factor(9, g, 110, 50) == 1.0
    assert lr_factor(10, g, 110, 50) == 1.0 and lr_factor(109, g, 110, 50) == pytest.approx(0.1)
    assert lr_factor(60, g, 111, 50) == pytest.approx(0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * 0.5)))
    inv = load_config("ptb-gpt-tiny", ["train.schedule=inverse_sqrt", "train.warmup_steps=100"]).train
    assert lr_factor(399, inv, 1000, 50) == pytest.approx(0.5)
    lin = load_config("ptb-gpt-tiny", ["train.schedule=linear", "train.warmup_steps=0"]).train
    assert lr_factor(50, lin, 101, 50) == pytest.approx(1 - 0.9 * 0.5)  # preset min_lr_ratio 0.1


def test_param_groups_put_embeddings_apart():
    cfg = load_config("ptb-gpt-tiny", ["train.embedding_weight_decay=0.01", "model.bias=true", "model.norm=layernorm"])
    m = GPT(GPTConfig(dim=16, n_heads=2, bias=True), sharing.build("untied", vocab_size=V, dim=16, bias=True))
    groups = {g["name"]: g for g in param_groups(m, cfg.train)}
    emb = groups["embedding"]["params"]
    assert len(emb) == 2 and any(p is m.sharing.weight for p in emb) and any(p is m.sharing.out_weight for p in emb)
    assert groups["embedding"]["weight_decay"] == 0.01 and groups["decay"]["weight_decay"] == 0.1
    assert all(p.dim() == 1 for p in groups["no_decay"]["params"]) and groups["no_decay"]["weight_decay"] == 0.0
    assert sum(len(g["params"]) for g in groups.values()) == len(list(m.parameters()))


class _Aliased(nn.Module):
    """A model that refers to its tied matrix from a second module (as Hugging Face models do)."""

    def __init__(self) -> None:
        super().__init__()
        self.sharing = sharing.build("tied", vocab_size=V, dim=8)
        self.lm_head = nn.Linear(8, V, bias=False)
        self.lm_head.weight = self.sharing.weight


@pytest.mark.parametrize("strategy", ["tied", "tied-proj", "untied", "fixed"])
def test_tying_survives_checkpoint_round_trip(strategy, tmp_path):
    torch.manual_seed(0)
    a = _gpt(strategy=strategy)
    with torch.no_grad():
        for p in a.parameters():
            p.add_(0.01)
    checkpoints.begin(tmp_path, 1)
    opt = torch.optim.SGD(a.parameters(), lr=0.1)
    checkpoints.commit(tmp_path, 1, a, opt, {"step": 1})
    torch.manual_seed(1)
    b = _gpt(strategy=strategy)
    checkpoints.load_weights(b, checkpoints.latest(tmp_path))
    for (na, pa), (nb, pb) in zip(a.state_dict().items(), b.state_dict().items(), strict=True):
        assert na == nb and torch.equal(pa, pb), na
    if strategy.startswith("tied"):
        assert b.sharing.head().weight is b.sharing.weight
    ids = torch.randint(0, V, (1, 5))
    assert torch.equal(a.sharing.logits(a(ids)), b.sharing.logits(b(ids)))

    c = _Aliased()
    checkpoints.begin(tmp_path, 2)
    checkpoints.commit(tmp_path, 2, c, torch.optim.SGD(c.parameters(), lr=0.1), {"step": 2})
    d = _Aliased()
    d.lm_head.weight = nn.Parameter(torch.zeros(V, 8))  # untie, then loading must restore one tensor's values
    d.lm_head.weight = d.sharing.weight
    checkpoints.load_weights(d, checkpoints.latest(tmp_path))
    assert d.lm_head.weight is d.sharing.weight and torch.equal(d.sharing.weight, c.sharing.weight)
