"""Every strategy computes exactly its formula (the strategy table in README.md), on both sides."""

import math

import pytest
import torch
import torch.nn.functional as F

from embtie import sharing

V, D = 37, 12


def _unit(w):
    return w / w.norm(dim=-1, keepdim=True)


def reference_logits(s, h):
    """Direct computation of each strategy's formula, written independently of the Head machinery."""
    E = s.weight
    n = s.name
    if n == "untied":
        return h @ s.out_weight.T
    if n in ("tied", "tied-loginit", "tied-gradscale"):
        return h @ E.T
    if n == "tie-untie":
        return h @ (s.out_weight if s.is_untied else E).T
    if n == "l2norm":
        return h @ _unit(E).T
    if n == "sqnorm":
        return (h @ E.T) / (E * E).sum(-1)
    if n == "distance":
        return h @ E.T - 0.5 * (E * E).sum(-1)
    if n == "cosine":
        return (h @ E.T) / E.norm(dim=-1)
    if n in ("fixed", "hadamard"):
        g = h if s.proj is None else h @ s.proj.weight.T
        return g @ s.fixed_weight.T
    if n == "tied-proj":
        return (h @ s.proj.weight.T) @ E.T
    if n == "tied-bert":
        return (h @ s.dense.weight.T) @ E.T
    if n == "tied-shuffle":
        half = h.shape[-1] // 2
        return torch.cat([h[..., half:], h[..., :half]], -1) @ E.T
    if n == "ngpt":
        return s.effective_token_scale() * (_unit(h) @ _unit(E).T)
    raise AssertionError(f"no reference for {n}")


def reference_inputs(s, ids):
    return _unit(s.weight[ids]) if s.name in ("l2norm", "ngpt") else s.weight[ids]

FLAT = [n for n in sharing.names() if sharing.get(n).flat_table]
"""strategies with one (V, d) table E (adaptive's per-cluster tables are tested in tests/sharing/test_adaptive.py)."""


@pytest.mark.parametrize("name", FLAT)
def test_logits_and_inputs_match_formula(name):
    torch.manual_seed(0)
    s = sharing.build(name, vocab_size=V, dim=D)
    h = torch.randn(3, 5, D)
    ids = torch.randint(0, V, (3, 5))
    torch.testing.assert_close(s.logits(h), reference_logits(s, h), rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(s.embed(ids), reference_inputs(s, ids))
    torch.testing.assert_close(s.input_vectors()[ids], s.embed(ids))


@pytest.mark.parametrize("name", FLAT)
def test_common_options_compose_as_documented(name):
    """z = softcap(s * z_formula + b) with the distance bias scaled too; inputs times embed_scale."""
    torch.manual_seed(1)
    cap, scale = 3.0, 0.7
    s = sharing.build(name, vocab_size=V, dim=D, bias=True, logit_scale=scale, softcap=cap, embed_scale="sqrt_d")
    with torch.no_grad():
        s.bias.normal_()
    h = torch.randn(4, D)
    expected = cap * torch.tanh((scale * reference_logits(s, h) + s.bias) / cap)
    torch.testing.assert_close(s.logits(h), expected, rtol=1e-5, atol=1e-5)
    ids = torch.tensor([0, 5, V - 1])
    torch.testing.assert_close(s.embed(ids), reference_inputs(s, ids) * math.sqrt(D))


def test_output_vectors_are_the_rows_the_logits_are_taken_against():
    torch.manual_seed(2)
    for name in ("tied", "sqnorm", "cosine", "l2norm", "fixed", "ngpt"):
        s = sharing.build(name, vocab_size=V, dim=D, logit_scale=0.5)
        h = torch.randn(6, D)
        torch.testing.assert_close(s.transform(h) @ s.output_vectors().T, s.logits(h), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", sharing.names())
def test_loss_is_cross_entropy_of_logits(name):
    torch.manual_seed(3)
    s = sharing.build(name, vocab_size=V, dim=D)
    h = torch.randn(2, 7, D)
    t = torch.randint(0, V, (2, 7))
    t[0, :3] = -100
    ref = F.cross_entropy(s.logits(h).reshape(-1, V), t.reshape(-1), ignore_index=-100, label_smoothing=0.1)
    torch.testing.assert_close(s.loss(h, t, label_smoothing=0.1), ref)
    t2 = t.clone()
    t2[t2 == -100] = 3
    ref = F.cross_entropy(s.logits(h).reshape(-1, V), t2.reshape(-1), ignore_index=3)
    torch.testing.assert_close(s.loss(h, t2, ignore_index=3), ref)


@pytest.mark.parametrize("name", FLAT)
def test_gradients_reach_what_learns_and_nothing_fixed(name):
    torch.manual_seed(4)
    s = sharing.build(name, vocab_size=V, dim=D)
    ids = torch.randint(0, V, (4, 6))
    h = s.embed(ids)  # input side
    loss = s.loss(h + torch.randn_like(h), torch.randint(0, V, (4, 6))) + s.regularization()
    loss.backward()
    dormant = {"out_weight"} if name == "tie-untie" else set()  # O learns only after the switch
    for pname, p in s.named_parameters():
        if pname in dormant:
            assert p.grad is None, f"{name}: {pname} must not learn while tied"
            continue
        assert p.grad is not None and p.grad.abs().sum() > 0, f"{name}: {pname} received no gradient"
    for bname, b in s.named_buffers():
        assert not b.requires_grad and b.grad is None, f"{name}: buffer {bname} must stay fixed"
    # the output side alone updates rows of tokens that never occurred as inputs, unless it is fixed
    s.zero_grad()
    s.loss(torch.randn(5, D, requires_grad=True), torch.randint(0, V, (5,))).backward()
    grad = s.weight.grad if s.weight.grad is not None else torch.zeros_like(s.weight)
    touched = (grad.abs().sum(-1) > 0).float().mean()
    if name in ("untied", "fixed", "hadamard"):
        assert touched == 0, "the output side of an untied/fixed strategy must not touch E"
    else:
        assert touched == 1, "a tied output layer updates every row of E at every step"


def test_fixed_targets_are_buffers_not_parameters():
    s = sharing.build("fixed", vocab_size=V, dim=D)
    assert "fixed_weight" in dict(s.named_buffers())
    assert all(p is not s.fixed_weight for p in s.parameters())
    before = s.fixed_weight.clone()
    opt = torch.optim.SGD(s.parameters(), lr=1.0)
    s.embed(torch.arange(V)).sum().backward()
    s.loss(torch.randn(8, D, requires_grad=True), torch.randint(0, V, (8,))).backward()
    opt.step()
    torch.testing.assert_close(s.fixed_weight, before, rtol=0, atol=0)
    assert "fixed_weight" in s.state_dict()


def test_fixed_target_init_follows_shalev():
    torch.manual_seed(5)
    raw = sharing.build("fixed", vocab_size=500, dim=64, normalize_rows=False).fixed_weight
    assert raw.abs().max() <= 10 and raw.abs().max() > 9.5  # U[-10, 10]
    assert abs(raw.var().item() - 100 / 3) < 2
    unit = sharing.build("fixed", vocab_size=500, dim=64).fixed_weight
    torch.testing.assert_close(unit.norm(dim=1), torch.ones(500))
    wide = sharing.build("fixed", vocab_size=V, dim=D, target_dim=20)
    assert wide.fixed_weight.shape == (V, 20) and wide.proj.weight.shape == (20, D)


def test_hadamard_rows_are_distinct_unit_and_orthogonal_at_full_width():
    s = sharing.build("hadamard", vocab_size=100, dim=16)
    t = s.fixed_weight
    torch.testing.assert_close(t.norm(dim=1), torch.ones(100))
    assert torch.unique(t, dim=0).shape[0] == 100, "every token needs its own target row"
    full = sharing.build("hadamard", vocab_size=100, dim=16, target_dim=128).fixed_weight
    torch.testing.assert_close(full @ full.T, torch.eye(100), atol=1e-6, rtol=0)
    assert set(torch.unique((full * math.sqrt(128)).round()).tolist()) == {-1.0, 1.0}


def test_parameter_counts():
    v, d = 100, 16
    expected = {
        "untied": (2 * v * d, 0),
        "tied": (v * d, 0),
        "tied-loginit": (v * d, 0),
        "l2norm": (v * d, 0),
        "sqnorm": (v * d, 0),
        "distance": (v * d, 0),
        "cosine": (v * d, 0),
        "fixed": (v * d, v * d),
        "hadamard": (v * d, v * d),
        "tied-proj": (v * d + d * d, 0),
        "tied-bert": (v * d + d * d, 0),
        "tied-shuffle": (v * d, 0),
        "ngpt": (v * d + v, 0),
        "tie-untie": (2 * v * d, 0),
        "tied-gradscale": (v * d, 0),
    }
    for name, (learned, fixed) in expected.items():
        assert sharing.build(name, vocab_size=v, dim=d).parameter_counts() == {"learned": learned, "fixed": fixed}
    c = sharing.build("fixed", vocab_size=v, dim=d, target_dim=8, bias=True).parameter_counts()
    assert c == {"learned": v * d + 8 * d + v, "fixed": v * 8}


def test_tied_proj_regularisation_value():
    s = sharing.build("tied-proj", vocab_size=V, dim=D, proj_reg=0.3, proj_reg_tokens=10)
    expected = 0.3 * s.proj.weight.pow(2).sum() / 20
    torch.testing.assert_close(s.regularization(), expected)
    assert float(sharing.build("tied", vocab_size=V, dim=D).regularization()) == 0.0


def test_init_options():
    torch.manual_seed(6)
    s = sharing.build("tied-loginit", vocab_size=1000, dim=100)
    assert abs(s.weight.std().item() - math.log(1000) / 100) < 0.005
    s = sharing.build("tied", vocab_size=1000, dim=100)
    assert abs(s.weight.std().item() - 0.1) < 0.005
    s = sharing.build("untied", vocab_size=1000, dim=100, init_range=0.1)
    assert s.weight.abs().max() <= 0.1 and s.out_weight.abs().max() <= 0.1
    s = sharing.build("tied", vocab_size=1000, dim=100, init_std=0.02)
    assert abs(s.weight.std().item() - 0.02) < 0.002


def test_learned_logit_scale_is_a_parameter_that_learns():
    s = sharing.build("fixed", vocab_size=V, dim=D, logit_scale="learned", logit_scale_init=2.0)
    assert float(s.logit_scale().detach()) == 2.0
    s.loss(torch.randn(4, D), torch.randint(0, V, (4,))).backward()
    assert s.logit_scale_param.grad is not None and s.logit_scale_param.grad != 0


def test_shuffle_groups_is_channel_shuffle():
    s = sharing.build("tied-shuffle", vocab_size=V, dim=6, groups=3)
    assert s.transform(torch.arange(6.0)).tolist() == [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    s = sharing.build("tied-shuffle", vocab_size=V, dim=6)
    assert s.transform(torch.arange(6.0)).tolist() == [3.0, 4.0, 5.0, 0.0, 1.0, 2.0]


def test_three_way_tying_shares_one_tensor():
    """Encoder input, decoder input and output all read one sharing object: gradients add up in one E."""
    s = sharing.build("l2norm", vocab_size=V, dim=D)
    src, tgt_in, tgt_out = (torch.randint(0, V, (2, 5)) for _ in range(3))
    enc = s.embed(src).mean(1, keepdim=True)
    dec = s.embed(tgt_in) + enc
    s.loss(dec, tgt_out).backward()
    assert sum(1 for _ in s.parameters()) == 1 and s.weight.grad is not None
    assert s.weight.grad[src[0, 0]].abs().sum() > 0
