"""What a task is to the training loop (``embtie.training.api``): data, model, loss and evaluation.

A task turns a RunConfig into everything the loop needs, so that the loop is the same for language
modelling (``lm``) and translation:

- ``build_model()``: the model (with its sharing object(s)) for this task's vocabulary, built by
  ``embtie.tasks.model_building`` for every task alike; a task says only how many rows its output
  layer has (``output_vocab_size``) and which extra constructor arguments its model takes
  (``model_arguments``). ``model_kind`` is the base class its models derive from.
- ``steps_per_epoch(world)`` and ``train_batch(epoch, index, rank, world, device)``: random access to
  the training batches, so the data position of a run is just (epoch, index) and resuming needs no
  iterator state. ``rank``/``world`` select this process's share of the global batch.
- ``init_carry`` / ``loss``: the training loss of one batch. ``carry`` is state passed from one batch
  to the next (an LSTM's hidden state; ``None`` for stateless models) and saved in checkpoints.
- ``evaluate(model, split, path)``: metrics of a split (``{"loss", "ppl", "tokens", ...}``), token-weighted.
- ``save(run_dir)`` / ``load(cfg, run_dir)``: the vocabulary, kept with the run.
- ``check_data(cfg)``: the data files are there and intact (``embtie train`` asks before it writes anything).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar, cast

import numpy as np
import torch
from torch import Tensor, nn

from embtie import models
from embtie.errors import ConfigError
from embtie.tasks import model_building

if TYPE_CHECKING:
    from embtie.config import RunConfig
    from embtie.sharing.base import SharingStrategy

M = TypeVar("M", bound=nn.Module)
"""the kind of model a task trains (``Task.model_kind``)."""


@dataclass
class StepLoss:
    """The loss of one training batch on one process."""

    objective: Tensor
    """scalar to backpropagate: mean cross-entropy + the strategy's regularization()."""
    ce: Tensor
    """scalar mean cross-entropy over this batch's target tokens (detached), for logging."""
    tokens: int
    """target tokens in this batch (on this process)."""


@dataclass(frozen=True)
class TrainingText:
    """One pass over the training data: its target tokens (what a run's tokens/s counts, </s> included)
    and the sequences they come in (LM windows, sentence pairs, captions)."""

    tokens: int
    sequences: int

    @property
    def mean_length(self) -> float:
        """Target tokens per sequence: the context length self-attention works over."""
        return self.tokens / max(self.sequences, 1)


class Task(ABC, Generic[M]):
    """Base class of tasks; register subclasses with ``embtie.tasks.register``."""

    name: ClassVar[str] = ""
    data_config: ClassVar[type]
    """the dataclass of the config's ``data`` section (with a ``validate()`` method)."""
    metrics: ClassVar[tuple[str, ...]] = ("loss",)
    """validation metrics ``score`` computes (``train.monitor`` must be one of them)."""
    model_kind: ClassVar[type[nn.Module]] = nn.Module
    """the base class of the models this task trains (``model.name`` must name one)."""
    model_kind_name: ClassVar[str] = "model"
    """what ``model_kind`` is called in errors ("translation model")."""

    def __init__(self, cfg: RunConfig) -> None:
        self.cfg = cfg

    @classmethod
    def check_model(cls, cfg: RunConfig) -> None:
        """``model.name`` names a model of ``model_kind``; a ConfigError listing those otherwise."""
        if not issubclass(models.model_class(cfg.model.name), cls.model_kind):
            fitting = [n for n in models.names() if issubclass(models.model_class(n), cls.model_kind)]
            raise ConfigError(
                f"model {cfg.model.name!r} is not a {cls.model_kind_name}; use model.name= one of: {', '.join(fitting)}"
            )

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        """Cross-section checks (e.g. sequence length vs the model's max_len); raise ConfigError."""

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        """Check, before anything is written, that the data ``cfg`` trains on is there and intact (cheap:
        existence and checksums, cached per process); raise DataError naming the file otherwise."""

    # ------------------------------------------------------------------ model
    def build_model(self) -> M:
        """The model for this task, with its strategy as ``model.sharing``; its weights are a function of
        the config and ``cfg.seed`` alone (``embtie.seeding``'s streams), whatever the caller's RNG."""
        model = model_building.build_model(self.cfg, self.output_vocab_size(), self.model_arguments)
        return cast(M, model)  # check_model made sure the registry's class is a model_kind

    @abstractmethod
    def output_vocab_size(self) -> int:
        """Rows of the output layer: the vocabulary of the sharing object."""

    def model_arguments(self, shared: SharingStrategy) -> dict[str, Any]:
        """Constructor arguments of the model besides its config and sharing object, made from the body's
        random stream just before the model (translation: the encoder's own embedding)."""
        return {}

    # ------------------------------------------------------------------ training data
    @abstractmethod
    def steps_per_epoch(self, world_size: int = 1) -> int:
        """Optimizer steps in one pass over the training data."""

    @abstractmethod
    def training_text(self) -> TrainingText:
        """The size of one pass over the training data; cheap: no model, no image features (``embtie plan``
        sizes a run's budget with it)."""

    @abstractmethod
    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> Any:
        """Batch ``index`` (0-based) of ``epoch``: this rank's share of the global batch, on ``device``."""

    def init_carry(self, model: M, rank: int, world_size: int, device: torch.device) -> Any:
        """State carried across batches, reset at each epoch start (None for stateless models)."""
        return None

    @abstractmethod
    def loss(self, model: M, batch: Any, carry: Any) -> tuple[StepLoss, Any]:
        """The training loss of ``batch`` (via the model's sharing object) and the next carry."""

    def carry_to_tensors(self, carry: Any) -> dict[str, Tensor]:
        """Carry -> named tensors for a checkpoint."""
        return {}

    def carry_from_tensors(self, tensors: dict[str, Tensor], device: torch.device) -> Any:
        return None

    # ------------------------------------------------------------------ vocabulary facts
    def output_token_counts(self) -> np.ndarray | None:
        """(V,) how often each row of the output layer's vocabulary occurs as a training target (norm vs
        frequency, the frequency bands of the update-path probe); None when the task cannot say."""
        return None

    def english_words(self) -> dict[str, int] | None:
        """word -> output row, when the output vocabulary is English words (the word-similarity
        benchmarks are English); None for subwords or another language."""
        return None

    # ------------------------------------------------------------------ evaluation
    @abstractmethod
    def evaluate(
        self, model: M, split: str = "valid", path: str | Path | None = None, max_batches: int | None = None
    ) -> dict[str, Any]:
        """Token-weighted metrics of ``split`` (or of the user file ``path``): at least loss, ppl, tokens."""

    def score(self, model: M, metric: str, result: dict[str, Any]) -> float:
        """The validation ``metric`` (one of ``metrics``) of ``model``, given the ``evaluate`` result of
        the same validation (the loss is read from it; other metrics may decode)."""
        if metric != "loss":
            raise ValueError(f"task {self.name!r} has no validation metric {metric!r}")
        return float(result["loss"])

    # ------------------------------------------------------------------ run directory
    def save(self, run_dir: Path) -> None:
        """Write what is needed to rebuild this task without the training data (the vocabulary)."""

    @classmethod
    def load(cls, cfg: RunConfig, run_dir: Path) -> Task[M]:
        """Rebuild the task of a run directory (default: from the config alone)."""
        return cls(cfg)
