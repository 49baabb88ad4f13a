"""The Hugging Face extra: one clear line when transformers is missing or too old, and the errors transformers
raises for a config's bad values (``config_errors``), which callers turn into one line."""

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


def config_errors(*more: type[BaseException]) -> tuple[type[BaseException], ...]:
    """The exceptions transformers raises for a config with a bad value while building a config or a model:
    ValueError / TypeError / KeyError (an unknown activation name is a KeyError), and huggingface_hub's strict
    dataclass validation (``"tie_word_embeddings": "yes"``), which is none of those; and ``more``."""
    try:
        from huggingface_hub.errors import StrictDataclassError
    except ImportError:  # an older huggingface_hub without strict dataclasses
        return (ValueError, TypeError, KeyError, *more)
    return (ValueError, TypeError, KeyError, StrictDataclassError, *more)


def first_line(e: BaseException) -> str:
    """``"TypeName: first line of the message"`` (transformers' messages run over several lines); a first
    line that ends in a colon is followed by the next ("Validation error for field 'x': TypeError: ...")."""
    lines = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    if not lines:
        return type(e).__name__
    said = f"{lines[0]} {lines[1]}" if lines[0].endswith(":") and len(lines) > 1 else lines[0]
    return f"{type(e).__name__}: {said}"
