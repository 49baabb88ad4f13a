"""--ladder as written: the rungs it makes (config changes, stable folders) and the ladders it refuses."""

from __future__ import annotations

import pytest

from embtie.errors import ConfigError
from embtie.ladder import sizes, spec


def test_a_config_key_ladder_makes_one_override_per_rung():
    ladder = spec.parse("model.n_layers=1,2,4")
    rungs = ladder.rungs()
    assert [r.overrides for r in rungs] == [("model.n_layers=1",), ("model.n_layers=2",), ("model.n_layers=4",)]
    assert [r.folder for r in rungs] == ["n_layers-1", "n_layers-2", "n_layers-4"]
    assert ladder.tokens_per_param == spec.DEFAULT_TOKENS_PER_PARAM == 20.0


def test_a_size_ladder_sets_depth_width_and_heads_together():
    ladder = spec.parse("size=xs,m", tokens_per_param=5, extrapolate="6xl")
    xs, m = ladder.rungs()
    assert xs.overrides == ("model.dim=32", "model.n_layers=1", "model.n_heads=2")
    assert m.overrides == ("model.dim=64", "model.n_layers=1", "model.n_heads=4")
    assert [r.value for r in ladder.beyond()] == ["6xl"]
    assert ladder.options() == ["--ladder", "size=xs,m", "--tokens-per-param", "5", "--extrapolate", "6xl"]


def test_named_sizes_grow_and_keep_an_even_head_width():
    shapes = list(sizes.SIZES.values())
    bodies = [12 * s.n_layers * s.dim**2 for s in shapes]
    assert bodies == sorted(bodies) and len(set(bodies)) == len(bodies)
    assert all(s.dim % s.n_heads == 0 and (s.dim // s.n_heads) % 2 == 0 for s in shapes)


@pytest.mark.parametrize(
    ("text", "extrapolate", "expect"),
    [
        ("model.n_layers", None, "is not KEY=V1,V2"),
        ("=1,2", None, "is not KEY=V1,V2"),
        ("model.n_layers=", None, "is not KEY=V1,V2"),
        ("model.n_layers=4", None, "at least 2 values"),
        ("model.n_layers=1,,2", None, "empty value"),
        ("model.n_layers=1,2,1", None, "lists '1' twice"),
        ("size=xs,huge", None, "is not a size"),
        ("seed=1,2", None, "--seeds"),
        ("sharing.name=tied,untied", None, "--strategies"),
        ("sharing.options.z_loss=0,1", None, "labelled --strategies"),
        ("train.max_steps=100,200", None, "--tokens-per-param"),
        ("layers=1,2", None, "neither 'size' nor a config key"),
        ("size=xs,s", "s", "a rung the ladder trains"),
    ],
)
def test_malformed_ladders_are_refused_with_one_line(text, extrapolate, expect):
    with pytest.raises(ConfigError) as e:
        spec.parse(text, extrapolate=extrapolate)
    assert expect in str(e.value) and "\n" not in str(e.value)


def test_overrides_that_fight_the_ladder_are_refused():
    ladder = spec.parse("size=xs,s")
    with pytest.raises(ConfigError, match=r"model\.dim, which --ladder size=xs,s steps"):
        spec.check_overrides(ladder, ["model.dim=64"])
    with pytest.raises(ConfigError, match="--tokens-per-param"):
        spec.check_overrides(ladder, ["train.max_steps=10"])
    spec.check_overrides(ladder, ["train.lr=0.001", "model.mlp_ratio=2"])
