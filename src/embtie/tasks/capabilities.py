"""What a task can do beyond training and perplexity, declared by inheriting these classes (commands,
diagnostics and reports ask ``isinstance(task, Translates)``, never ``hasattr``).

- ``Translates``: decodes source sentences into target text and scores it (BLEU, chrF).
- ``Captions``: decodes images into captions and scores them (COCO metrics).

Both are generic in the task's kind of model (``Translates[Seq2Seq]``), like ``Task`` itself; commands
that hold only a task's class ask ``issubclass(cls, Translates)``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any, Generic, TypeVar

from torch import nn

M = TypeVar("M", bound=nn.Module)


class Translates(ABC, Generic[M]):
    """A task whose model translates (``embtie eval`` scores BLEU, ``embtie translate`` decodes)."""

    @abstractmethod
    def evaluate_translation(
        self,
        model: M,
        split: str = "valid",
        src_file: str | Path | None = None,
        ref_file: str | Path | None = None,
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        tok_bleu: bool = True,
        ref_tokenized: bool | None = None,
    ) -> dict[str, Any]:
        """Decode ``split`` (or ``src_file`` against ``ref_file``) and score it: {"bleu", "chrf",
        "hyps", signatures, ...}."""

    @abstractmethod
    def translate(
        self,
        model: M,
        sentences: list[str],
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """Detokenized translations of raw source ``sentences``."""


class Captions(ABC, Generic[M]):
    """A task whose model captions images (``embtie eval`` scores COCO metrics, ``embtie caption``)."""

    @abstractmethod
    def evaluate_captions(
        self,
        model: M,
        split: str = "valid",
        captions_file: str | Path | None = None,
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        metrics: tuple[str, ...] = ("bleu", "meteor", "rouge_l", "cider"),
    ) -> dict[str, Any]:
        """Caption every image of ``split`` and score against its references."""

    @abstractmethod
    def caption_files(self, model: M, paths: list[Path], *, beam: int | None = None) -> list[str]:
        """Captions of image files, encoded by the run's image encoder."""
