"""The Hugging Face extra: one clear line when transformers is missing or too old."""

from __future__ import annotations

from types import ModuleType

from embtie.errors import EmbtieError

INSTALL_HINT = "pip install 'embtie[hf]'"
MIN_MAJOR = 5


class MissingExtraError(EmbtieError, ImportError):
    """An optional dependency is not installed (or too old); the message names the extra to install."""


def require_transformers() -> ModuleType:
    """Import and return ``transformers``; a MissingExtraError naming the fix when it is absent or < 5."""
    try:
        import transformers
    except ImportError:
        raise MissingExtraError(
            f"embtie.hf needs Hugging Face transformers, which is not installed: {INSTALL_HINT}"
        ) from None
    version = getattr(transformers, "__version__", "0")  # foreign: the transformers package
    major = int(version.split(".")[0]) if version.split(".")[0].isdigit() else 0
    if major < MIN_MAJOR:
        raise MissingExtraError(f"embtie.hf needs transformers >= {MIN_MAJOR} (found {version}): {INSTALL_HINT}")
    return transformers
