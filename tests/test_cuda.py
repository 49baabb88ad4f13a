"""The CUDA path: every strategy, the memory-lean loss, the fast Hadamard transform, beam search, a real
training run and the Hugging Face patch give on a GPU what they give on the CPU.

Skipped where no CUDA device is present (CI has none); run with ``pytest tests/test_cuda.py`` on a GPU
machine. TF32 is switched off so that float32 on the GPU is compared with float32 on the CPU.
"""

from __future__ import annotations

import copy
import math
import os
from pathlib import Path

import pytest
import torch

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")

from embtie import sharing  # noqa: E402
from embtie.sharing import hadamard_transform  # noqa: E402
from embtie.sharing.loss import cross_entropy  # noqa: E402

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[2] / "shared/data"))

CUDA = torch.device("cuda")
V, D = 301, 48


@pytest.fixture(autouse=True)
def _no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


def _loss_and_grads(s, h, t, **kw):
    s.zero_grad(set_to_none=True)
    h = h.detach().clone().requires_grad_(True)
    loss = s.loss(h, t, **kw)
    loss.backward()
    grads = {n: p.grad.detach().cpu() for n, p in s.named_parameters() if p.grad is not None}
    return loss.detach().cpu(), h.grad.detach().cpu(), grads


def _close(a: torch.Tensor, b: torch.Tensor, rtol: float) -> None:
    err = float((a.float() - b.float()).abs().max())
    assert err <= rtol * float(b.float().abs().max()) + 1e-7, err


@pytest.mark.parametrize("name", sharing.names())
def test_every_strategy_gives_the_cpu_logits_loss_and_gradients(name):
    torch.manual_seed(0)
    options = {"bias": True} if "bias" in sharing.accepted_options(name) else {}
    cpu = sharing.build(name, vocab_size=V, dim=D, **options)
    gpu = copy.deepcopy(cpu).to(CUDA)
    g = torch.Generator().manual_seed(1)
    h = torch.randn(3, 17, D, generator=g)
    t = torch.randint(0, V, (3, 17), generator=g)
    t[0, :4] = -100
    with torch.no_grad():
        _close(gpu.logits(h.to(CUDA)).cpu(), cpu.logits(h), 1e-5)
        _close(gpu.embed(t.clamp(min=0).to(CUDA)).cpu(), cpu.embed(t.clamp(min=0)), 1e-6)
    for kw in ({}, {"label_smoothing": 0.1, "impl": "chunked", "chunk_size": 7}):
        ref = _loss_and_grads(cpu, h, t, **kw)
        got = _loss_and_grads(gpu, h.to(CUDA), t.to(CUDA), **kw)
        _close(got[0], ref[0], 1e-5)
        _close(got[1], ref[1], 1e-4)
        assert set(got[2]) == set(ref[2])
        for k in ref[2]:
            _close(got[2][k], ref[2][k], 1e-4)
    gpu.regularization()  # device-consistent (no CPU tensor mixed in)


@pytest.mark.parametrize("name", ["tied", "l2norm", "sqnorm", "cosine", "distance", "fixed", "ngpt"])
def test_chunked_loss_equals_plain_on_cuda_in_bf16_autocast(name):
    torch.manual_seed(0)
    s = sharing.build(name, vocab_size=V, dim=D).to(CUDA)
    h = torch.randn(2, 50, D, device=CUDA)
    t = torch.randint(0, V, (2, 50), device=CUDA)
    with torch.autocast("cuda", dtype=torch.bfloat16):
        ref = _loss_and_grads(s, h, t, impl="plain")
        got = _loss_and_grads(s, h, t, impl="chunked", chunk_size=16)
    _close(got[0], ref[0], 2e-2)
    _close(got[1], ref[1], 5e-2)
    for k in ref[2]:
        _close(got[2][k], ref[2][k], 5e-2)


def test_chunked_loss_memory_target_holds_on_the_gpu():
    """8192 tokens, V=32768, d=512, fp32 forward + backward: chunked peak <= 1/5 of plain's."""
    n, v, d = 8192, 32768, 512
    w = torch.randn(v, d, device=CUDA) * d**-0.5
    h0 = torch.randn(n, d, device=CUDA)
    t = torch.randint(0, v, (n,), device=CUDA)
    from embtie.sharing.head import Head

    peaks, losses = {}, {}
    for impl in ("plain", "chunked"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        wp = w.clone().requires_grad_(True)
        h = h0.clone().requires_grad_(True)
        loss = cross_entropy(Head(weight=wp), h, t, impl=impl)
        loss.backward()
        torch.cuda.synchronize()
        peaks[impl] = torch.cuda.max_memory_allocated() - base
        losses[impl] = float(loss)
        del wp, h, loss
    assert losses["chunked"] == pytest.approx(losses["plain"], rel=1e-5)
    assert peaks["chunked"] <= 0.2 * peaks["plain"], peaks


def test_fast_hadamard_transform_equals_the_dense_product_on_cuda():
    n = 1024  # above FAST_MIN_ORDER, split into two factors
    x = torch.randn(5, 7, n, device=CUDA, dtype=torch.float64)
    dense = hadamard_transform.sylvester(n, dtype=torch.float64, device=CUDA)
    _close(hadamard_transform.fwht(x), x @ dense, 1e-10)
    torch.manual_seed(0)
    cpu = sharing.build("hadamard", vocab_size=1000, dim=32, target_dim=1024)
    gpu = copy.deepcopy(cpu).to(CUDA)
    assert gpu.head().structured is not None  # the fast path is the one under test
    h = torch.randn(4, 32)
    with torch.no_grad():
        _close(gpu.logits(h.to(CUDA)).cpu(), cpu.logits(h), 1e-5)


def test_beam_search_on_cuda_gives_the_cpu_hypotheses():
    from embtie.data.subwords import PAD
    from embtie.evaluation.beam_search import beam_search
    from embtie.models.transformer_mt import TransformerMT, TransformerMTConfig

    torch.manual_seed(0)
    cfg = TransformerMTConfig(dim=32, enc_layers=2, dec_layers=2, heads=4, ffn_dim=64, dropout=0.0, max_positions=64)
    cpu = TransformerMT(cfg, sharing.build("l2norm", vocab_size=57, dim=32)).eval()
    gpu = copy.deepcopy(cpu).to(CUDA)
    src = torch.randint(4, 57, (6, 9))
    for row, k in enumerate([9, 4, 6, 2, 8, 5]):
        src[row, k:] = PAD
    with torch.no_grad():
        ref = beam_search(cpu, src, beam=4)
        got = beam_search(gpu, src.to(CUDA), beam=4)
    assert [h.tokens for h in got] == [h.tokens for h in ref]
    assert [h.score for h in got] == pytest.approx([h.score for h in ref], rel=1e-4, abs=1e-4)


def test_training_on_cuda_with_bf16_lowers_the_loss_and_loads_on_the_cpu(tmp_path):
    from embtie.config import load_config
    from embtie.rundir.loading import load_run
    from embtie.training import train
    from embtie.training.metrics_log import read_metrics

    cfg = load_config(
        "ptb-gpt-tiny",
        [
            "train.device=cuda",
            "train.precision=bf16",
            "train.max_steps=120",
            "train.eval_every=120",
            "train.log_every=20",
            "train.progress=false",
            "data.valid_tokens=16384",
            "sharing.name=l2norm",
        ],
    )
    summary = train(cfg, tmp_path)
    recs = [r for r in read_metrics(tmp_path) if r["split"] == "train"]
    assert recs[-1]["loss"] < recs[0]["loss"] - 2.0
    assert summary["valid_ppl"] < 1500
    run = load_run(tmp_path, device="cpu")
    assert next(run.model.parameters()).device.type == "cpu"
    assert run.model.sharing.input_vectors().data_ptr() != 0
    assert math.isfinite(summary["tokens_per_s"]) and summary["tokens_per_s"] > 0


def test_hf_patched_gpt2_on_cuda_reproduces_the_unpatched_logits():
    pytest.importorskip("transformers")
    import embtie.hf as eh
    from embtie.hf.tiny import tiny_model

    torch.manual_seed(0)
    ref = tiny_model("gpt2", 80).to(CUDA)
    ids = torch.randint(3, 80, (2, 9), device=CUDA)
    with torch.no_grad():
        expected = ref(input_ids=ids).logits
        patched = eh.apply(copy.deepcopy(ref), "tied")
        assert torch.equal(patched(input_ids=ids).logits, expected)
        l2 = eh.apply(copy.deepcopy(ref), "l2norm")
        h = l2.base_model(input_ids=ids).last_hidden_state
        _close(l2(input_ids=ids).logits, l2.embtie_sharing.logits(h), 1e-5)


@pytest.mark.parametrize("name", [n for n in sharing.names() if n != "adaptive"])
def test_tiled_loss_equals_the_cpu_plain_loss(name):
    """The tiled loss's Triton kernels compiled for the GPU (float32 without TF32, so their dots are IEEE)
    give the CPU plain loss and gradients, with a bias, a learned scale, a soft-cap, smoothing, ignored ids."""
    pytest.importorskip("triton", reason="the tiled loss needs triton (pip install -e '.[gpu]')")
    torch.manual_seed(0)
    options = {"bias": True, "logit_scale": "learned", "softcap": 5.0}
    cpu = sharing.build(name, vocab_size=V, dim=D, **options)
    gpu = copy.deepcopy(cpu).to(CUDA)
    g = torch.Generator().manual_seed(1)
    h = torch.randn(3, 70, D, generator=g)
    t = torch.randint(0, V, (3, 70), generator=g)
    t[0, :4] = -100
    kw = {"label_smoothing": 0.1}
    ref = _loss_and_grads(cpu, h, t, impl="plain", **kw)
    got = _loss_and_grads(gpu, h.to(CUDA), t.to(CUDA), impl="tiled", **kw)
    _close(got[0], ref[0], 1e-5)
    _close(got[1], ref[1], 1e-4)
    assert set(got[2]) == set(ref[2])
    for k in ref[2]:
        _close(got[2][k], ref[2][k], 1e-4)


def test_auto_is_plain_on_cuda_and_tiled_agrees_in_bf16_with_less_memory_than_chunked():
    """auto runs the plain loss on CUDA up to 2**31 logits (the fastest there, BENCHMARKS-cuda.md) and never
    the tiled one; under bf16 autocast tiled agrees with plain, and its peak memory at 8192 x 32768 x 512 is
    below the chunked loss's."""
    pytest.importorskip("triton", reason="the tiled loss needs triton (pip install -e '.[gpu]')")
    from embtie.sharing.head import Head
    from embtie.sharing.loss import auto_impl

    n, v, d = 8192, 32768, 512
    w = torch.randn(v, d, device=CUDA) * d**-0.5
    h0 = torch.randn(n, d, device=CUDA)
    t = torch.randint(0, v, (n,), device=CUDA)
    assert auto_impl(n * v, h0.device) == "plain"
    assert auto_impl(1 << 32, h0.device) == "chunked"
    peaks, losses = {}, {}
    for impl in ("plain", "chunked", "tiled"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        wp = w.clone().requires_grad_(True)
        h = h0.clone().requires_grad_(True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = cross_entropy(Head(weight=wp), h, t, impl=impl)
        loss.backward()
        torch.cuda.synchronize()
        peaks[impl] = torch.cuda.max_memory_allocated() - base
        losses[impl] = float(loss)
        del wp, h, loss
    assert losses["tiled"] == pytest.approx(losses["plain"], rel=1e-2)
    assert peaks["tiled"] < peaks["chunked"], peaks
