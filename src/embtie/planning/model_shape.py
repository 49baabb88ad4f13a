"""The shape of a run's model, read off the model itself built on the meta device (no weights allocated).

The model is built the one way every run builds it (``tasks.model_building``), inside
``torch.device("meta")``: parameters have shapes and no storage. A strategy that computes its fixed table
from data while it is built (``hadamard`` searches its rows) cannot be built there; its sharing object
alone is then built on the CPU (a V x d table), the body still on the meta device.
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from embtie.analysis.param_counts import count_parameters
from embtie.config import RunConfig
from embtie.models import gpt, transformer_mt
from embtie.models.base import ModelConfig
from embtie.models.seq2seq import PlainEmbedding
from embtie.sharing.base import SharingStrategy, strategy_of
from embtie.tasks import Task
from embtie.tasks.meta_model import build_on_meta

DOT_PRODUCT_ATTENTION = (gpt.Attention, transformer_mt.Attention)
"""the modules whose cost grows with the context length (scaled dot-product attention)."""


@dataclass(frozen=True)
class ModelShape:
    """What the estimates need to know of one model."""

    vocab_size: int
    dim: int
    target_dim: int
    """d_t: the width the output matrix (V x d_t) is applied at."""
    learned: int
    """trainable parameters (``analysis.param_counts``: what a run's summary.json records)."""
    fixed: int
    """the strategy's fixed tables (buffers)."""
    lookup: int
    """elements of tables only looked up, never multiplied: input embeddings that are not the output
    matrix, a separate encoder embedding, learned positions."""
    attention_layers: int
    """scaled dot-product attention modules (self- and cross-attention)."""
    attention_dim: int
    """the width QK^T and AV are computed at: d for embtie's models, heads x head dim for a Hugging Face one."""
    body: int
    """the body's learned weights: the model's own, neither the strategy's nor a lookup table of the model's
    (learned positions, a separate encoder embedding) -- Kaplan et al.'s non-embedding N, the size a ladder's
    token budget is set from (``embtie.ladder``)."""
    attention_windows: tuple[int | None, ...] = ()
    """per attention module, its sliding window (the most keys a query sees) or None; () when all are full."""

    def attended(self, context: float) -> float:
        """Keys attended per query summed over the attention modules, at sequence length T = ``context``:
        L T for full attention, min(T, W) for a layer with a window W."""
        if not self.attention_windows:
            return self.attention_layers * context
        return sum(context if w is None else min(context, float(w)) for w in self.attention_windows)

    @property
    def matmul_params(self) -> int:
        """N of the 6N rule: weights every token is multiplied with (learned and fixed, lookups left out)."""
        return self.learned + self.fixed - self.lookup




def _lookup_elements(model: nn.Module, strategy: SharingStrategy) -> int:
    """Tables only looked up: nn.Embedding and PlainEmbedding modules, and the strategy's input table
    when its logits are taken against another matrix (a separate or a fixed one)."""
    seen: set[int] = set()
    total = 0
    tables = [m.weight for m in model.modules() if isinstance(m, nn.Embedding | PlainEmbedding)]
    if strategy.separate_output_weight() is not None or strategy.parameter_counts()["fixed"] > 0:
        tables.append(strategy.weight)
    for w in tables:
        if id(w) not in seen and w.requires_grad:
            seen.add(id(w))
            total += w.numel()
    return total


def _model_tables(model: nn.Module, strategy: SharingStrategy) -> int:
    """Learned elements of the model's own lookup tables (not the strategy's): learned positions, a separate
    encoder embedding."""
    own = {id(p) for p in strategy.parameters()}
    tables = {id(m.weight): m.weight for m in model.modules() if isinstance(m, nn.Embedding | PlainEmbedding)}
    return sum(w.numel() for k, w in tables.items() if k not in own and w.requires_grad)


def _attention(model: nn.Module, config: ModelConfig) -> tuple[int, int, tuple[int | None, ...]]:
    """(scaled dot-product attention modules, the width they run at, their sliding windows): what the model's
    config declares (``ModelConfig.declared_attention``: a Hugging Face body's config), else embtie's own
    attention modules at the model's width d, full."""
    declared = config.declared_attention()
    if declared is not None:
        return declared
    return sum(isinstance(m, DOT_PRODUCT_ATTENTION) for m in model.modules()), config.embedding_dim, ()


def measure(cfg: RunConfig, task: Task) -> ModelShape:
    """The shape of the model ``cfg`` trains on ``task`` (whose vocabulary sets V)."""
    model = build_on_meta(cfg, task)
    strategy = strategy_of(model)
    counts = count_parameters(model, strategy)
    attention_layers, attention_dim, windows = _attention(model, cfg.model)
    return ModelShape(
        vocab_size=task.output_vocab_size(),
        dim=cfg.model.embedding_dim,
        target_dim=strategy.target_dim,
        learned=counts.learned,
        fixed=counts.fixed,
        lookup=_lookup_elements(model, strategy),
        attention_layers=attention_layers,
        attention_dim=attention_dim,
        attention_windows=windows,
        body=counts.learned - counts.sharing_learned - _model_tables(model, strategy),
    )
