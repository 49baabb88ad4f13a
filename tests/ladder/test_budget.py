"""Every rung's token budget follows the stated rule: ceil(R x body / tokens per step) steps, the body counted
by the GPT's own formula, the same for every strategy of a rung."""

from __future__ import annotations

import math

import pytest

from embtie.config import load_config
from embtie.ladder import budget, spec
from embtie.ladder.budget import TaskCache
from embtie.planning import model_shape


def gpt_body(d: int, layers: int, mlp_ratio: float = 4.0) -> int:
    """ptb-gpt-tiny's body (rotary, RMSNorm, no bias): per block qkv 3d^2 + proj d^2 + MLP 2 r d^2 + two norms
    2d; then the final norm d."""
    return layers * (4 * d * d + 2 * int(mlp_ratio * d) * d + 2 * d) + d


@pytest.fixture(scope="module")
def cache() -> TaskCache:
    return TaskCache()


def test_rung_budgets_follow_the_token_rule(cache):
    ladder = spec.parse("size=xs,s,l", tokens_per_param=20)
    got = budget.budgets("ptb-gpt-tiny", [], ladder, ladder.rungs(), cache)
    per_step = 16 * 64  # data.batch_size x data.bptt of the preset
    for b, (d, layers) in zip(got, [(32, 1), (48, 1), (64, 2)]):
        assert b.body == gpt_body(d, layers)
        assert b.tokens_per_step == per_step
        assert b.steps == math.ceil(20 * b.body / per_step)
        assert b.tokens >= 20 * b.body > b.tokens - per_step
        assert f"train.max_steps={b.steps}" in b.overrides()


def test_the_ratio_scales_the_steps_and_a_config_key_ladder_works(cache):
    ladder = spec.parse("model.mlp_ratio=2,4", tokens_per_param=3)
    two, four = budget.budgets("ptb-gpt-tiny", ["data.batch_size=8"], ladder, ladder.rungs(), cache)
    assert (two.body, four.body) == (gpt_body(128, 2, 2.0), gpt_body(128, 2, 4.0))
    assert two.steps == math.ceil(3 * two.body / (8 * 64))


def test_the_body_is_the_same_for_every_strategy(cache):
    bodies = set()
    for name in ("tied", "untied", "l2norm"):
        cfg = load_config("ptb-gpt-tiny", [f"sharing.name={name}"])
        bodies.add(model_shape.measure(cfg, cache.get(cfg)).body)
    assert bodies == {gpt_body(128, 2)}


def test_a_size_ladder_on_a_model_without_sizes_is_refused(cache):
    ladder = spec.parse("size=xs,s")
    with pytest.raises(Exception, match="sets the shape of a gpt model"):
        budget.budgets("ptb-lstm-small", [], ladder, ladder.rungs(), cache)
