"""A foreign model config's numbers are checked by embtie's rules before anything is built (issue 54, class 5):
``n_layer: -1`` built a GPT-2 without blocks and trained it. Every default config of the families embtie knows
passes unchanged."""

from __future__ import annotations

import json

import pytest

from embtie.errors import ConfigError
from embtie.hf.config_numbers import check_numbers

GPT2 = {"model_type": "gpt2", "n_layer": 1, "n_embd": 16, "n_head": 2, "n_positions": 64, "n_inner": None}


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"n_layer": -1}, "model config c.json: n_layer=-1 must be in [1, 1024]"),
        ({"n_layer": 2**31 - 1}, "n_layer=2147483647 must be in [1, 1024]"),
        ({"n_layer": 2.5}, "n_layer=2.5 must be an integer"),
        ({"n_embd": 0}, "n_embd=0 must be >= 1"),
        ({"num_key_value_heads": -2}, "num_key_value_heads=-2 must be >= 1"),
        ({"resid_pdrop": 1.0}, "resid_pdrop=1.0 must be in [0, 1)"),
        ({"layer_norm_epsilon": 1e308}, "layer_norm_epsilon=1e+308 must be in (0, 1]"),
        ({"initializer_range": 1e300}, "initializer_range=1e+300 is too large"),
        ({"rope_scaling": {"factor": float("inf")}}, "rope_scaling.factor=inf must be a finite number"),
        ({"eos_token_id": [1, 1e30]}, "eos_token_id=1e+30 is too large"),
    ],
)
def test_a_number_out_of_its_range_is_one_line_naming_the_file_and_key(change, message):
    with pytest.raises(ConfigError) as e:
        check_numbers({**GPT2, **change}, "c.json")
    assert str(e.value).startswith("model config c.json: ") and message in str(e.value), str(e.value)
    assert "\n" not in str(e.value)


def test_the_default_configs_of_known_families_pass():
    transformers = pytest.importorskip("transformers")
    from embtie.hf.families import FAMILIES

    for name in sorted(set(FAMILIES) | {"llama", "mistral", "qwen2", "gemma2", "gpt_neox", "marian", "bart", "t5"}):
        check_numbers(json.loads(transformers.AutoConfig.for_model(name).to_json_string()), name)
    check_numbers(GPT2, "c.json")
