"""User-facing errors: one line that names the problem and the fix."""

from __future__ import annotations


class EmbtieError(Exception):
    """Base class of errors that the command line prints as one line (no traceback)."""


class ConfigError(EmbtieError, ValueError):
    """An option, preset or config value that makes no sense; the message says what to write instead."""


class DataError(EmbtieError):
    """A missing or corrupted data file; the message says where embtie looked and how to fix it."""


class NonFiniteError(EmbtieError):
    """Training met a loss, gradient or weight that is not finite and stopped before using it (embtie's loop,
    or a Trainer with ``embtie.hf.callback.FiniteCallback``)."""
