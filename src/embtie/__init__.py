"""embtie: input/output embedding sharing strategies for text-generation models.

The calls of a training loop that is not embtie's (docs/your-loop.md) are at the top: ``embtie.param_groups``
and ``embtie.on_train_step`` (``embtie.loop``). They are imported on first use, so that ``import embtie``
and ``embtie --help`` do not import torch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["__version__", "on_train_step", "param_groups"]

_LAZY = {"param_groups": "embtie.loop", "on_train_step": "embtie.loop"}
"""top-level name -> the module that defines it, imported at the first access."""

if TYPE_CHECKING:
    from embtie.loop import on_train_step, param_groups


def __getattr__(name: str) -> Any:
    """``embtie.param_groups`` and ``embtie.on_train_step``, imported at their first use."""
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'embtie' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])
