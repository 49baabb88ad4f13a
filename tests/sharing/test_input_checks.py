"""The checks at the strategies' boundary cost no host sync by default: id ranges are checked on the CPU,
and on other devices only with ``CHECK_RANGES_ON_DEVICE``; every strategy (adaptive too) checks h."""

from __future__ import annotations

import pytest
import torch

from embtie import sharing
from embtie.sharing import inputs
from embtie.sharing.inputs import InputTypeError, InputValueError


def test_ranges_are_checked_on_the_cpu_and_elsewhere_only_with_the_flag(monkeypatch):
    meta = torch.ones(3, dtype=torch.long, device="meta")
    assert inputs.ranges_checked(torch.ones(3, dtype=torch.long))
    assert not inputs.ranges_checked(meta)
    monkeypatch.setattr(inputs, "CHECK_RANGES_ON_DEVICE", True)
    assert inputs.ranges_checked(meta)


@pytest.mark.parametrize("name", ["tied", "untied", "l2norm", "tied-proj", "adaptive"])
def test_every_strategy_refuses_integer_or_misplaced_hidden_states(name):
    options = {"cutoffs": [4]} if name == "adaptive" else {}
    s = sharing.build(name, vocab_size=10, dim=8, **options)
    with pytest.raises(InputTypeError, match="floating point"):
        s.logits(torch.ones(2, 8, dtype=torch.int32))
    with pytest.raises(InputValueError, match="hidden states are on meta"):
        s.loss(torch.ones(2, 8, device="meta"), torch.tensor([1, 2]))
    assert torch.isfinite(s.loss(torch.randn(2, 8), torch.tensor([1, 2])))


def test_the_checks_are_errors_the_command_line_prints_as_one_line():
    from embtie.errors import EmbtieError

    assert issubclass(InputTypeError, EmbtieError) and issubclass(InputTypeError, TypeError)
    assert issubclass(InputValueError, EmbtieError) and issubclass(InputValueError, ValueError)


@pytest.mark.parametrize("name", sharing.names())
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16, torch.float16])
def test_hidden_states_of_another_dtype_get_embties_message_outside_autocast(name, dtype):
    """Reliability class "messages": ``s.loss(h)`` with h of another floating dtype than the weights names
    both dtypes and the fixes (torch's own "expected m1 and m2 to have the same dtype" did not)."""
    s = sharing.build(name, vocab_size=64, dim=8, **({"cutoffs": [16, 32]} if name == "adaptive" else {}))
    h, targets = torch.randn(2, 8).to(dtype), torch.tensor([1, 40])
    with pytest.raises(InputTypeError, match=rf"hidden states are {dtype} but the strategy's weights are "
                                             r"torch.float32; cast one to the other"):  # fmt: skip
        s.loss(h, targets)
    with pytest.raises(InputTypeError, match=r"torch\.autocast"):
        s.logits(h)
    if dtype == torch.float64:  # the weights cast to h's dtype: accepted, and the loss is in that dtype
        assert s.to(dtype).loss(h, targets).dtype == dtype


def test_autocast_lets_torch_cast_hidden_states_itself():
    s = sharing.build("tied", vocab_size=64, dim=8)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert torch.isfinite(s.loss(torch.randn(2, 8, dtype=torch.bfloat16), torch.tensor([1, 40])))
