"""The transformers model families apply() supports, with their embedding conventions written out.

Each family says where the model applies an embedding scale and whether it adds a logits bias buffer,
so that apply() moves these conventions into the sharing object explicitly instead of guessing. The
module paths of the input embedding and output layer are found from the model's own
``get_input_embeddings()`` / ``get_output_embeddings()`` (every attribute that holds that module).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from torch import nn

from embtie.errors import ConfigError


@dataclass(frozen=True)
class Family:
    """Embedding conventions of one ``config.model_type``."""

    model_type: str
    encoder_decoder: bool
    """True: labels are aligned with the decoder outputs (no shift); False: causal LM, labels shifted by one."""
    scale: str
    """Where the model multiplies looked-up token vectors by a constant: "none"; "model" (the modules that own
    the embedding multiply by their float attribute ``embed_scale``, as Marian does); "module" (the embedding
    module multiplies by its own ``embed_scale``, as BART's ScaledWordEmbedding does)."""
    logits_bias: str | None = None
    """Name of a (1, V) buffer the model adds to the logits after its output layer (Marian, BART), or None."""
    scale_attr: str = "embed_scale"
    """The float attribute that holds the scale (Gemma's embedding keeps a float32 buffer ``embed_scale`` and
    the exact float ``scalar_embed_scale``: sqrt(hidden_size))."""
    softcap: str | None = None
    """Name of the config attribute with the final-logit soft cap c (z <- c tanh(z / c)) that the model applies
    after its output layer (Gemma 2/3: ``final_logit_softcapping``), or None where it has none."""
    output_rescale: str | None = None
    """Name of the config flag under which the model multiplies the decoder's final hidden states by
    d_model^-0.5 before its output layer (T5: ``scale_decoder_outputs``); part of the body, kept as it is."""
    head_always_tied: bool = False
    """True where transformers ties the output layer to the input table whatever the config says (T5 in
    transformers 5: T5Config forces tie_word_embeddings=True), so no untied head can be exported."""
    classes: str = ""
    """The model classes this was verified with (documentation)."""


FAMILIES: dict[str, Family] = {
    f.model_type: f
    for f in (
        Family("gpt2", False, "none", classes="GPT2LMHeadModel"),
        Family("llama", False, "none", classes="LlamaForCausalLM"),
        Family("mistral", False, "none", classes="MistralForCausalLM"),
        Family("qwen2", False, "none", classes="Qwen2ForCausalLM"),
        Family("qwen3", False, "none", classes="Qwen3ForCausalLM"),
        Family("gpt_neox", False, "none", classes="GPTNeoXForCausalLM"),
        Family("marian", True, "model", "final_logits_bias", classes="MarianMTModel"),
        Family("bart", True, "module", "final_logits_bias", classes="BartForConditionalGeneration"),
        Family("gemma", False, "module", scale_attr="scalar_embed_scale", classes="GemmaForCausalLM"),
        Family(
            "gemma2",
            False,
            "module",
            scale_attr="scalar_embed_scale",
            softcap="final_logit_softcapping",
            classes="Gemma2ForCausalLM",
        ),
        Family(
            "gemma3_text",
            False,
            "module",
            scale_attr="scalar_embed_scale",
            softcap="final_logit_softcapping",
            classes="Gemma3ForCausalLM",
        ),
        Family("phi3", False, "none", classes="Phi3ForCausalLM"),
        Family("olmo2", False, "none", classes="Olmo2ForCausalLM"),
        Family("smollm3", False, "none", classes="SmolLM3ForCausalLM"),
        Family(
            "t5",
            True,
            "none",
            output_rescale="scale_decoder_outputs",
            head_always_tied=True,
            classes="T5ForConditionalGeneration",
        ),
    )
}


def family_of(model: nn.Module) -> Family:
    """The Family of a transformers model with an LM head; a ConfigError naming the supported ones otherwise."""
    config = getattr(model, "config", None)  # foreign: a transformers model
    model_type = getattr(config, "model_type", None)  # foreign: a transformers config
    fam = FAMILIES.get(model_type)  # type: ignore[arg-type]
    if fam is None:
        raise ConfigError(
            f"embtie.hf.apply does not support {type(model).__name__} (model_type {model_type!r}); "
            f"supported model types: {', '.join(FAMILIES)}"
        )
    if model.get_output_embeddings() is None:
        raise ConfigError(
            f"{type(model).__name__} has no output layer; apply a strategy to the model with the LM head "
            f"({fam.classes})"
        )
    shared = getattr(config, "share_encoder_decoder_embeddings", True)  # foreign: a transformers config
    if model_type == "marian" and not shared:
        raise ConfigError(
            "embtie.hf.apply needs a Marian model with share_encoder_decoder_embeddings=True "
            "(one vocabulary for source and target)"
        )
    return fam


def input_modules(model: nn.Module, fam: Family) -> list[nn.Module]:
    """Every module that looks up token vectors: the model's input embedding, any module holding the very
    same weight tensor (transformers ties by parameter, e.g. Marian's shared / encoder / decoder tables),
    and for encoder-decoder models the encoder's and decoder's own embedding modules."""
    embedding = model.get_input_embeddings()
    output = model.get_output_embeddings()
    found: list[nn.Module] = [embedding]
    if fam.encoder_decoder:
        found += [model.get_encoder().get_input_embeddings(), model.get_decoder().get_input_embeddings()]
    for m in model.modules():
        if m is not output and getattr(m, "weight", None) is embedding.weight:  # foreign: transformers modules
            found.append(m)
    unique: list[nn.Module] = []
    for m in found:
        if m is not None and all(m is not u for u in unique):
            unique.append(m)
    return unique


def attribute_paths(root: nn.Module, target: nn.Module) -> list[tuple[nn.Module, str, str]]:
    """Every (parent module, attribute name, dotted path) under ``root`` whose child is ``target``."""
    found: list[tuple[nn.Module, str, str]] = []
    seen: set[tuple[int, str]] = set()
    for prefix, parent in root.named_modules(remove_duplicate=False):
        for attr, child in parent._modules.items():
            if child is target and (id(parent), attr) not in seen:
                seen.add((id(parent), attr))
                found.append((parent, attr, f"{prefix}.{attr}" if prefix else attr))
    return found


def model_embed_scale(
    fam: Family, embeddings: list[nn.Module], paths: list[tuple[nn.Module, str, str]]
) -> tuple[float, list[tuple[nn.Module, str]]]:
    """The factor the model applies to looked-up vectors, and the (module, dotted path) pairs that apply it
    outside the embedding module (to be set to 1.0 once the sharing object applies the factor itself)."""
    holders: list[tuple[nn.Module, str]] = []
    if fam.scale == "none":
        values = {1.0}
    elif fam.scale == "module":
        values = {float(getattr(m, fam.scale_attr, 1.0)) for m in embeddings}  # foreign: transformers embedding modules
    else:
        for parent, _, path in paths:
            if hasattr(parent, "embed_scale"):  # foreign: the transformers modules that own the embedding
                holders.append((parent, path.rsplit(".", 1)[0]))
        values = {float(parent.embed_scale) for parent, _ in holders} or {1.0}
    if len(values) > 1:
        raise ConfigError(f"the embeddings of this model are scaled differently ({sorted(values)}); cannot share them")
    return values.pop(), holders


def describe_scale(value: float, dim: int) -> float | str:
    """The embed_scale option for ``value``: "sqrt_d" when it is sqrt(dim) (exactly what the model computes)."""
    if value == math.sqrt(dim):
        return "sqrt_d"
    return value


def iter_pretrained_submodels(model: nn.Module) -> Iterator[nn.Module]:
    """The model and every submodule that is itself a transformers PreTrainedModel (they hold tying maps)."""
    for module in model.modules():
        if hasattr(module, "_tied_weights_keys"):  # foreign: transformers PreTrainedModels mark themselves so
            yield module
