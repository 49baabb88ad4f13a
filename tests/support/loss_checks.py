"""Shared by the loss-equality tests: the memory-lean loss paths, one torch thread, and comparing a
loss with its gradients."""

import pytest
import torch

CHUNKED = [("chunked", None), ("recompute", None), ("chunked", True), ("recompute", True)]
"""(impl, SYNC_FREE): the compacting CPU path, its recompute schedule and the masked CUDA path, forced."""


@pytest.fixture(autouse=True)
def one_thread():
    """Tiny tensors: one thread avoids OpenMP wake-ups that cost more than the work on a busy machine.
    Import it into a test module to use it there (autouse)."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def run_loss(s, h, t, **kw):
    """(loss, dL/dh, {param: grad}) of ``s.loss(h, t, **kw)`` from fresh gradients."""
    s.zero_grad(set_to_none=True)
    h = h.detach().clone().requires_grad_(True)
    loss = s.loss(h, t, **kw)
    loss.backward()
    return loss.detach(), h.grad, {k: p.grad.clone() for k, p in s.named_parameters() if p.grad is not None}


def assert_same(ref, got, rtol=1e-10):
    """Two ``run_loss`` results agree: loss, input gradient and every parameter gradient (relative)."""
    torch.testing.assert_close(got[0], ref[0], rtol=rtol, atol=0.0)
    assert set(ref[2]) == set(got[2])
    for a, b in [(ref[1], got[1]), *((ref[2][k], got[2][k]) for k in ref[2])]:
        assert float((a - b).abs().max()) <= rtol * float(a.abs().max()) + 1e-15
