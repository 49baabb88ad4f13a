"""One parameter count of a model, written under the keys of summary.json and of the diagnostics."""

import pytest
import torch
from torch import nn

from embtie import sharing
from embtie.analysis.param_counts import count_parameters, model_parameter_counts
from embtie.sharing.base import strategy_of


class _Model(nn.Module):
    def __init__(self, strategy: nn.Module) -> None:
        super().__init__()
        self.sharing = strategy
        self.body = nn.Linear(8, 8)
        self.register_buffer("mask", torch.ones(4, 4))


def test_one_count_two_sets_of_keys():
    s = sharing.build("fixed", vocab_size=100, dim=8, bias=True)
    model = _Model(s)
    counts = count_parameters(model, strategy_of(model))
    # E (800) + bias (100) + the body (72) learned; T (800) fixed; the model's own buffer is not a weight
    assert (counts.learned, counts.fixed, counts.sharing_learned) == (972, 800, 900)
    assert list(counts.summary_fields().items()) == [
        ("params_learned", 972),
        ("params_fixed", 800),
        ("params_sharing_learned", 900),
    ]
    assert list(counts.diagnostics_fields().items()) == [
        ("learned", 972),
        ("fixed", 800),
        ("sharing_learned", 900),
        ("sharing_fixed", 800),
    ]
    assert model_parameter_counts(model, s) == counts.diagnostics_fields()
    assert model_parameter_counts(model) == {"learned": 972, "fixed": 0, "sharing_learned": 0, "sharing_fixed": 0}


def test_a_tied_tensor_counts_once_and_strategy_of_checks_the_type():
    s = sharing.build("tied", vocab_size=50, dim=8)
    model = _Model(s)
    model.alias = s  # the strategy reachable under a second name
    assert count_parameters(model, s).learned == 50 * 8 + 72
    with pytest.raises(TypeError, match="not a sharing strategy"):
        strategy_of(_Model(nn.Linear(2, 2)))
