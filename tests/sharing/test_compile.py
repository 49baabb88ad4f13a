"""Every registered strategy's embed, loss (both implementations) and logits trace into one graph under
``torch.compile(fullgraph=True)`` (a graph break would raise), in training and in evaluation, and the
compiled numbers (loss, logits, every gradient) are eager's; tie-untie recompiles once, at its switch.

``backend="eager"`` runs the traced graph with eager kernels: it checks the tracing, which is where graph
breaks come from, in a fraction of a second per case (inductor's speed is bench/compile_speed.py's)."""

from __future__ import annotations

import pytest
import torch
from torch import Tensor, nn
from torch._dynamo.testing import CompileCounterWithBackend

from embtie import sharing
from embtie.errors import DataError

V, D = 64, 16
RICH = {"bias": True, "logit_scale": "learned", "softcap": 30.0, "z_loss": 1e-3, "factor_rank": 8}
"""every common option that changes the head's formula at once (adaptive refuses factor_rank and z_loss)."""


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    """Each case compiles afresh (the probe's forward is one code object across cases: without a reset
    dynamo's per-code recompile limit would count them all)."""
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class _Probe(nn.Module):
    """ids -> embed -> a linear body -> (plain loss, chunked loss, logits)."""

    def __init__(self, name: str, options: dict[str, object]) -> None:
        super().__init__()
        self.sharing = sharing.build(name, V, D, **options)
        self.body = nn.Linear(D, D)

    def forward(self, ids: Tensor, targets: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        h = torch.tanh(self.body(self.sharing.embed(ids)))
        plain = self.sharing.loss(h, targets, impl="plain")
        chunked = self.sharing.loss(h, targets, impl="chunked", chunk_size=5)
        return plain, chunked, self.sharing.logits(h)


def _options(name: str, rich: bool) -> dict[str, object]:
    if not rich:
        return {}
    if name == "adaptive":
        return {k: v for k, v in RICH.items() if k not in ("factor_rank", "z_loss")}
    return dict(RICH)


def _run(model: nn.Module, train: bool) -> tuple[list[Tensor], dict[str, Tensor]]:
    """(plain loss, chunked loss, logits) and, in training, the gradient of their sum w.r.t. every parameter."""
    g = torch.Generator().manual_seed(1)
    ids = torch.randint(0, V, (3, 7), generator=g)
    targets = torch.randint(0, V, (3, 7), generator=g)
    targets[0, 0] = -100  # an ignored token
    model.train(train)
    model.zero_grad(set_to_none=True)
    with torch.set_grad_enabled(train):
        outs = list(model(ids, targets))
        if train:
            (outs[0] + outs[1] + outs[2].float().square().mean()).backward()
    grads = {n.removeprefix("_orig_mod."): p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return [o.detach() for o in outs], grads


def _pair(name: str, rich: bool) -> tuple[nn.Module, nn.Module]:
    torch.manual_seed(0)
    eager = _Probe(name, _options(name, rich))
    twin = _Probe(name, _options(name, rich))
    twin.load_state_dict(eager.state_dict())
    return eager, twin


@pytest.mark.parametrize("train", [True, False], ids=["train", "eval"])
@pytest.mark.parametrize("rich", [False, True], ids=["defaults", "options"])
@pytest.mark.parametrize("name", sharing.names())
def test_every_strategy_traces_into_one_graph_and_computes_what_eager_does(name, rich, train):
    eager, twin = _pair(name, rich)
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(twin, fullgraph=True, backend=counter)
    want_out, want_grads = _run(eager, train)
    got_out, got_grads = _run(compiled, train)
    assert counter.frame_count == 1  # one graph: fullgraph=True raises on any break
    for w, g in zip(want_out, got_out, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)
    assert got_grads.keys() == want_grads.keys()
    assert ("body.weight" in got_grads) == train
    for key, w in want_grads.items():
        torch.testing.assert_close(got_grads[key], w, rtol=1e-4, atol=1e-5, msg=lambda m, k=key: f"{k}: {m}")


@pytest.mark.parametrize("name", ["tied", "untied", "cosine", "distance"])
def test_the_chunked_loss_operator_goes_through_aot_autograd_as_inductor_takes_it(name):
    """aot_eager: AOTAutograd traces forward and backward around the opaque chunked-loss operator (its fake
    implementation gives the shapes), as inductor does before generating code."""
    eager, twin = _pair(name, rich=True)
    compiled = torch.compile(twin, fullgraph=True, backend="aot_eager")
    for train in (True, False):
        want_out, want_grads = _run(eager, train)
        got_out, got_grads = _run(compiled, train)
        torch.testing.assert_close(got_out, want_out, rtol=1e-5, atol=1e-5)
        assert got_grads.keys() == want_grads.keys()
        for key, w in want_grads.items():
            torch.testing.assert_close(got_grads[key], w, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_the_compiled_chunked_loss_multiplies_in_the_callers_autocast_dtype(backend):
    """Under bf16 autocast the compiled chunked loss and its gradients are eager's under the same autocast
    (a compiled graph does not carry autocast into the opaque operator: without the dtype it is given, the
    loss was float32's, and a GPT-2 step on an H200 took 3.3x the plain loss's time)."""
    torch.manual_seed(0)
    n, v, d = 256, 512, 32
    s = sharing.build("tied", v, d)
    x0 = torch.randn(n, d)
    t = torch.randint(0, v, (n,))

    def step(fn):
        s.zero_grad(set_to_none=True)
        x = x0.clone().requires_grad_(True)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = fn(x)
        loss.backward()
        return loss.detach(), x.grad, s.weight.grad.clone()

    def loss(x):
        return s.loss(x, t, impl="chunked", chunk_size=64)

    want = step(loss)
    got = step(torch.compile(loss, fullgraph=True, backend=backend))
    torch.testing.assert_close(got, want, rtol=1e-6, atol=1e-6)
    s.zero_grad(set_to_none=True)
    fp32 = s.loss(x0, t, impl="chunked", chunk_size=64).detach()
    assert abs(float(got[0]) - float(fp32)) > 1e-6  # bf16's rounding shows: it did not run in float32


def test_tie_untie_recompiles_once_at_its_switch_and_then_uses_its_own_output_matrix():
    eager, twin = _pair("tie-untie", rich=False)
    counter = CompileCounterWithBackend("eager")
    compiled = torch.compile(twin, fullgraph=True, backend=counter)
    for step in range(4):
        for model in (eager, twin):
            model.sharing.on_train_step(step, 4, torch.optim.SGD(model.parameters()))  # unties at step 3
        want, _ = _run(eager, True)
        got, grads = _run(compiled, True)
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    assert twin.sharing.is_untied and counter.frame_count == 2  # one recompilation, at the switch
    assert "sharing.out_weight" in grads  # O now learns


def test_eager_callers_keep_their_range_checks():
    model = _Probe("tied", {})
    with pytest.raises(DataError, match="token id 64 is outside the vocabulary"):
        model(torch.tensor([[1, 64]]), torch.tensor([[1, 2]]))


@pytest.mark.parametrize("impl", ["plain", "chunked"])
@pytest.mark.parametrize("name", ["tied", "adaptive"])
def test_compiled_callers_get_embtie_s_line_for_ids_and_targets_out_of_range(name, impl):
    """The range check runs as the ``embtie::checked_ids`` operator in the graph: embtie's line at run time,
    not the kernels' "index out of bounds" (inductor) or torch's IndexError (eager kernels)."""
    strategy = sharing.build(name, V, D)
    compiled = torch.compile(lambda i, t: strategy.loss(strategy.embed(i), t, impl=impl), backend="aot_eager")
    ids, targets = torch.tensor([[1, 2, 3]]), torch.tensor([[2, 3, -100]])
    assert torch.isfinite(compiled(ids, targets))  # in range (and an ignored target): no error
    with pytest.raises(DataError, match=rf"^token id {V} is outside the vocabulary \[0, {V}\)$"):
        compiled(torch.tensor([[1, V, 3]]), targets)
    with pytest.raises(DataError, match=rf"^target id -1 is outside the vocabulary \[0, {V}\); .*ignore_index=-100$"):
        compiled(ids, torch.tensor([[2, -1, -100]]))


def test_inductor_compiled_embedding_reports_an_id_out_of_range_with_embtie_s_line():
    strategy = sharing.build("tied", V, D)
    compiled = torch.compile(lambda i: strategy.embed(i).sum())  # inductor, torch.compile's default
    assert torch.isfinite(compiled(torch.tensor([0, V - 1])))
    with pytest.raises(DataError, match=rf"^token id -3 is outside the vocabulary \[0, {V}\)$"):
        compiled(torch.tensor([-3, 1]))
