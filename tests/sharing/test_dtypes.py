"""Every strategy in float64: the memory-lean loss (chunked, recompute, sync-free), the plain loss and
the logits run in float64 when the strategy's parameters and h are float64, agree with the plain path
to float64 rounding and pass torch.autograd.gradcheck w.r.t. h and every learned tensor they use.

The strategy list comes from the registry, so a new strategy is covered as soon as it registers.
Float32 and bf16 autocast are covered by test_perf_chunked_loss.py (unchanged by float64 support)."""

from __future__ import annotations

import pytest
import torch

from embtie import sharing
from embtie.sharing import chunked_ce, hadamard_transform

NAMES = sharing.names()

V, D, N, CHUNK = 11, 6, 7, 3  # 7 tokens in chunks of 3: three chunks, the last one partial

OPTIONS = {
    "plain": {},
    "bias-learned-scale-softcap": {"bias": True, "logit_scale": "learned", "logit_scale_init": 1.3, "softcap": 3.0},
    # a fixed scale that float32 cannot represent: a float32 rounding of it shows at 1e-10
    "fixed-scale-bias": {"bias": True, "logit_scale": "inv_sqrt_d"},
}

# (impl, SYNC_FREE): the compacting CPU path, its recompute schedule and the masked CUDA path, forced
CHUNKED = [("chunked", None), ("recompute", None), ("chunked", True), ("recompute", True)]


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one thread avoids OpenMP wake-ups that cost more than the work on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _strategy(name: str, vocab: int = V, dim: int = D, **options) -> sharing.SharingStrategy:
    torch.manual_seed(sum(map(ord, name)))
    s = sharing.build(name, vocab_size=vocab, dim=dim, **options).double()
    with torch.no_grad():  # move learned biases/scales off their init so their gradients are generic
        if s.bias is not None:
            s.bias.normal_(0.0, 0.5)
        if s.logit_scale_param is not None:
            s.logit_scale_param.mul_(1.1)
        if getattr(s, "token_scale", None) is not None:
            s.token_scale.mul_(torch.linspace(0.8, 1.2, vocab, dtype=torch.float64))
    return s


def _inputs(ignore: bool, vocab: int = V, dim: int = D, n: int = N) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(11)
    h = torch.randn(n, dim, generator=g, dtype=torch.float64) * 1.5
    t = torch.randint(0, vocab, (n,), generator=g)
    if ignore:
        t[1] = t[5] = -100
    return h, t


LOSS_KW = [
    {},
    {"label_smoothing": 0.1},  # with ignored tokens (the targets of _inputs(True))
]


def _learned(s: sharing.SharingStrategy, fn, h: torch.Tensor) -> list[torch.nn.Parameter]:
    """The parameters ``fn(h)`` depends on (fixed targets are buffers, and the input embedding of the
    fixed classifiers does not reach the output layer)."""
    params = [p for p in s.parameters() if p.requires_grad]
    grads = torch.autograd.grad(fn(h), params, allow_unused=True)
    return [p for p, g in zip(params, grads, strict=True) if g is not None]


def _run(s, h, t, **kw):
    s.zero_grad(set_to_none=True)
    h = h.detach().clone().requires_grad_(True)
    loss = s.loss(h, t, **kw)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in s.named_parameters() if p.grad is not None}
    return loss.detach(), h.grad, grads


def _assert_same(ref, got, rtol=1e-10):
    (l0, h0, g0), (l1, h1, g1) = ref, got
    assert l1.dtype == h1.dtype == torch.float64
    assert all(g.dtype == torch.float64 for g in g1.values())
    torch.testing.assert_close(l1, l0, rtol=rtol, atol=0.0)
    assert set(g0) == set(g1)
    for name, a, b in [("h", h0, h1), *((k, g0[k], g1[k]) for k in g0)]:
        tol = rtol * float(a.abs().max()) + 1e-15
        err = float((a - b).abs().max())
        assert err <= tol, f"gradient of {name}: max error {err:.3g} > {tol:.3g}"


def _set_sync_free(monkeypatch, sync_free: bool | None) -> None:
    monkeypatch.setattr(chunked_ce, "SYNC_FREE", sync_free)


@pytest.mark.parametrize("name", NAMES)
def test_float64_loss_for_every_strategy(name):
    """`s.loss(h, y)` on a `.double()` strategy is float64 and equals the plain loss, for every strategy
    (a float32 workspace or accumulator would fail Float/Double matching or vector_norm's narrowing check)."""
    torch.manual_seed(0)
    s = sharing.build(name, vocab_size=3001, dim=48).double()
    h = torch.randn(1537, 48, dtype=torch.float64)
    y = torch.randint(0, 3001, (1537,))
    with torch.no_grad():
        loss = s.loss(h, y)  # auto: the chunked loss at this size
        ref = s.loss(h, y, impl="plain")
    assert loss.dtype == ref.dtype == torch.float64
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=0.0)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", list(OPTIONS.values()), ids=list(OPTIONS))
def test_float64_chunked_equals_plain(name, options, monkeypatch):
    s = _strategy(name, **options)
    s32 = _strategy(name, **options).float()
    for kw in LOSS_KW:
        h, t = _inputs(ignore=bool(kw))
        ref = _run(s, h, t, impl="plain", **kw)
        assert ref[0].dtype == torch.float64
        if "bias" in options or name not in ("fixed", "hadamard"):
            assert ref[2], "the output layer has learned tensors whose gradients must be compared"
        for impl, sync_free in CHUNKED:
            _set_sync_free(monkeypatch, sync_free)
            _assert_same(ref, _run(s, h, t, impl=impl, chunk_size=CHUNK, **kw))
        _set_sync_free(monkeypatch, None)
        # the same function as in float32, to float32 rounding
        l32 = s32.loss(h.float(), t, impl="chunked", chunk_size=CHUNK, **kw)
        assert l32.dtype == torch.float32
        torch.testing.assert_close(l32.double(), ref[0], rtol=1e-5, atol=1e-6)
    logits = s.logits(h)
    assert logits.dtype == torch.float64
    torch.testing.assert_close(s32.logits(h.float()).double(), logits, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", NAMES)
def test_float64_ignore_index_other_than_default_and_one_chunk(name):
    s = _strategy(name, bias=True)
    h, t = _inputs(ignore=False)
    t[:3] = 4
    ref = _run(s, h, t, ignore_index=4, label_smoothing=0.2, impl="plain")
    for impl in ("chunked", "recompute"):
        _assert_same(ref, _run(s, h, t, ignore_index=4, label_smoothing=0.2, impl=impl))  # default chunk > N


def _gradcheck_loss(s, impl, kw, chunk_size=CHUNK):
    h, t = _inputs(ignore=bool(kw))
    h.requires_grad_(True)
    loss_kw = dict(kw, impl=impl) if impl == "plain" else dict(kw, impl=impl, chunk_size=chunk_size)

    def fn(x, *params):  # params are the strategy's own tensors: gradcheck perturbs them in place
        return s.loss(x, t, **loss_kw)

    params = _learned(s, fn, h)
    assert torch.autograd.gradcheck(fn, (h, *params))
    return params


SMOOTH = {"label_smoothing": 0.1}  # with ignored tokens

# (options, impl, SYNC_FREE, loss options): each schedule and token path once with and once without
# a soft-cap (which decides where the label-smoothing term goes), with a bias and a learned scale
GRADCHECK_CASES = {
    "no-cap": (
        {"bias": True, "logit_scale": "learned", "logit_scale_init": 1.3},
        [("plain", None, SMOOTH), ("chunked", None, SMOOTH), ("recompute", True, SMOOTH), ("chunked", True, {})],
    ),
    "softcap": (
        OPTIONS["bias-learned-scale-softcap"],
        [("plain", None, {}), ("chunked", None, {}), ("recompute", None, SMOOTH), ("chunked", True, SMOOTH)],
    ),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", list(GRADCHECK_CASES))
def test_gradcheck_loss(name, case, monkeypatch):
    options, runs = GRADCHECK_CASES[case]
    s = _strategy(name, **options)
    names = {id(p): k for k, p in s.named_parameters()}
    for impl, sync_free, kw in runs:
        _set_sync_free(monkeypatch, sync_free)
        checked = {names[id(p)] for p in _gradcheck_loss(s, impl, kw)}
        if name in ("fixed", "hadamard"):  # fixed targets: h and the learned scalars only
            assert checked == {"bias", "logit_scale_param"}
        else:
            assert len(checked) > 2, "the output matrix (or projection) was not checked"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("options", list(OPTIONS.values())[:2], ids=list(OPTIONS)[:2])
def test_gradcheck_logits(name, options):
    s = _strategy(name, **options)
    h, _ = _inputs(ignore=False, n=3)
    h.requires_grad_(True)

    def fn(x, *params):
        return s.logits(x)

    params = [p for p in s.parameters() if p.requires_grad]
    used = torch.autograd.grad(fn(h).sum(), params, allow_unused=True)
    params = [p for p, g in zip(params, used, strict=True) if g is not None]
    assert fn(h).dtype == torch.float64
    assert torch.autograd.gradcheck(fn, (h, *params))


@pytest.mark.parametrize("options", [{}, {"bias": True, "logit_scale": "learned", "softcap": 3.0}])
def test_float64_hadamard_fast_transform(options, monkeypatch):
    """The structured (Walsh-Hadamard) head in float64: equal to plain and gradcheck-clean, with a
    learned d -> d_t projection (target_dim = the Hadamard order 16 for V = 11)."""
    monkeypatch.setattr(hadamard_transform, "FAST_MIN_ORDER", 1)
    s = _strategy("hadamard", target_dim=16, **options)
    assert s.uses_fast_transform() and s.head().structured is not None
    h, t = _inputs(ignore=True)
    ref = _run(s, h, t, label_smoothing=0.1, impl="plain")
    assert "proj.weight" in ref[2]
    for impl, sync_free in CHUNKED:
        _set_sync_free(monkeypatch, sync_free)
        _assert_same(ref, _run(s, h, t, label_smoothing=0.1, impl=impl, chunk_size=CHUNK))
    for impl, sync_free in [("plain", None), ("chunked", None), ("recompute", True)]:
        _set_sync_free(monkeypatch, sync_free)
        _gradcheck_loss(s, impl, SMOOTH)


def test_float64_backward_may_run_twice_float32_refuses_clearly():
    """Float64 keeps the fused schedule's gradients (retain_graph=True, as gradcheck needs); float32
    hands them over once, scaled in place, and a second backward says what to use instead."""
    h, t = _inputs(ignore=True)
    s = _strategy("tied", bias=True)
    loss = s.loss(h, t, impl="chunked", chunk_size=CHUNK)
    g1 = torch.autograd.grad(loss, [s.weight], retain_graph=True)[0]
    g2 = torch.autograd.grad(loss, [s.weight])[0]
    assert torch.equal(g1, g2)
    s32 = _strategy("tied", bias=True).float()
    loss = s32.loss(h.float(), t, impl="chunked", chunk_size=CHUNK)
    torch.autograd.grad(loss, [s32.weight], retain_graph=True)
    with pytest.raises(RuntimeError, match="impl='recompute'"):
        torch.autograd.grad(loss, [s32.weight])
    loss = s32.loss(h.float(), t, impl="recompute", chunk_size=CHUNK)
    g1 = torch.autograd.grad(loss, [s32.weight], retain_graph=True)[0]
    assert torch.equal(g1, torch.autograd.grad(loss, [s32.weight])[0])


@pytest.mark.parametrize("name", NAMES)
def test_built_under_float64_default_dtype(name):
    """With torch.set_default_dtype(torch.float64) every tensor of a strategy (fixed targets included)
    is float64 and the loss runs."""
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        s = sharing.build(name, vocab_size=V, dim=D, bias=True)
        assert {t.dtype for t in (*s.parameters(), *s.buffers())} == {torch.float64}
        h, t = _inputs(ignore=True)
        ref = s.loss(h, t, impl="plain")
        got = s.loss(h, t, impl="chunked", chunk_size=CHUNK)
    finally:
        torch.set_default_dtype(old)
    assert got.dtype == torch.float64
    torch.testing.assert_close(got, ref, rtol=1e-10, atol=0.0)
