"""embtie's memory-lean loss against torch's own fused op, torch.nn.functional.linear_cross_entropy.

The anchor benchmark (bench/lce_anchor.py) compares their speed and memory; these tests check that
they compute the same thing: the same loss and the same gradients w.r.t. the hidden states and the
(tied) weight, with ignored tokens and label smoothing, over several chunks — and that every method
the benchmark times is one of them.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from embtie import sharing

if not hasattr(F, "linear_cross_entropy"):  # foreign: torch releases before the fused op (GPU machines' own)
    pytest.skip(f"torch {torch.__version__} has no F.linear_cross_entropy", allow_module_level=True)

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import lce_anchor  # noqa: E402

OPTIONS = {
    "chunked": torch.nn.LinearCrossEntropyOptions(),
    "chunked_small": torch.nn.LinearCrossEntropyOptions(batch_chunk_size=7, chunking_method=None),
    "reference": None,
}


def _problem(n: int, v: int, d: int, ignored: int, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    s = sharing.build("tied", vocab_size=v, dim=d)
    with torch.no_grad():
        s.head().weight.copy_(torch.randn(v, d, generator=g) * 0.5)
    h = torch.randn(n, d, generator=g)
    t = torch.randint(0, v, (n,), generator=g)
    t[torch.randperm(n, generator=g)[:ignored]] = -100
    return s, h, t


def _loss_and_grads(fn, s, h: torch.Tensor, t: torch.Tensor):
    s.zero_grad(set_to_none=True)
    x = h.clone().requires_grad_(True)
    loss = fn(x, t)
    loss.backward()
    return loss.detach(), x.grad, s.head().weight.grad.clone()


@pytest.mark.parametrize("opt", sorted(OPTIONS))
@pytest.mark.parametrize(("smoothing", "ignored", "chunk"), [(0.0, 0, 16), (0.1, 9, 5), (0.0, 13, None)])
def test_embtie_equals_torch_linear_cross_entropy(opt: str, smoothing: float, ignored: int, chunk: int | None):
    s, h, t = _problem(48, 300, 24, ignored)
    w = s.head().weight

    def ours(x, tt):
        return s.loss(x, tt, label_smoothing=smoothing, impl="chunked", chunk_size=chunk)

    def theirs(x, tt):
        return F.linear_cross_entropy(x, w, tt, ignore_index=-100, label_smoothing=smoothing, options=OPTIONS[opt])

    got = _loss_and_grads(ours, s, h, t)
    # torch 2.13's chunked path has no label smoothing: it falls back to the full logits, with a warning
    falls_back = smoothing > 0 and OPTIONS[opt] is not None
    with pytest.warns(UserWarning, match="options.. ignored") if falls_back else contextlib.nullcontext():
        want = _loss_and_grads(theirs, s, h, t)
    for a, b, what in zip(got, want, ("loss", "d/dh", "d/dW")):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-6, msg=lambda m, what=what: f"{what}: {m}")
    assert torch.count_nonzero(got[1][t == -100]) == 0  # ignored tokens get no gradient in either


def test_float64_agrees_to_double_precision():
    s, h, t = _problem(40, 200, 16, 5, seed=1)
    s = s.double()
    h = h.double()
    w = s.head().weight
    got = _loss_and_grads(lambda x, tt: s.loss(x, tt, impl="chunked", chunk_size=8), s, h, t)
    want = _loss_and_grads(lambda x, tt: F.linear_cross_entropy(x, w, tt, options=OPTIONS["chunked"]), s, h, t)
    for a, b in zip(got, want):
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_benchmarked_methods_compute_the_same_loss(dtype: str):
    """Every method the anchor benchmark times gives the same loss and gradients on its inputs."""
    case = lce_anchor.Case(64, 2048, 32, dtype, methods=("embtie", "torch_chunked", "torch_ref", "plain"))
    device = torch.device("cpu")
    s, h, t = lce_anchor._setup(case, device)
    h = h.detach()
    results = {m: _loss_and_grads(lce_anchor.loss_fn(m, case, s, device), s, h, t) for m in case.methods}
    tol = {"rtol": 1e-5, "atol": 1e-6} if dtype == "fp32" else {"rtol": 2e-2, "atol": 2e-3}
    for m in case.methods[1:]:
        for a, b in zip(results["embtie"], results[m]):
            torch.testing.assert_close(a.float(), b.float(), **tol, msg=lambda msg, m=m: f"{m}: {msg}")


def test_cuda_libraries_are_optional():
    """On the CPU the benchmark lists only its own methods; the CUDA ones are skipped with a line."""
    case = lce_anchor.Case(8, 16, 4)
    assert lce_anchor.available(case, torch.device("cpu")) == (case.methods, [])
    missing = [m for m, mod in lce_anchor.CUDA_EXTRAS.items() if importlib.util.find_spec(mod) is None]
    if not missing:
        pytest.skip("both CUDA libraries are installed")
    s, _, _ = lce_anchor._setup(case, torch.device("cpu"))
    with pytest.raises(ValueError, match="pip install"):
        lce_anchor.loss_fn(missing[0], case, s, torch.device("cpu"))


def test_cut_cross_entropy_is_compared_only_in_bf16(monkeypatch):
    """Seen on an H200 (results/campaign-gpu/first, 2026-11-27): CCE's backward asserts bf16/fp16 inputs,
    so an fp32 case lists it as skipped with the reason, and a bf16 case compares it."""
    real, extras = importlib.util.find_spec, set(lce_anchor.CUDA_EXTRAS.values())
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object() if name in extras else real(name, *a))
    cuda = torch.device("cuda")  # available() reads only the device type: no GPU needed
    fp32, bf16 = lce_anchor.Case(8, 16, 4), lce_anchor.Case(8, 16, 4, "bf16")
    methods, notes = lce_anchor.available(fp32, cuda)
    assert "liger" in methods and "cce" not in methods
    assert "cce skipped at fp32: Cut Cross-Entropy's backward needs bf16 or fp16 inputs" in notes
    assert {"liger", "cce"} <= set(lce_anchor.available(bf16, cuda)[0])
