"""Finding the sharing object in use when peft has wrapped it.

With ``LoraConfig(modules_to_save=["embtie_sharing"])`` peft replaces ``model.embtie_sharing`` by a
wrapper holding the frozen original and a trainable copy per adapter, and forwards attribute reads to the
active copy. The embedding and head modules of a patched model must use that same copy (otherwise the
input side would read the frozen original while the loss trains the copy: the tie silently broken), and
``merge_and_unload()`` leaves the copy in place of the wrapper. ``active_sharing`` resolves either case
without importing peft (the wrapper is recognised by its ``original_module`` / ``modules_to_save``).
"""

from __future__ import annotations

from torch import nn

from embtie.sharing.base import SharingStrategy


def active_sharing(module: nn.Module) -> SharingStrategy:
    """``module`` itself when it is a sharing object; for a peft modules_to_save wrapper, the active
    adapter's copy, or the original while adapters are disabled or none of them wraps it."""
    if isinstance(module, SharingStrategy):
        return module
    original = getattr(module, "original_module", None)  # foreign: peft's ModulesToSaveWrapper
    copies = getattr(module, "modules_to_save", None)  # foreign: peft's ModulesToSaveWrapper
    if not isinstance(original, SharingStrategy) or not isinstance(copies, nn.ModuleDict):
        raise TypeError(f"expected an embtie sharing object, got {type(module).__name__}")
    active = list(getattr(module, "active_adapters", []) or [])  # foreign: peft's ModulesToSaveWrapper
    disabled = getattr(module, "disable_adapters", False)  # foreign: peft's ModulesToSaveWrapper
    if disabled or not active or active[0] not in copies:
        return original
    return copies[active[0]]
