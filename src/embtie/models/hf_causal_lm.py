"""A Hugging Face causal LM as a model of the ``lm`` task (``model.name: hf``, ``model.hf: PATH_OR_NAME``).

    body = transformers model of model.hf           GPT-2, Llama, ... (embtie.hf.families)
    embtie.hf.adopt(body, sharing)                  its embedding and head become the sharing object
    h = final hidden states of body(ids)            (B, T, d)  <- forward() returns this
    loss = sharing.loss(h, targets)                 computed by the task, as for gpt and lstm

``model.hf`` names a transformers config (a packaged name such as ``gpt2-tiny``, or a config JSON): the body
is drawn fresh from the run's "body" stream and E keeps the strategy's own init, exactly as embtie's GPT
does, so the two compare like for like. Or it names a local ``save_pretrained`` folder with its tokenizer:
the body starts from the checkpoint, whose token rows are rearranged to the task's vocabulary
(``embtie.hf.vocab_transfer``) and copied into the sharing object, so that the strategy decides what the
pretrained tables become: ``tied`` keeps a tied checkpoint's head (re-ties an untied one), ``untied`` copies
the shared matrix into a new head (keeps an untied checkpoint's), ``l2norm``, ``cosine``, ... re-parametrise
it. The step-0 loss of the report says what each choice costs before any training.

transformers is imported when a model is built or its config read, never when embtie starts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, ClassVar, cast

from torch import Tensor, nn

from embtie.models.base import ModelConfig
from embtie.models.language_model import LanguageModel
from embtie.models.registry import register
from embtie.schema import Setting
from embtie.sharing.base import SharingStrategy


@dataclass
class HFConfig(ModelConfig):
    """A Hugging Face causal LM trained by embtie (needs the hf extra: pip install 'embtie[hf]')."""

    name: str = "hf"
    hf: Annotated[
        str,
        Setting(
            "the transformers causal LM: a packaged config name (gpt2-tiny, llama-tiny), a config JSON (fresh "
            "weights) or a local save_pretrained folder with its tokenizer (a pretrained starting point)"
        ),
    ] = "gpt2-tiny"

    @property
    def embedding_dim(self) -> int:
        return _shape(self.hf).dim

    @property
    def max_len(self) -> int | None:
        return _shape(self.hf).max_len

    @property
    def pretrained(self) -> bool:
        """model.hf is a save_pretrained folder (its weights are the starting point)."""
        return _shape(self.hf).pretrained

    def check(self) -> None:
        _shape(self.hf)  # a missing file, bad JSON or unknown family is a one-line error now, not at build

    def declared_attention(self) -> tuple[int, int, tuple[int | None, ...]]:
        """As the transformers config declares it (``embtie.hf.sources.Shape``): one module per hidden layer
        at heads x head dim, with its sliding windows; transformers' modules are unknown to embtie's planner."""
        shape = _shape(self.hf)
        return shape.attention_layers, shape.attention_dim, shape.attention_windows


def _shape(spec: str) -> Any:
    from embtie.hf.sources import shape_of

    return shape_of(spec)


@register("hf", HFConfig)
class HFCausalLM(LanguageModel):
    """``forward(ids (B, T)) -> h (B, T, d)``: the final hidden states of the transformers model ``body``,
    whose embedding and output layer are ``sharing`` (``body.get_output_embeddings()`` serves it)."""

    stateful: ClassVar[bool] = False
    reads_task_vocabulary: ClassVar[bool] = True

    def __init__(
        self,
        config: HFConfig,
        sharing: SharingStrategy,
        vocabulary: Sequence[str] = (),
        sharing_options: dict[str, Any] | None = None,
    ) -> None:
        """vocabulary: the task's tokens in id order (a pretrained checkpoint's rows are matched to them);
        sharing_options: the options ``sharing`` was built with (recorded in the body's config)."""
        from embtie.hf.lm_body import build_body

        super().__init__()
        self.config = config
        self.sharing = sharing
        body, missing = build_body(config.hf, sharing, tuple(vocabulary), dict(sharing_options or {}))
        self.body = body
        self.missing_tokens = missing
        """task tokens the pretrained checkpoint had no row for (0 for a fresh model)."""

    def save_pretrained(self, folder: str | Path) -> None:
        """Save the transformers model into ``folder`` (patched: ``embtie.hf.load`` reads it back and
        ``embtie.hf.export`` writes stock weights from it)."""
        cast(Any, self.body).save_pretrained(folder)

    def fsdp_units(self) -> list[nn.Module]:
        """The transformer layers (``train.parallel=fsdp``)."""
        from embtie.hf.lm_body import layers

        return layers(self.body)

    def forward(self, ids: Tensor) -> Tensor:
        """ids: (B, T) long -> h: (B, T, d), the hidden states the body's output layer reads."""
        head = cast(Any, self.body).get_output_embeddings()  # an embtie.hf.modules.EmbtieHead
        with head.capture() as captured:
            self.body(input_ids=ids, use_cache=False)
        return captured[0]
