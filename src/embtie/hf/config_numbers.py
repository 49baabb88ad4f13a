"""The numbers of a foreign model config (a transformers config JSON, or a save_pretrained folder's
config.json) checked by the rules embtie's own model keys have, before anything is built: transformers
checks almost none of them (``n_layer: -1`` built a GPT-2 without blocks and trained it, exit 0).

By key: a layer count (``n_layer``, ``num_hidden_layers``, ``encoder_layers``, ...) has the range of every
layer count (``schema.LAYER_COUNT``); a width, head count or length (``hidden_size``, ``n_head``,
``max_position_embeddings``, ...) is an integer >= 1; a dropout rate is in [0, 1); an epsilon in (0, 1];
any other number finite and within the magnitude every unbounded key has (``schema.MAX_INT``). Nested
configs (``text_config``, ``rope_scaling``) are checked alike; null leaves a value unset.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from embtie.schema import LAYER_COUNT, Setting, check

_LAYERS = re.compile(r"(n_layers?|num_hidden_layers|num_layers|(num_)?(encoder|decoder)_layers)")
_SIZES = re.compile(
    r"(hidden_size|n_embd|d_model|intermediate_size|n_inner|ffn_dim|(encoder|decoder)_ffn_dim|d_ff|d_kv|"
    r"num_attention_heads|n_head|num_key_value_heads|(encoder|decoder)_attention_heads|head_dim|n_positions|"
    r"n_ctx|max_position_embeddings|vocab_size)"
)
_RULES: list[tuple[re.Pattern[str], Setting, type]] = [
    (_LAYERS, LAYER_COUNT, int),
    (_SIZES, Setting("a width, head count or length", ge=1), int),
    (re.compile(r".*(dropout|pdrop).*"), Setting("a dropout rate", ge=0, lt=1), float),
    (re.compile(r".*_(eps|epsilon)"), Setting("an epsilon", gt=0, le=1), float),
]
_ANY = Setting("a number")


def check_numbers(raw: dict[str, Any], source: str | Path, prefix: str = "") -> None:
    """A one-line ConfigError naming ``source`` and the key when a number of ``raw`` is out of its range."""
    for key, value in raw.items():
        name = f"model config {source}: {prefix}{key}"
        if isinstance(value, dict):
            check_numbers(value, source, f"{prefix}{key}.")
        elif isinstance(value, list):  # token ids, rope factors: numbers, each within the generic bounds
            for v in value:
                if isinstance(v, int | float) and not isinstance(v, bool):
                    check(v, float, name, _ANY)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            spec, tp = next(((s, t) for pattern, s, t in _RULES if pattern.fullmatch(key)), (_ANY, float))
            check(value, tp, name, spec)
