"""The z-loss (``z_loss``, PaLM) and the learned per-token logit temperature (``token_temperature``,
as nGPT's s) as options of every strategy: values against their formulas, the memory-lean loss equal
to the plain one in float64 (values and gradients), gradcheck."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from embtie import sharing
from embtie.errors import ConfigError
from embtie.sharing import chunked_ce
from loss_checks import (
    CHUNKED,
    assert_same,
    one_thread,  # noqa: F401  (autouse fixture)
    run_loss,
)

V, D, N, CHUNK = 11, 6, 7, 3
LAM = 0.05


def _accepts(name: str, **options) -> bool:
    try:
        sharing.build(name, vocab_size=V, dim=D, **options)
    except ConfigError:
        return False
    return True


Z_NAMES = [n for n in sharing.names() if _accepts(n, z_loss=LAM)]
T_NAMES = [n for n in sharing.names() if _accepts(n, token_temperature=True)]


def _strategy(name: str, **options) -> sharing.SharingStrategy:
    torch.manual_seed(sum(map(ord, name)))
    s = sharing.build(name, vocab_size=V, dim=D, **options).double()
    with torch.no_grad():
        if s.temperature is not None:
            s.temperature.mul_(torch.linspace(0.5, 1.5, V, dtype=torch.float64))
        if s.bias is not None:
            s.bias.normal_(0.0, 0.5)
    return s


def _inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(5)
    h = torch.randn(N, D, generator=g, dtype=torch.float64) * 2.0
    t = torch.randint(0, V, (N,), generator=g)
    t[2] = t[4] = -100
    return h, t


@pytest.mark.parametrize("name", Z_NAMES)
@pytest.mark.parametrize("cap", [None, 3.0])
def test_z_loss_value_and_memory_lean_equality(name, cap, monkeypatch):
    s = _strategy(name, z_loss=LAM, bias=True, softcap=cap)
    h, t = _inputs()
    z = s.logits(h)
    keep = t != -100
    expected = F.cross_entropy(z, t, label_smoothing=0.1) + LAM * torch.logsumexp(z, -1)[keep].square().mean()
    ref = run_loss(s, h, t, impl="plain", label_smoothing=0.1)
    torch.testing.assert_close(ref[0], expected.detach(), rtol=1e-12, atol=0.0)
    without = sharing.build(name, vocab_size=V, dim=D, bias=True, softcap=cap).double()
    without.load_state_dict(s.state_dict())
    with torch.no_grad():
        assert float(ref[0] - without.loss(h, t, impl="plain", label_smoothing=0.1)) > 0
    for impl, sync_free in CHUNKED:
        monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)
        assert_same(ref, run_loss(s, h, t, impl=impl, chunk_size=CHUNK, label_smoothing=0.1))


@pytest.mark.parametrize("name", ["tied", "l2norm", "distance", "ngpt"])
def test_z_loss_gradcheck(name, monkeypatch):
    s = _strategy(name, z_loss=LAM, bias=True, logit_scale="learned", softcap=3.0)
    h, t = _inputs()
    h.requires_grad_(True)
    params = [p for p in s.parameters() if p.requires_grad]
    for impl, sync_free in [("plain", None), ("chunked", None), ("recompute", True)]:
        monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)

        def fn(x, *ps, impl=impl):
            return s.loss(x, t, impl=impl, chunk_size=CHUNK)

        assert torch.autograd.gradcheck(fn, (h, *params))


def test_z_loss_gradient_formula():
    """d(lambda log^2 Z)/dz_j = 2 lambda log Z softmax_j: the loss gradient w.r.t. the logits."""
    torch.manual_seed(0)
    z = torch.randn(4, V, dtype=torch.float64, requires_grad=True)
    t = torch.randint(0, V, (4,))
    s = sharing.build("tied", vocab_size=V, dim=V, z_loss=LAM).double()
    with torch.no_grad():
        s.weight.copy_(torch.eye(V, dtype=torch.float64))  # logits = h
    s.loss(z, t, impl="chunked", chunk_size=CHUNK).backward()
    p = torch.softmax(z.detach(), -1)
    lz = torch.logsumexp(z.detach(), -1, keepdim=True)
    expected = (p * (1 + 2 * LAM * lz) - F.one_hot(t, V)) / 4
    torch.testing.assert_close(z.grad, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", T_NAMES)
def test_token_temperature_multiplies_each_tokens_logit(name, monkeypatch):
    torch.manual_seed(1)
    plain = sharing.build(name, vocab_size=V, dim=D).double()
    torch.manual_seed(1)
    s = sharing.build(name, vocab_size=V, dim=D, token_temperature=True).double()
    h, t = _inputs()
    assert torch.equal(s.logits(h), plain.logits(h)), "tau starts at 1: today's logits"
    assert s.parameter_counts()["learned"] == plain.parameter_counts()["learned"] + V
    with torch.no_grad():
        s.temperature.mul_(torch.linspace(0.5, 1.5, V, dtype=torch.float64))
    struct = plain.head().full_bias()  # distance's -||e||^2/2 is not multiplied
    base = plain.logits(h) if struct is None else plain.logits(h) - struct
    expected = base * s.temperature.detach() + (0 if struct is None else struct.detach())
    torch.testing.assert_close(s.logits(h), expected, rtol=1e-12, atol=1e-12)
    ref = run_loss(s, h, t, impl="plain", label_smoothing=0.1)
    assert "temperature" in ref[2]
    for impl, sync_free in CHUNKED:
        monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)
        assert_same(ref, run_loss(s, h, t, impl=impl, chunk_size=CHUNK, label_smoothing=0.1))


@pytest.mark.parametrize("name", ["l2norm", "cosine"])
def test_token_temperature_gradcheck_and_learning(name):
    s = _strategy(name, token_temperature=True, factor_rank=3)
    h, t = _inputs()
    h.requires_grad_(True)
    params = [p for p in s.parameters() if p.requires_grad]
    assert torch.autograd.gradcheck(lambda x, *ps: s.loss(x, t, impl="chunked", chunk_size=CHUNK), (h, *params))
    opt = torch.optim.Adam([s.temperature], lr=0.05)
    first = float(s.loss(h.detach(), t))
    for _ in range(30):
        opt.zero_grad()
        s.loss(h.detach(), t).backward()
        opt.step()
    assert float(s.loss(h.detach(), t)) < first - 0.05


def test_option_validation():
    for opts, word in (
        ({"z_loss": -1.0}, "z_loss"),
        ({"z_loss": "x"}, "z_loss"),
        ({"token_temperature": 1}, "token_temperature"),
    ):
        with pytest.raises(ConfigError, match=word):
            sharing.build("tied", vocab_size=V, dim=D, **opts)
