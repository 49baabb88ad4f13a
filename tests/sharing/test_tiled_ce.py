"""The tiled loss (``embtie.sharing.tiled_ce``): its Triton kernels, run on the CPU by Triton's interpreter
(TRITON_INTERPRET=1, the same kernel code a GPU compiles), equal the plain and the chunked loss for every
strategy's head, in value and in the gradients of h and of every learned tensor (weights, per-row and
logit scales, biases, projections), in float32 and bfloat16.

Tolerances (relative to the largest entry of each compared tensor):
- float32: loss 1e-5, gradients 1e-4 (the kernels' float32 sums run in another order than torch's);
- bfloat16: loss 1e-2, gradients 3e-2 against the plain loss in bfloat16 (whose logits are rounded to
  bfloat16 before the softmax; the kernels keep them in float32: both are compared with float64 too).

Tiny problems (21 tokens, V = 70, d = 20) with 16 x 32 x 16 tiles: two row blocks (the second partial),
three vocabulary tiles (the last partial) in two splits (the second holding a tile past V), two slices of
d (the second partial). The interpreter costs about half a second a launch, so each test runs the
kernels once or twice (about 30 s in all on two busy cores).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import torch

from embtie import sharing
from embtie.errors import ConfigError
from embtie.sharing import hadamard_transform, tiled_ce_op
from embtie.sharing.head import Head
from embtie.sharing.loss import cross_entropy
from embtie.sharing.tiled_ce import choose_tiled, tiled_unavailable
from loss_checks import run_loss

pytest.importorskip("triton", reason="the tiled loss's kernels need triton (`pip install -e '.[gpu]'`)")

V, D, N = 70, 20, 21
NAMES = [n for n in sharing.names() if n != "adaptive"]  # adaptive has its own loss (clusters), no (V, d) head
OPTIONS = {"bias": True, "logit_scale": "learned", "logit_scale_init": 1.3, "softcap": 3.0}
SMOOTH = {"label_smoothing": 0.1}
F32 = (1e-5, 1e-4)
BF16 = (1e-2, 3e-2)


@pytest.fixture(autouse=True)
def interpreter(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Triton's interpreter, small tiles, one torch thread."""
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(tiled_ce_op, "BLOCKS", tiled_ce_op.Blocks(n=16, v=32, d=16, warps=4, stages=1, programs=4))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def _strategy(name: str, dtype: torch.dtype = torch.float32, **options: object) -> sharing.SharingStrategy:
    torch.manual_seed(sum(map(ord, name)))
    s = sharing.build(name, vocab_size=V, dim=D, **options)
    with torch.no_grad():  # learned biases and scales off their init, so that their gradients are generic
        if s.bias is not None:
            s.bias.normal_(0.0, 0.5)
        if getattr(s, "token_scale", None) is not None:
            s.token_scale.mul_(torch.linspace(0.8, 1.2, V))
    return s.to(dtype)


def _inputs(dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    h = torch.randn(N, D, generator=g) * 1.5
    t = torch.randint(0, V, (N,), generator=g)
    t[1] = t[17] = -100
    return h.to(dtype), t


def _assert_close(ref: tuple, got: tuple, tol: tuple[float, float], what: str) -> None:
    """Loss within tol[0] relative, every gradient within tol[1] of its largest entry; the same tensors."""
    torch.testing.assert_close(got[0].double(), ref[0].double(), rtol=tol[0], atol=0.0, msg=f"{what}: loss")
    assert set(got[2]) == set(ref[2]), what
    for name, a, b in [("h", ref[1], got[1]), *((k, ref[2][k], got[2][k]) for k in ref[2])]:
        err = float((a.double() - b.double()).abs().max())
        bound = tol[1] * float(a.double().abs().max()) + 1e-12
        assert err <= bound, f"{what}: gradient of {name}: max error {err:.3g} > {bound:.3g}"


@pytest.mark.parametrize("name", NAMES)
def test_float32_equals_plain_and_chunked_for_every_strategy(name: str) -> None:
    """Bias, learned logit scale, tanh soft-cap, label smoothing and ignored tokens, for every head
    (normalized rows, per-row scales, the distance bias, fixed targets, projections)."""
    s = _strategy(name, **OPTIONS)
    h, t = _inputs()
    ref = run_loss(s, h, t, impl="plain", **SMOOTH)
    assert ref[2], "the head has learned tensors whose gradients are compared"
    got = run_loss(s, h, t, impl="tiled", **SMOOTH)
    assert got[0].dtype == torch.float32
    _assert_close(ref, got, F32, f"{name} tiled vs plain")
    _assert_close(run_loss(s, h, t, impl="chunked", chunk_size=8, **SMOOTH), got, F32, f"{name} tiled vs chunked")


@pytest.mark.parametrize(
    ("name", "options", "loss_kw"),
    [
        ("tied", {"softcap": 6.0, "softcap_form": "sigmoid", "softcap_shift": 0.5, "z_loss": 1e-2}, {}),
        ("cosine", {"factor_rank": 4, "bias": True}, SMOOTH),
        ("distance", {"factor_rank": 4, "z_loss": 1e-2}, SMOOTH),
    ],
    ids=["sigmoid-cap-z-loss", "factorized-cosine", "factorized-distance-z-loss"],
)
def test_float32_sigmoid_cap_z_loss_and_factorized_heads(name: str, options: dict, loss_kw: dict) -> None:
    s = _strategy(name, **options)
    h, t = _inputs()
    got = run_loss(s, h, t, impl="tiled", **loss_kw)
    _assert_close(run_loss(s, h, t, impl="plain", **loss_kw), got, F32, f"{name} {options}")


def test_float32_ignore_index_inside_the_vocabulary_and_hadamard_fast_head(monkeypatch: pytest.MonkeyPatch) -> None:
    """An ignore_index that is a real id (4) is skipped like -100; hadamard's structured head runs on its
    dense matrix, with a learned projection. Tiles of 32 tokens, for 64 programs: the dx kernel, short of
    row blocks, takes 16 (the dW kernel keeps 32)."""
    monkeypatch.setattr(hadamard_transform, "FAST_MIN_ORDER", 1)
    monkeypatch.setattr(tiled_ce_op, "BLOCKS", tiled_ce_op.Blocks(n=32, v=32, d=16, warps=4, stages=1, programs=64))
    s = _strategy("hadamard", target_dim=128, bias=True)
    assert s.head().structured is not None
    h, t = _inputs()
    t[t < 0] = 5
    t[:3] = 4
    kw = {"ignore_index": 4, "label_smoothing": 0.2}
    _assert_close(run_loss(s, h, t, impl="plain", **kw), run_loss(s, h, t, impl="tiled", **kw), F32, "hadamard")


@pytest.mark.parametrize("name", ["tied", "l2norm", "ngpt"])
def test_bfloat16_equals_plain(name: str) -> None:
    """A bfloat16 strategy: the tiled loss agrees with the plain bfloat16 loss, and is at least as close
    to the float64 one (its logits stay in float32)."""
    s = _strategy(name, torch.bfloat16, **OPTIONS)
    h, t = _inputs(torch.bfloat16)
    got = run_loss(s, h, t, impl="tiled", **SMOOTH)
    ref = run_loss(s, h, t, impl="plain", **SMOOTH)
    _assert_close(ref, got, BF16, f"{name} bf16")
    exact = run_loss(s.double(), h.double(), t, impl="plain", **SMOOTH)[0]
    assert abs(float(got[0]) - float(exact)) <= abs(float(ref[0]) - float(exact)) + 1e-3


def test_autocast_bfloat16_of_a_float32_model() -> None:
    """Under bfloat16 autocast the kernels multiply in bfloat16 and the gradients come back in float32."""
    s = _strategy("cosine", **OPTIONS)
    h, t = _inputs()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        got = run_loss(s, h, t, impl="tiled")
        ref = run_loss(s, h, t, impl="plain")
    assert all(g.dtype == torch.float32 for g in got[2].values()) and got[1].dtype == torch.float32
    _assert_close(ref, got, BF16, "autocast")


def test_every_token_ignored_is_nan_like_plain() -> None:
    w = torch.randn(V, D, requires_grad=True)
    h, t = _inputs()
    t[:] = -100
    assert torch.isnan(cross_entropy(Head(weight=w), h, t, impl="tiled"))


def test_refused_by_name_where_it_cannot_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """impl='tiled' off CUDA without the interpreter, or in float64, is one ConfigError with the reason;
    'auto' off CUDA keeps the chunked loss and never runs the interpreter."""
    head = Head(weight=torch.randn(V, D))
    h, t = _inputs()
    with pytest.raises(ConfigError, match=r"impl='tiled' cannot run: it computes in float32 or bfloat16, not float64"):
        cross_entropy(Head(weight=torch.randn(V, D, dtype=torch.float64)), h.double(), t, impl="tiled")
    assert choose_tiled("auto", head, h) == "auto"  # the CPU: chunked (or plain for tiny problems)
    monkeypatch.delenv("TRITON_INTERPRET")
    assert tiled_unavailable(head, h) == "it runs on CUDA (or the CPU under TRITON_INTERPRET=1), not on cpu"
    with pytest.raises(ConfigError, match="not on cpu"):
        cross_entropy(head, h, t, impl="tiled")
    assert choose_tiled("chunked", head, h) == "chunked"
