"""Adaptive input + adaptive softmax (sharing strategy ``adaptive``): exact log-probabilities, the
within-cluster formulas against an independent reference, the loss, gradients, tying, parameter
counts, the frequency-sorted vocabulary and a short training run."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from embtie import models, sharing
from embtie.config import load_config
from embtie.data.lm_corpora import Vocab
from embtie.errors import ConfigError
from embtie.tasks.lm import LMTask
from embtie.training.optim import param_groups
from loss_checks import one_thread  # noqa: F401  (autouse fixture)

V, D, CUT = 40, 16, [6, 18]  # clusters [0, 6), [6, 18), [18, 40) of widths 16, 4, 1

VARIANTS = {
    "tied": {},
    "tie-proj": {"tie_projections": True},
    "untied": {"tie_weights": False},
    "l2norm": {"within": "l2norm"},
    "cosine-untied": {"within": "cosine", "tie_weights": False},
    "sqnorm": {"within": "sqnorm"},
    "distance-options": {"within": "distance", "bias": True, "logit_scale": "learned", "softcap": 4.0},
}


def build(dtype=torch.float32, **options) -> sharing.SharingStrategy:
    torch.manual_seed(0)
    s = sharing.build("adaptive", vocab_size=V, dim=D, cutoffs=CUT, **options).to(dtype)
    with torch.no_grad():
        for b in (s.bias, s.cluster_bias):
            if b is not None:
                b.normal_(0.0, 0.5)
        if s.logit_scale_param is not None:
            s.logit_scale_param.fill_(1.3)
    return s


def reference_log_probs(s, h: torch.Tensor) -> torch.Tensor:
    """log p(w | h) written directly from the definitions: effective rows W_i = O_i Q_i^T formed
    explicitly, each formula applied to their rows, log p = log p_head(cluster) + log p_cluster(w)."""
    bounds, k = s.layout.bounds, s.layout.n_tails
    out_tables = s.out_tables if s.out_tables is not None else s.tables

    def rows(i):
        q = s._proj(i, output=True)
        return out_tables[i] if q is None else out_tables[i] @ q.T

    def logits(w, b):
        sq = (w * w).sum(-1)
        z = {
            "tied": h @ w.T,
            "l2norm": h @ (w / sq.sqrt()[:, None]).T,
            "cosine": (h @ w.T) / sq.sqrt(),
            "sqnorm": (h @ w.T) / sq,
            "distance": h @ w.T - 0.5 * sq,
        }[s.within]
        if s.logit_scale_param is not None:
            z = z * s.logit_scale_param
        if b is not None:
            z = z + b
        return z if s.softcap is None else s.softcap * torch.tanh(z / s.softcap)

    bias = (lambda lo, hi: None) if s.bias is None else (lambda lo, hi: s.bias[lo:hi])
    head_b = None if s.bias is None else torch.cat([s.bias[: bounds[1]], s.cluster_bias])
    head = torch.log_softmax(logits(torch.cat([rows(0), s.cluster_weight]), head_b), -1)
    parts = [head[:, : bounds[1]]]
    for i in range(1, k + 1):
        tail = torch.log_softmax(logits(rows(i), bias(bounds[i], bounds[i + 1])), -1)
        parts.append(tail + head[:, bounds[1] + i - 1 : bounds[1] + i])
    return torch.cat(parts, -1)


@pytest.mark.parametrize("variant", VARIANTS)
def test_distribution_is_exact_and_sums_to_one(variant):
    s = build(torch.float64, **VARIANTS[variant])
    h = torch.randn(3, 5, D, dtype=torch.float64) * 2
    lp = s.logits(h)
    assert lp.shape == (3, 5, V)
    torch.testing.assert_close(lp.exp().sum(-1), torch.ones(3, 5, dtype=torch.float64), rtol=0, atol=1e-12)
    torch.testing.assert_close(lp.reshape(-1, V), reference_log_probs(s, h.reshape(-1, D)), rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(s.log_probs(h), lp, rtol=0, atol=1e-12)


@pytest.mark.parametrize("variant", VARIANTS)
def test_loss_is_minus_mean_log_p_of_targets(variant):
    s = build(torch.float64, **VARIANTS[variant])
    h = torch.randn(4, 9, D, dtype=torch.float64)
    t = torch.randint(0, V, (4, 9))
    t[0, :4] = -100
    lp = s.logits(h)
    keep = t != -100
    expected = -lp[keep].gather(1, t[keep].unsqueeze(1)).mean()
    torch.testing.assert_close(s.loss(h, t), expected, rtol=1e-12, atol=0)
    torch.testing.assert_close(s.loss(h, t, impl="plain"), expected, rtol=1e-12, atol=0)
    smoothed = F.cross_entropy(lp.reshape(-1, V), t.reshape(-1), label_smoothing=0.1)
    torch.testing.assert_close(s.loss(h, t, label_smoothing=0.1), smoothed, rtol=1e-12, atol=0)
    assert torch.isnan(s.loss(h, torch.full_like(t, -100)))


def test_tail_softmax_runs_only_on_tokens_of_that_tail():
    s = build()
    h = torch.randn(30, D)
    t = torch.tensor([0] * 20 + [7] * 7 + [30] * 3)  # 20 head, 7 in tail 1, 3 in tail 2
    calls: list[tuple[int, int]] = []
    original = s.cluster_logits
    s.cluster_logits = lambda i, x: calls.append((i, x.shape[0])) or original(i, x)
    s.loss(h, t)
    assert calls == [(0, 30), (1, 7), (2, 3)]


@pytest.mark.parametrize("variant", ["tied", "l2norm", "distance-options", "cosine-untied"])
def test_gradcheck_float64(variant):
    s = build(torch.float64, **VARIANTS[variant])
    params = [p for p in s.parameters() if p.requires_grad]
    h = torch.randn(6, D, dtype=torch.float64, requires_grad=True)
    t = torch.tensor([0, 5, 7, 17, 18, 39])
    ids = torch.tensor([1, 8, 30])

    names = [n for n, p in s.named_parameters() if p.requires_grad]

    class Both(torch.nn.Module):  # loss (output side) + a function of the input vectors (input side)
        def __init__(self):
            super().__init__()
            self.s = s

        def forward(self, h):
            return self.s.loss(h, t) + self.s.embed(ids).pow(2).sum() * 0.1

    both = Both()

    def f(h, *ps):
        return torch.func.functional_call(both, {f"s.{n}": p for n, p in zip(names, ps)}, (h,))

    assert torch.autograd.gradcheck(f, (h, *params), eps=1e-6, atol=1e-6)


def test_tied_tables_and_projections():
    s = build(tie_projections=True)
    h = torch.randn(5, D)
    # z_w = x_w . h within every cluster: the effective output rows are the input vectors
    torch.testing.assert_close(s.output_vectors(), s.input_vectors())
    assert s.out_tables is None and s.out_projections is None
    ids = torch.arange(V)
    torch.testing.assert_close(s.embed(ids), s.input_vectors())
    x1 = s.tables[1][7 - 6] @ s.projections[0].T  # word 7: tail 1, width 4, projection P_1 (16, 4)
    torch.testing.assert_close(s.embed(torch.tensor([7]))[0], x1)
    z = s.cluster_logits(1, h)
    torch.testing.assert_close(z, h @ s.input_vectors()[6:18].T, rtol=1e-5, atol=1e-5)


def test_l2norm_within_normalizes_effective_rows_on_both_sides():
    s = build(within="l2norm")
    n_in = s.input_vectors().norm(dim=-1)
    n_out = s.output_vectors().norm(dim=-1)
    torch.testing.assert_close(n_in, torch.ones(V))
    torch.testing.assert_close(n_out, torch.ones(V))
    # and the projection of a tail is not orthonormal after a change, yet rows stay unit: Gram-based norms
    with torch.no_grad():
        for p in [*s.projections, *s.out_projections]:
            p.mul_(torch.linspace(0.5, 2.0, p.shape[1]))
    torch.testing.assert_close(s.output_vectors().norm(dim=-1), torch.ones(V))


def test_parameter_counts_and_widths():
    widths, sizes = [16, 4, 1], [6, 12, 22]
    tables = sum(v * w for v, w in zip(sizes, widths))
    proj = D * (4 + 1)
    cluster = 2 * D
    assert build().parameter_counts()["learned"] == tables + 2 * proj + cluster
    assert build(tie_projections=True).parameter_counts()["learned"] == tables + proj + cluster
    assert build(tie_weights=False).parameter_counts()["learned"] == 2 * tables + 2 * proj + cluster
    assert build(bias=True).parameter_counts()["learned"] == tables + 2 * proj + cluster + V + 2
    s = sharing.build("adaptive", vocab_size=33278, dim=256)
    assert s.layout.bounds == (0, 2000, 10000, 33278) and s.layout.widths == (256, 64, 16)
    assert sharing.build("adaptive", vocab_size=100, dim=16, div_factor=2).layout.widths == (16, 8)


def test_effective_rows_start_with_flat_norms():
    """Tables ~ init_std sqrt(d / d_i) and orthonormal projections: every effective row has the expected
    squared norm d * init_std^2 of a flat E's row."""
    s = sharing.build("adaptive", vocab_size=4000, dim=64, cutoffs=[500, 1500])
    with torch.no_grad():
        sq = s.input_vectors().pow(2).sum(-1)
    for lo, hi in [(0, 500), (500, 1500), (1500, 4000)]:
        assert abs(float(sq[lo:hi].mean()) - 64 * s.init_std**2) < 0.1 * 64 * s.init_std**2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cutoffs": [10, 5]}, "increase strictly"),
        ({"cutoffs": "2000"}, "list"),
        ({"cutoffs": [0, 5]}, "positive"),
        ({"div_factor": 0.5}, "div_factor"),
        ({"within": "ngpt"}, "within"),
        ({"tie_weights": False, "tie_projections": True}, "tie_projections"),
        ({"tie_weights": "yes"}, "true or false"),
        ({"factor_rank": 4}, "factor_rank"),
    ],
)
def test_bad_options_are_refused(options, message):
    with pytest.raises(ConfigError, match=message):
        sharing.build("adaptive", vocab_size=V, dim=D, **options)


def test_cutoffs_past_the_vocabulary_are_dropped():
    assert sharing.build("adaptive", vocab_size=V, dim=D, cutoffs=[6, 2000]).layout.bounds == (0, 6, V)
    s = sharing.build("adaptive", vocab_size=2, dim=D, cutoffs=[2000, 10000])  # the config check's stand-in
    h = torch.randn(3, D)
    torch.testing.assert_close(s.logits(h), torch.log_softmax(h @ s.tables[0].T, -1))


def test_lm_task_needs_a_frequency_sorted_vocabulary():
    cfg = load_config("wikitext2-gpt-adaptive", ["model.dim=16", "model.n_heads=2"])
    words = [f"w{i}" for i in range(V)]
    sorted_vocab = Vocab(words, list(range(2 * V, V, -1)))
    model = LMTask(cfg, sorted_vocab).build_model()
    assert model.sharing.vocab_size == V
    unsorted = Vocab(words, [5, 9, *([1] * (V - 2))])
    with pytest.raises(ConfigError, match="decreasing training frequency"):
        LMTask(cfg, unsorted).build_model()
    assert Vocab.from_tokens(["b", "a", "b", "c", "b", "a", "<unk>"]).counts == [3, 2, 1, 1]


def test_tables_go_to_the_embedding_group():
    cfg = load_config("wikitext2-gpt-adaptive", ["model.dim=16", "model.n_heads=2"])
    s = build()
    model = models.build(cfg.model, s)
    groups = {g["name"]: {id(p) for p in g["params"]} for g in param_groups(model, cfg.train)}
    assert {id(p) for p in s.vocabulary_tables()} == groups["embedding"]
    assert all(id(p) in groups["decay"] for p in s.projections)


def test_state_dict_round_trip_and_a_short_training_run():
    cfg = load_config("wikitext2-gpt-adaptive", ["model.dim=16", "model.n_heads=2", "model.n_layers=1"])
    torch.manual_seed(0)
    model = models.build(cfg.model, build(tie_weights=False, within="l2norm"))
    g = torch.Generator().manual_seed(3)
    # a Zipf-like stream: frequent words are the low ids, as in a frequency-sorted vocabulary
    probs = 1.0 / torch.arange(1, V + 1, dtype=torch.float64)
    ids = torch.multinomial(probs / probs.sum(), 8 * 17, replacement=True, generator=g).view(8, 17)
    ids[:, 1::2] = (ids[:, 0:-1:2] * 7 + 3) % V  # a learnable next-word rule
    x, y = ids[:, :-1], ids[:, 1:]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    losses = []
    for _ in range(40):
        loss = model.sharing.loss(model(x), y)
        losses.append(float(loss.detach()))
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert losses[-1] < losses[0] - 1.0 and losses[0] == pytest.approx(math.log(V), abs=0.5)
    twin = models.build(
        cfg.model, sharing.build("adaptive", vocab_size=V, dim=D, cutoffs=CUT, tie_weights=False, within="l2norm")
    )
    twin.load_state_dict(model.state_dict())
    torch.testing.assert_close(twin.sharing.logits(twin(x)), model.sharing.logits(model(x)))
