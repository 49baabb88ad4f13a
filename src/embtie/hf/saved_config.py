"""The guard a patched model's ``save_pretrained`` writes into config.json, so that plain ``from_pretrained``
refuses the folder at once instead of returning a wrong model.

Unguarded, ``AutoModelForCausalLM.from_pretrained`` on such a folder builds the stock model class, finds
none of its embedding and output-layer keys (the sharing object's tensors are under ``embtie_sharing.*``),
leaves them at a random init and only logs its generic load report: logits off by several units, silently.

The guard is config.json's ``transformers_weights`` entry, where transformers reads the name of a
checkpoint's weights file before it opens any weights; a value that names no safetensors file makes
``from_pretrained`` (any model class, Auto or not) raise a ValueError ending in that value, so the value is
the one line that says what to do: ``embtie.hf.load(path)``. transformers' own ``save_pretrained`` drops
the entry from a config (it is a load-time setting), so it is written after the save, and
``embtie.hf.load`` removes it from the config it loads.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

CONFIG = "config.json"
GUARD_KEY = "transformers_weights"


def guard_message(strategy: str) -> str:
    """The value of the guard: the one line ``from_pretrained`` prints last, after transformers' own words
    ("... seems to be incorrect: it is neither a safetensors file ... nor ..."): that nothing is wrong with
    the files, what the folder is, and the one call that loads it."""
    return (
        f"nothing is wrong with the files: this folder is an embtie save (a model patched with strategy "
        f"{strategy!r}; model.safetensors holds its tables under embtie_sharing.*), which from_pretrained cannot "
        "rebuild; the one call that loads it is embtie.hf.load(path) (embtie.hf.export(model, out) writes "
        "stock weights that from_pretrained loads)"
    )


def guard(directory: str | Path, strategy: str) -> None:
    """Add the guard to ``directory``/config.json (written by ``save_pretrained``), keeping transformers'
    layout of the file (sorted keys, indent 2)."""
    path = Path(directory) / CONFIG
    config: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    config[GUARD_KEY] = guard_message(strategy)
    path.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def unguard(config: Any) -> None:
    """Remove the guard from a transformers config read from a guarded folder (so that this config, passed
    on to another ``from_pretrained``, does not refuse that one)."""
    if hasattr(config, GUARD_KEY):  # foreign: a transformers config
        delattr(config, GUARD_KEY)
