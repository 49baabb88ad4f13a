"""Factorized embeddings (``factor_rank``, ALBERT) with every strategy: the formula applied to the rows
of A B, the memory-lean loss equal to the plain one in float64 (values and gradients, gradcheck)
without ever forming the (V, d) product, and the parameter counts V r + r d."""

from __future__ import annotations

import pytest
import torch

from embtie import sharing
from embtie.errors import ConfigError
from embtie.sharing import chunked_ce
from embtie.sharing.head import Head
from loss_checks import (
    CHUNKED,
    assert_same,
    one_thread,  # noqa: F401  (autouse fixture)
    run_loss,
)

V, D, R, N, CHUNK = 11, 8, 3, 7, 3


def _accepts(name: str, **options) -> bool:
    """Whether ``name`` takes these options (a strategy that cannot says so with a ConfigError)."""
    try:
        sharing.build(name, vocab_size=V, dim=D, **options)
    except ConfigError:
        return False
    return True


NAMES = [n for n in sharing.names() if _accepts(n, factor_rank=R)]


def _pair(name: str, **options) -> tuple[sharing.SharingStrategy, sharing.SharingStrategy]:
    """(factorized strategy, the unfactorized one with E = A B and every other tensor copied), float64."""
    torch.manual_seed(sum(map(ord, name)))
    f = sharing.build(name, vocab_size=V, dim=D, factor_rank=R, **options).double()
    with torch.no_grad():
        for p in f.parameters():
            if p.dim() == 1 or p.dim() == 0:
                p.add_(torch.randn_like(p) * 0.3)  # biases, scales, temperatures off their init
    u = sharing.build(name, vocab_size=V, dim=D, **options).double()
    state = {k: v for k, v in f.state_dict().items() if k != "factor_b"}
    state["weight"] = f.embedding_matrix().detach()
    u.load_state_dict(state)
    return f, u


def _inputs(ignore: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    h = torch.randn(N, D, generator=g, dtype=torch.float64) * 1.5
    t = torch.randint(0, V, (N,), generator=g)
    if ignore:
        t[1] = -100
    return h, t


OPTIONS = [{}, {"bias": True, "logit_scale": "learned", "softcap": 3.0}]


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", OPTIONS, ids=["plain", "bias-scale-cap"])
def test_factorized_is_the_strategy_on_the_rows_of_ab(name, options):
    f, u = _pair(name, **options)
    assert f.weight.shape == (V, R) and f.factor_b.shape == (R, D)
    h, _ = _inputs()
    ids = torch.randint(0, V, (4, 3))
    torch.testing.assert_close(f.logits(h), u.logits(h), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(f.embed(ids), u.embed(ids), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(f.input_vectors(), u.input_vectors(), rtol=1e-12, atol=1e-12)


def test_factorized_formulas_written_out():
    """l2norm normalizes the rows of A B, cosine divides by their norms, distance subtracts ||.||^2/2."""
    torch.manual_seed(0)
    h = torch.randn(5, D, dtype=torch.float64)
    for name, ref in {
        "l2norm": lambda e: h @ (e / e.norm(dim=1, keepdim=True)).T,
        "cosine": lambda e: (h @ e.T) / e.norm(dim=1),
        "sqnorm": lambda e: (h @ e.T) / (e * e).sum(1),
        "distance": lambda e: h @ e.T - 0.5 * (e * e).sum(1),
    }.items():
        s = sharing.build(name, vocab_size=V, dim=D, factor_rank=R).double()
        e = s.weight @ s.factor_b
        torch.testing.assert_close(s.logits(h), ref(e), rtol=1e-12, atol=1e-12)
    s = sharing.build("l2norm", vocab_size=V, dim=D, factor_rank=R).double()
    e = s.weight @ s.factor_b
    torch.testing.assert_close(s.embed(torch.arange(V)), e / e.norm(dim=1, keepdim=True))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", OPTIONS, ids=["plain", "bias-scale-cap"])
def test_factorized_memory_lean_loss_equals_plain(name, options, monkeypatch):
    f, _ = _pair(name, **options)
    h, t = _inputs()
    ref = run_loss(f, h, t, impl="plain", label_smoothing=0.1)
    if f.head().factor is not None:
        assert {"weight", "factor_b"} <= set(ref[2])
    for impl, sync_free in CHUNKED:
        monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)
        assert_same(ref, run_loss(f, h, t, impl=impl, chunk_size=CHUNK, label_smoothing=0.1))


@pytest.mark.parametrize("name", NAMES)
def test_factorized_gradcheck(name, monkeypatch):
    f, _ = _pair(name, bias=True, logit_scale="learned")
    h, t = _inputs()
    h.requires_grad_(True)
    params = [p for p in f.parameters() if p.requires_grad]
    for impl, sync_free in [("plain", None), ("chunked", None), ("recompute", True)]:
        monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)

        def fn(x, *ps, impl=impl):
            return f.loss(x, t, impl=impl, chunk_size=CHUNK, label_smoothing=0.1)

        used = torch.autograd.grad(fn(h), params, allow_unused=True)
        assert torch.autograd.gradcheck(fn, (h, *[p for p, g in zip(params, used, strict=True) if g is not None]))


@pytest.mark.parametrize("name", ["tied", "l2norm", "cosine", "sqnorm", "distance", "ngpt"])
def test_memory_lean_loss_never_forms_the_v_by_d_product(name, monkeypatch):
    """The chunked loss folds B into the hidden side: Head.matrix (the A B product) is never called and
    the chunk matmul is over r columns."""
    f, _ = _pair(name)
    h, t = _inputs()
    ref = run_loss(f, h, t, impl="plain")

    def refuse(self):
        raise AssertionError("the (V, d) product A B was formed")

    monkeypatch.setattr(Head, "matrix", refuse)
    widths = []
    real = chunked_ce.ChunkedCrossEntropy.apply
    monkeypatch.setattr(
        chunked_ce.ChunkedCrossEntropy, "apply", lambda x, w, *a: widths.append(w.shape) or real(x, w, *a)
    )
    assert_same(ref, run_loss(f, h, t, impl="chunked", chunk_size=CHUNK))
    assert widths == [(V, R)]


def test_parameter_counts_and_rank_validation():
    v, d = 1000, 64
    for name in ("tied", "l2norm"):
        full = sharing.build(name, vocab_size=v, dim=d).parameter_counts()["learned"]
        fact = sharing.build(name, vocab_size=v, dim=d, factor_rank=d // 4).parameter_counts()
        assert full == v * d and fact == {"learned": v * d // 4 + d * d // 4, "fixed": 0}
    untied = sharing.build("untied", vocab_size=v, dim=d, factor_rank=8).parameter_counts()["learned"]
    assert untied == v * 8 + 8 * d + v * d  # E factorized, the separate O whole
    for bad in (0, d + 1, 2.5, True):
        with pytest.raises(ConfigError, match="factor_rank"):
            sharing.build("tied", vocab_size=v, dim=d, factor_rank=bad)


def test_factorized_init_has_the_variance_of_e():
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=4000, dim=64, factor_rank=16, init_std=0.05)
    assert abs(float(s.embedding_matrix().detach().std()) - 0.05) < 0.004
