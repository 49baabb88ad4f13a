"""The memory-lean chunked cross-entropy equals the plain N x V computation, for every strategy and option."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from embtie import sharing
from embtie.errors import ConfigError, DataError
from embtie.sharing import hadamard_transform
from embtie.sharing.head import Head
from embtie.sharing.loss import cross_entropy


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one thread avoids OpenMP wake-ups that cost more than the work on a busy machine."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


V, D = 37, 16  # odd vocabulary; 2 x 13 = 26 tokens, chunk 5: the last chunk is partial

OPTIONS = [
    {},
    {"bias": True},
    {"logit_scale": 0.7},
    {"logit_scale": "learned", "logit_scale_init": 1.3},
    {"softcap": 2.5},
    {"bias": True, "logit_scale": "learned", "softcap": 4.0},
]


def _strategy(name: str, **options) -> sharing.SharingStrategy:
    torch.manual_seed(sum(map(ord, name)))
    s = sharing.build(name, vocab_size=V, dim=D, **options)
    with torch.no_grad():  # move learned biases/scales away from their init so their gradients are generic
        if s.bias is not None:
            s.bias.normal_(0.0, 0.5)
        if s.logit_scale_param is not None:
            s.logit_scale_param.mul_(1.1)
    return s


def _run(s, h, targets, **kw):
    s.zero_grad(set_to_none=True)
    h = h.detach().clone().requires_grad_(True)
    loss = s.loss(h, targets, **kw)
    loss.backward()
    grads = {name: p.grad.clone() for name, p in s.named_parameters() if p.grad is not None}
    return loss.detach(), h.grad, grads


def _assert_equal(ref, got, rtol=2e-5):
    (l0, h0, g0), (l1, h1, g1) = ref, got
    torch.testing.assert_close(l1, l0, rtol=rtol, atol=0.0)
    assert set(g0) == set(g1)
    for name, a, b in [("h", h0, h1), *((k, g0[k], g1[k]) for k in g0)]:
        tol = rtol * float(a.abs().max()) + 1e-9
        err = float((a - b).abs().max())
        assert err <= tol, f"gradient of {name}: max error {err:.3g} > {tol:.3g}"


def _inputs(ignore: bool):
    g = torch.Generator().manual_seed(7)
    h = torch.randn(2, 13, D, generator=g) * 2.0
    t = torch.randint(0, V, (2, 13), generator=g)
    if ignore:
        t[0, 2] = t[1, 7] = t[1, 12] = -100
    return h, t


@pytest.mark.parametrize("name", sharing.names())
@pytest.mark.parametrize("options", OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "plain")
def test_chunked_equals_plain_for_every_strategy_and_option(name, options):
    s = _strategy(name, **options)
    for ls, ignore in [(0.0, False), (0.1, True)]:
        h, t = _inputs(ignore)
        ref = _run(s, h, t, label_smoothing=ls, impl="plain")
        if name not in ("fixed", "hadamard") or options.get("bias") or options.get("logit_scale") == "learned":
            assert ref[2], "the output layer has learned tensors whose gradients must be compared"
        for impl in ("chunked", "recompute"):
            _assert_equal(ref, _run(s, h, t, label_smoothing=ls, impl=impl, chunk_size=5))


@pytest.mark.parametrize("name", ["fixed", "hadamard"])
@pytest.mark.parametrize("target_dim", [24, 64])
def test_chunked_equals_plain_with_target_dim(name, target_dim):
    s = _strategy(name, target_dim=target_dim, bias=True, logit_scale="learned")
    h, t = _inputs(True)
    ref = _run(s, h, t, label_smoothing=0.2, impl="plain")
    assert "proj.weight" in ref[2]
    _assert_equal(ref, _run(s, h, t, label_smoothing=0.2, impl="chunked", chunk_size=4))


def test_ignore_index_other_than_default_and_all_in_one_chunk():
    s = _strategy("cosine", bias=True)
    h, t = _inputs(False)
    t[0, :5] = 3
    ref = _run(s, h, t, ignore_index=3, impl="plain")
    _assert_equal(ref, _run(s, h, t, ignore_index=3, impl="chunked"))  # default chunk > 26 tokens


@pytest.mark.parametrize("options", [{}, {"bias": True, "logit_scale": "learned", "softcap": 5.0}])
def test_bf16_autocast_matches_plain_to_bf16_rounding(options):
    s = _strategy("l2norm", **options)
    h, t = _inputs(True)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = _run(s, h, t, label_smoothing=0.1, impl="plain")
        got = _run(s, h, t, label_smoothing=0.1, impl="chunked", chunk_size=5)
    fp32 = _run(s, h, t, label_smoothing=0.1, impl="plain")
    assert got[0].dtype == torch.float32 and got[1].dtype == torch.float32
    _assert_equal(ref, got, rtol=3e-2)
    _assert_equal(fp32, got, rtol=3e-2)


@pytest.mark.parametrize("name", sharing.names())
def test_sync_free_masked_path_equals_plain(name, monkeypatch):
    """The CUDA path (ignored tokens masked in place, kept count left on the device: no host sync),
    forced on the CPU: same loss and gradients as plain, with and without label smoothing, soft-cap,
    bias and a learned scale; every token ignored gives nan like the plain loss."""
    from embtie.sharing import chunked_ce

    monkeypatch.setattr(chunked_ce, "SYNC_FREE", True)
    for options in ({}, {"bias": True, "logit_scale": "learned", "softcap": 4.0}):
        s = _strategy(name, **options)
        h, t = _inputs(True)
        for ls in (0.0, 0.1):
            ref = _run(s, h, t, label_smoothing=ls, impl="plain")
            for impl in ("chunked", "recompute"):
                _assert_equal(ref, _run(s, h, t, label_smoothing=ls, impl=impl, chunk_size=5))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ref = _run(s, h, t, label_smoothing=0.1, impl="plain")
        _assert_equal(ref, _run(s, h, t, label_smoothing=0.1, impl="chunked", chunk_size=5), rtol=3e-2)
    t_all = torch.full_like(t, -100)
    assert torch.isnan(s.loss(h, t_all, impl="chunked")) and torch.isnan(s.loss(h, t_all, impl="plain"))


def _largest_saved(fn) -> int:
    """numel of the largest tensor autograd saves for backward while running fn()."""
    sizes = [0]
    with torch.autograd.graph.saved_tensors_hooks(lambda a: sizes.append(a.numel()) or a, lambda a: a):
        fn()
    return max(sizes)


def test_chunked_loss_never_saves_the_logits():
    """Plain autograd keeps an N x V tensor for backward; the chunked loss keeps nothing that large."""
    n, v, d = 64, 301, 8
    w = torch.randn(v, d, requires_grad=True)
    x = torch.randn(n, d, requires_grad=True)
    t = torch.randint(0, v, (n,))

    def largest_saved(impl):
        return _largest_saved(
            lambda: cross_entropy(Head(w, bias=torch.zeros(v)), x, t, impl=impl, chunk_size=16).backward()
        )

    assert largest_saved("plain") >= n * v
    assert largest_saved("chunked") < n * v / 4
    assert largest_saved("recompute") < n * v / 4


def test_chunked_matches_f_cross_entropy_formula_directly():
    g = torch.Generator().manual_seed(3)
    w, x = torch.randn(11, 5, generator=g), torch.randn(9, 5, generator=g)
    r, b = torch.rand(11, generator=g) + 0.5, torch.randn(11, generator=g)
    t = torch.randint(0, 11, (9,), generator=g)
    head = Head(w, row_scale=r, bias=b, scale=0.5, softcap=3.0)
    z = 3.0 * torch.tanh((0.5 * r * (x @ w.t()) + b) / 3.0)
    want = F.cross_entropy(z, t, label_smoothing=0.3)
    got = cross_entropy(head, x, t, label_smoothing=0.3, impl="chunked", chunk_size=2)
    torch.testing.assert_close(got, want)


def test_bad_targets_and_options_are_refused():
    s = _strategy("tied")
    h, t = _inputs(False)
    t[1, 1] = V
    with pytest.raises(DataError, match="outside the vocabulary"):
        s.loss(h, t, impl="chunked")
    with pytest.raises(ConfigError, match="loss impl"):
        s.loss(h, t.clamp_max(V - 1), impl="fast")


def test_hadamard_fast_transform_equals_matmul(monkeypatch):
    monkeypatch.setattr(hadamard_transform, "FAST_MIN_ORDER", 1)
    for vocab, options in [(37, {}), (64, {"bias": True, "logit_scale": "learned", "softcap": 3.0})]:
        torch.manual_seed(0)
        s = sharing.build("hadamard", vocab_size=vocab, dim=D, target_dim=64, **options)
        assert s.uses_fast_transform()
        head = s.head()
        assert head.structured is not None
        torch.testing.assert_close(head.structured.dense(), s.fixed_weight)
        h, t = _inputs(True)
        t = t.clamp_max(vocab - 1).where(t >= 0, t)
        x = s.transform(h)
        dense = Head(head.weight, bias=head.bias, scale=head.scale, softcap=head.softcap)
        torch.testing.assert_close(head.logits(x), dense.logits(x), rtol=1e-5, atol=1e-5)
        monkeypatch.setattr(hadamard_transform, "FAST_MIN_ORDER", 1 << 30)
        assert not s.uses_fast_transform()
        ref = _run(s, h, t, label_smoothing=0.1, impl="plain")
        monkeypatch.setattr(hadamard_transform, "FAST_MIN_ORDER", 1)
        for impl in ("plain", "chunked", "recompute"):
            _assert_equal(ref, _run(s, h, t, label_smoothing=0.1, impl=impl, chunk_size=5))


def test_fwht_factorisation_equals_the_dense_matrix():
    for n in (2, 8, 512, 2048):
        x = torch.randn(3, n, dtype=torch.float64)
        h = hadamard_transform.sylvester(n, dtype=torch.float64)
        torch.testing.assert_close(hadamard_transform.fwht(x), x @ h)
        assert torch.equal(h @ h, n * torch.eye(n, dtype=torch.float64))


def test_auto_is_plain_for_tiny_problems_and_chunked_above():
    d = 4
    for n, v, lean in [(30, 50, False), (1100, 1000, True)]:
        w = torch.randn(v, d, requires_grad=True)
        x = torch.randn(n, d, requires_grad=True)
        t = torch.randint(0, v, (n,))
        step = lambda w=w, x=x, t=t: cross_entropy(Head(w), x, t).backward()  # noqa: E731
        assert (_largest_saved(step) < n * v) == lean
