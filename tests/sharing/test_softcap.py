"""The sigmoid logit soft-cap (modded-nanogpt) beside the tanh cap (Gemma 2): its formula, its identity with a
tanh cap of half the height, and the memory-lean loss (eager and as the compile operator) against the plain one."""

from __future__ import annotations

import pytest
import torch

from embtie import sharing
from embtie.errors import ConfigError
from embtie.sharing.chunked_ce_op import traced_chunked_cross_entropy
from embtie.sharing.loss import cross_entropy

V, D, N = 50, 8, 40


def _hidden(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(N, D, dtype=torch.float64, generator=g) * 3, torch.randint(0, V, (N,), generator=g)


def test_sigmoid_cap_is_c_sigmoid_of_shifted_scaled_logits():
    torch.manual_seed(0)
    s = sharing.build(
        "untied", vocab_size=V, dim=D, bias=True, softcap=30.0, softcap_form="sigmoid", softcap_scale=7.5,
        softcap_shift=5.0,
    ).double()  # fmt: skip
    with torch.no_grad():
        s.bias.normal_()
    h, _ = _hidden()
    raw = h @ s.out_weight.T + s.bias  # the untied formula, by hand
    expected = 30.0 * (1.0 / (1.0 + torch.exp(-(raw + 5.0) / 7.5)))
    assert torch.allclose(s.logits(h), expected, rtol=0, atol=1e-12)
    z = s.logits(h).detach()
    assert float(z.min()) > 0 and float(z.max()) < 30.0  # values in (0, c)
    # the default scale c / 4 gives slope 1 at u = -b: dz/du = c/(4s) = 1
    d = sharing.build("untied", vocab_size=V, dim=D, softcap=30.0, softcap_form="sigmoid").double()
    u = torch.zeros(1, 1, dtype=torch.float64, requires_grad=True)
    (g,) = torch.autograd.grad(d.head().cap_shape.apply(u, 30.0).sum(), u)
    assert float(g) == pytest.approx(1.0)


def test_unshifted_sigmoid_cap_gives_the_probabilities_of_the_tanh_cap_of_half_height():
    """c sigmoid(4u / c) = c/2 + (c/2) tanh(u / (c/2)): the softmax ignores the constant."""
    torch.manual_seed(1)
    sig = sharing.build("untied", vocab_size=V, dim=D, softcap=6.0, softcap_form="sigmoid").double()
    tanh = sharing.build("untied", vocab_size=V, dim=D, softcap=3.0).double()
    tanh.load_state_dict(sig.state_dict())
    h, t = _hidden(1)
    assert torch.allclose(sig.logits(h) - 3.0, tanh.logits(h), rtol=0, atol=1e-12)
    assert torch.allclose(sig.log_probs(h), tanh.log_probs(h), rtol=0, atol=1e-12)
    shifted = sharing.build("untied", vocab_size=V, dim=D, softcap=6.0, softcap_form="sigmoid", softcap_shift=2.0)
    shifted = shifted.double()
    shifted.load_state_dict(sig.state_dict())
    assert not torch.allclose(shifted.log_probs(h), tanh.log_probs(h), atol=1e-3)  # a shift makes it another cap
    with torch.no_grad():
        assert float(sig.loss(h, t, impl="plain")) == pytest.approx(float(tanh.loss(h, t, impl="plain")), abs=1e-12)


@pytest.mark.parametrize("impl", ["chunked", "recompute", "operator"])
def test_the_memory_lean_loss_matches_the_plain_loss_with_a_sigmoid_cap(impl):
    torch.manual_seed(2)
    s = sharing.build(
        "untied", vocab_size=V, dim=D, bias=True, softcap=4.0, softcap_form="sigmoid", softcap_scale=1.5,
        softcap_shift=0.5, z_loss=1e-3,
    ).double()  # fmt: skip
    h, t = _hidden(2)
    h.requires_grad_(True)
    params = [h, s.out_weight, s.bias]

    def run(which: str) -> tuple[torch.Tensor, tuple[torch.Tensor, ...]]:
        if which == "operator":  # what torch.compile calls: the embtie::chunked_ce operator, run eagerly
            loss = traced_chunked_cross_entropy(s.head(), h, t, label_smoothing=0.1, chunk_size=7)
        else:
            loss = cross_entropy(s.head(), h, t, label_smoothing=0.1, impl=which, chunk_size=7)
        return loss, torch.autograd.grad(loss, params)

    ref, ref_grads = run("plain")
    got, grads = run(impl)
    assert float(got.detach()) == pytest.approx(float(ref.detach()), abs=1e-12)
    for a, b in zip(grads, ref_grads, strict=True):
        assert torch.allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"softcap_form": "sigmoid"}, "softcap_form=sigmoid needs softcap"),
        ({"softcap": 3.0, "softcap_shift": 1.0}, "set softcap_form=sigmoid"),
        ({"softcap": 3.0, "softcap_form": "sigmoid", "softcap_scale": 0}, "softcap_scale=0"),
        ({"softcap": 3.0, "softcap_form": "logistic"}, "must be one of: tanh, sigmoid"),
    ],
)
def test_bad_sigmoid_cap_options_are_one_line(options, message):
    with pytest.raises(ConfigError, match=message):
        sharing.build("tied", vocab_size=V, dim=D, **options)


def test_head_and_softcap_defaults_are_plain_values_that_dynamo_can_wrap():
    """torch 2.11's Dynamo (the GPU machine's, 2026-11-27) could not compile a step whose Head had a
    CapShape instance as a default value ("Unexpected type in sourceless builder"): every default of
    Head's fields and of apply_softcap is None or a number, and None means the tanh cap."""
    import dataclasses
    import inspect

    from embtie.sharing.head import Head
    from embtie.sharing.softcap import TANH, apply_softcap

    plain = (type(None), int, float, bool, str)
    for f in dataclasses.fields(Head):
        if f.default is not dataclasses.MISSING:
            assert isinstance(f.default, plain), f.name
    for p in inspect.signature(apply_softcap).parameters.values():
        if p.default is not inspect.Parameter.empty:
            assert isinstance(p.default, plain), p.name
    z = torch.linspace(-90, 90, 7)
    assert Head(weight=torch.zeros(2, 2)).cap_form is TANH
    torch.testing.assert_close(apply_softcap(z, 30.0), 30.0 * torch.tanh(z / 30.0))
