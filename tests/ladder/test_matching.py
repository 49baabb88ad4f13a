"""--match: the arms that save parameters are deepened until every arm's learned parameters (or FLOPs per
token) agree with the largest arm's within the tolerance, checked on the models the runs actually build."""

from __future__ import annotations

import pytest
import torch

from embtie import comparison
from embtie.analysis.param_counts import count_parameters
from embtie.comparison import CompareSpec
from embtie.errors import ConfigError
from embtie.ladder import matching
from embtie.ladder.budget import TaskCache
from embtie.sharing.base import strategy_of
from embtie.tasks.model_building import build_model

V, D, BLOCK = 10_000, 128, 12 * 128 * 128 + 2 * 128  # PTB's vocabulary, the preset's width, one block


@pytest.fixture(scope="module")
def cache() -> TaskCache:
    return TaskCache()


def _spec(strategies: list[str]) -> CompareSpec:
    return CompareSpec(preset="ptb-gpt-tiny", strategies=strategies, seeds=2)


def _learned(cfg, cache) -> int:
    """Learned parameters of the model the run builds (on the CPU, weights allocated)."""
    model = build_model(cfg, cache.get(cfg).output_vocab_size(), cache.get(cfg).model_arguments)
    return count_parameters(model, strategy_of(model)).learned


def test_params_matching_deepens_the_tied_arms_within_the_tolerance(cache):
    matched = matching.match(_spec(["tied", "untied", "l2norm"]), "params", 0.05, cache)
    m = matched.matching
    assert m is not None
    # untied has V d more than tied: 1,280,000 = 6.5 blocks; the nearest depth is 2 + 7 (or 2 + 6)
    assert m.target == _learned(comparison.plan(_spec(["untied"]), folders=False)[0].cfg, cache)
    arms = {a.strategy: a for a in m.arms}
    assert arms["untied"].after == arms["untied"].before == 2
    assert arms["tied"].after == 9 and arms["l2norm"].after == 9  # docs/ladders.md: 9 blocks against 2
    # comparison.arms's tolerance: a block is 6.7% of untied's parameters, half a block 3.3% < 5%
    assert round(100 * BLOCK / m.target, 1) == 6.7 and round(50 * BLOCK / m.target, 1) == 3.3
    assert arms["tied"].value - arms["tied"].unadjusted == (arms["tied"].after - 2) * BLOCK
    torch.manual_seed(0)
    runs = comparison.plan(matched, folders=False)
    assert {r.strategy: r.cfg.model.n_layers for r in runs} == {s: a.after for s, a in arms.items()}
    for r in runs[::2]:  # one seed of each arm, built for real
        learned = _learned(r.cfg, cache)
        assert learned == arms[r.strategy].value
        assert abs(learned - m.target) <= 0.05 * m.target
    assert "--match params" in matched.command()


def test_flops_matching_leaves_tied_and_untied_alone(cache):
    """Untied's input table is a lookup: its FLOPs per token are tied's, so no arm moves."""
    m = matching.match(_spec(["tied", "untied"]), "flops", 0.05, cache).matching
    assert m is not None and all(a.after == a.before for a in m.arms)
    assert {a.value for a in m.arms} == {m.target}


def test_a_tolerance_no_depth_meets_is_refused_with_one_line(cache):
    with pytest.raises(ConfigError) as e:
        matching.match(_spec(["tied", "untied"]), "params", 0.001, cache)
    assert "beyond the tolerance 0.1%" in str(e.value) and "\n" not in str(e.value)


def test_a_model_without_a_depth_to_adjust_is_refused(cache):
    spec = CompareSpec(preset="ptb-lstm-small", strategies=["tied", "untied"], seeds=1)
    with pytest.raises(ConfigError, match="leave out --match"):
        matching.match(spec, "params", 0.05, cache)
