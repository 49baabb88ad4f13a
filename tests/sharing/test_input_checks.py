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
