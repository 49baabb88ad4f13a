"""apply(): put one embtie sharing object in place of a transformers model's token embedding(s) and
output layer."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, TypeVar

import torch
from torch import nn

from embtie import sharing as catalogue
from embtie.errors import ConfigError
from embtie.hf.families import (
    Family,
    attribute_paths,
    describe_scale,
    family_of,
    input_modules,
    iter_pretrained_submodels,
    model_embed_scale,
)
from embtie.hf.model import EmbtieModelMixin, check_logits_with_labels, make_patched_class
from embtie.hf.modules import EmbtieEmbedding, EmbtieHead
from embtie.hf.peft_compat import active_sharing
from embtie.sharing.base import SharingStrategy

M = TypeVar("M", bound=nn.Module)

RECORD_FORMAT = 2
"""2: ``logits_with_labels`` may be "eval" (the default since); a format-1 record's False was the old default."""


def is_patched(model: nn.Module) -> bool:
    """True when ``model`` went through ``embtie.hf.apply``."""
    return isinstance(model, EmbtieModelMixin)


def sharing_of(model: nn.Module) -> SharingStrategy:
    """The sharing object of a patched model."""
    if not is_patched(model):
        raise ConfigError(f"{type(model).__name__} has no embtie sharing object; call embtie.hf.apply(model, ...)")
    return active_sharing(model.embtie_sharing)


def apply(
    model: M,
    strategy: str,
    *,
    copy_weights: bool = True,
    logits_with_labels: bool | str = "eval",
    **options: Any,
) -> M:
    """Replace ``model``'s input embedding(s) and output layer with one sharing object; returns ``model``
    (patched in place).

    model: a supported transformers model with an LM head (see ``embtie.hf.families.FAMILIES``).
    strategy, options: as for ``embtie.sharing.build``; vocab_size and dim come from the model.
    copy_weights: copy the model's embedding matrix into the sharing object's E (and its output matrix into
        an untied O, a nonzero ``final_logits_bias`` into the bias), so that ``tied`` on a tied model gives
        exactly the model's logits. False keeps the strategy's fresh init (``embtie.hf.load`` uses this).
    logits_with_labels: whether forward(labels=...) also returns the N x V logits. "eval" (default): in eval
        mode only, so that transformers' Trainer hands them to ``compute_metrics`` (as a stock model does),
        while a training step keeps the memory-lean ``sharing.loss`` that never holds them; True: also
        while training; False: never (evaluation stays memory-lean too; compute_metrics then gets none).

    Conventions made explicit: an embedding scale the model applies (Marian/BART ``scale_embedding``:
    sqrt(d_model)) becomes the sharing object's ``embed_scale`` option and the model's own factor is set to
    1; a logits bias buffer (``final_logits_bias``) becomes the sharing object's ``bias`` when nonzero and is
    replaced by a (1, 1) zero buffer. Everything done is listed in ``model.config.embtie["conventions"]``.
    """
    _check_applicable(model, strategy, options)
    logits_with_labels = check_logits_with_labels(logits_with_labels)
    tables = _Tables.of(model)
    opts = dict(options)
    conventions: list[str] = []
    scale_holders = _take_embed_scale(tables, opts, conventions)
    logits_bias, bias_to_copy = _take_logits_bias(model, tables, copy_weights, opts, conventions)
    _take_softcap(model, tables.family, opts, conventions)
    conventions.extend(_output_rescale_note(model, tables.family))
    if getattr(tables.output, "bias", None) is not None:  # foreign: a transformers output layer
        raise ConfigError("output layers with their own bias are not supported by embtie.hf")
    sharing = _build_sharing(strategy, tables, opts, training=model.training)
    _take_over(model, sharing, tables, _Taken(opts, conventions, scale_holders, logits_bias, bias_to_copy),
               copy_weights=copy_weights, logits_with_labels=logits_with_labels)  # fmt: skip
    return model


def adopt(
    model: M,
    sharing: SharingStrategy,
    options: dict[str, Any],
    *,
    copy_weights: bool,
    logits_with_labels: bool | str = "eval",
) -> M:
    """``apply`` with a sharing object built elsewhere (embtie's model building, ``model.name: hf``): the
    model takes ``sharing`` as it is, so the strategy decides nothing here. ``options``: the ones ``sharing``
    was built with (recorded for save/load). The model's vocabulary and width must be the object's; a model
    that scales its embeddings needs the same ``embed_scale`` option (a ConfigError names it); a nonzero
    logits bias needs ``bias``. ``copy_weights``: the model's tables become E (and an untied O)."""
    _check_applicable(model, sharing.name, options)
    logits_with_labels = check_logits_with_labels(logits_with_labels)
    tables = _Tables.of(model)
    if (tables.vocab_size, tables.dim) != (sharing.vocab_size, sharing.dim):
        raise ConfigError(
            f"the model's token tables are ({tables.vocab_size}, {tables.dim}) but the sharing object is "
            f"({sharing.vocab_size}, {sharing.dim}); build the sharing object for the model's vocabulary and width"
        )
    opts, conventions = dict(options), ["sharing object built by embtie's model building (adopt)"]
    scale, scale_holders = model_embed_scale(tables.family, tables.embeddings, tables.in_paths)
    if scale != sharing.embed_scale:
        raise ConfigError(
            f"the model scales its embeddings by {scale:g} but the sharing object by {sharing.embed_scale:g}; set "
            f"sharing.options.embed_scale={describe_scale(scale, tables.dim)!r}"
        )
    logits_bias, bias_to_copy = _take_logits_bias(model, tables, copy_weights, opts, conventions)
    if bias_to_copy is not None and sharing.bias is None:
        raise ConfigError("the model has a nonzero logits bias; give the sharing object one: sharing.options.bias=true")
    _take_over(model, sharing, tables, _Taken(dict(options), conventions, scale_holders, logits_bias, bias_to_copy),
               copy_weights=copy_weights, logits_with_labels=logits_with_labels)  # fmt: skip
    return model


@dataclass(frozen=True)
class _Taken:
    """What ``apply``/``adopt`` took from the model before installing the sharing object."""

    options: dict[str, Any]
    conventions: list[str]
    scale_holders: list[tuple[nn.Module, str]]
    logits_bias: torch.Tensor | None
    bias_to_copy: torch.Tensor | None


def _take_over(
    model: nn.Module,
    sharing: SharingStrategy,
    tables: _Tables,
    taken: _Taken,
    *,
    copy_weights: bool,
    logits_with_labels: bool | str,
) -> None:
    """Copy the model's tables into ``sharing`` (``copy_weights``), install it, patch the class, record it."""
    conventions = taken.conventions
    if copy_weights:
        conventions.extend(_copy_weights(sharing, tables.embedding, tables.output, taken.bias_to_copy))
        for other in tables.embeddings[1:]:
            if not torch.equal(other.weight, tables.embedding.weight):
                conventions.append("an input embedding table that differed from the main one was replaced by E")
    _install(model, sharing, tables, taken.scale_holders, taken.logits_bias)
    base = type(model)
    model.__class__ = make_patched_class(base)
    model.config.embtie = {
        "format": RECORD_FORMAT,
        "strategy": sharing.name,
        "options": taken.options,
        "logits_with_labels": logits_with_labels,
        "base_class": base.__name__,
        "model_type": tables.family.model_type,
        "vocab_size": tables.vocab_size,
        "dim": tables.dim,
        "input_paths": [p for _, _, p in tables.in_paths],
        "output_paths": [p for _, _, p in tables.out_paths],
        "conventions": conventions,
    }


def _check_applicable(model: nn.Module, strategy: str, options: dict[str, Any]) -> None:
    """ConfigError unless ``strategy`` can take over the tables of the unpatched ``model``."""
    if is_patched(model):
        raise ConfigError(
            f"this model already uses embtie strategy {model.config.embtie['strategy']!r}; apply a strategy to an "
            "unpatched model (e.g. a fresh from_pretrained)"
        )
    if not catalogue.get(strategy).flat_table:
        raise ConfigError(
            f"strategy {strategy!r} has no single (V, d) embedding table, which embtie.hf needs to take over a "
            "model's embedding; use it with embtie's own models (embtie train), or pick another strategy"
        )
    if options.get("factor_rank") is not None:
        raise ConfigError(
            "factor_rank is not supported by embtie.hf (a pretrained (V, d) matrix has no A·B factors to copy); "
            "use it with embtie's own models (embtie train)"
        )


@dataclass(frozen=True)
class _Tables:
    """The token tables of a transformers model and every attribute that holds them."""

    family: Family
    embedding: nn.Module
    """the model's input embedding (``get_input_embeddings()``)."""
    output: nn.Module
    """its output layer (``get_output_embeddings()``)."""
    embeddings: list[nn.Module]
    """every module that looks up token vectors, ``embedding`` first."""
    in_paths: list[tuple[nn.Module, str, str]]
    out_paths: list[tuple[nn.Module, str, str]]
    vocab_size: int
    dim: int

    @classmethod
    def of(cls, model: nn.Module) -> _Tables:
        fam = family_of(model)
        embedding = model.get_input_embeddings()
        output = model.get_output_embeddings()
        vocab_size, dim = embedding.weight.shape
        if tuple(output.weight.shape) != (vocab_size, dim):
            raise ConfigError(
                f"input embedding {tuple(embedding.weight.shape)} and output layer {tuple(output.weight.shape)} "
                "differ in shape; embtie.hf needs one vocabulary for both"
            )
        embeddings = input_modules(model, fam)
        in_paths = [p for m in embeddings for p in attribute_paths(model, m)]
        return cls(fam, embedding, output, embeddings, in_paths, attribute_paths(model, output), vocab_size, dim)


def _take_embed_scale(tables: _Tables, opts: dict[str, Any], conventions: list[str]) -> list[tuple[nn.Module, str]]:
    """Move the model's embedding scale into ``opts["embed_scale"]`` (unless given); returns the modules
    that apply it outside the embedding (set to 1 by ``_install``)."""
    scale, holders = model_embed_scale(tables.family, tables.embeddings, tables.in_paths)
    if scale != 1.0:
        where = ", ".join(f"{p}.embed_scale" for _, p in holders) or "inside the embedding module"
        if "embed_scale" in opts:
            conventions.append(f"the model's embedding scale {scale:g} ({where}) replaced by option embed_scale")
        else:
            opts["embed_scale"] = describe_scale(scale, tables.dim)
            conventions.append(
                f"embedding scale {scale:g} ({where}) moved into the sharing object as embed_scale="
                f"{opts['embed_scale']!r}"
            )
    return holders


def _take_logits_bias(
    model: nn.Module, tables: _Tables, copy_weights: bool, opts: dict[str, Any], conventions: list[str]
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """(the model's logits bias buffer, the same when it is nonzero, else None); both None when its family
    has none. A nonzero one to be copied turns the sharing object's ``bias`` option on unless given."""
    name = tables.family.logits_bias
    if name is None:
        return None, None
    logits_bias = getattr(model, name)
    # a model on the meta device (embtie plan) has no values: its bias reads as zero, as a fresh model's is
    if logits_bias.is_meta or not bool(logits_bias.detach().ne(0).any()):
        return logits_bias, None
    if copy_weights:
        if "bias" not in opts:
            opts["bias"] = True
        if opts["bias"]:
            conventions.append(f"nonzero {name} copied into the sharing object's bias")
        else:
            conventions.append(f"nonzero {name} dropped (option bias=False)")
    return logits_bias, logits_bias


def _take_softcap(model: nn.Module, fam: Family, opts: dict[str, Any], conventions: list[str]) -> None:
    """Move the final-logit soft cap the model applies after its output layer (Gemma 2/3's
    ``final_logit_softcapping``) into ``opts["softcap"]`` (unless given), so that the loss computed from h by
    the sharing object is capped as the model's logits are; ``_install`` then sets the model's own to None."""
    if fam.softcap is None:
        return
    cap = getattr(model.config.get_text_config(), fam.softcap)
    if cap is None:
        return
    if "softcap" in opts:
        conventions.append(f"the model's final-logit softcap {cap:g} (config.{fam.softcap}) replaced by option softcap")
        return
    opts["softcap"] = float(cap)
    conventions.append(f"final-logit softcap {cap:g} (config.{fam.softcap}) moved into the sharing object as softcap")


def _output_rescale_note(model: nn.Module, fam: Family) -> list[str]:
    """A line when the model multiplies its final hidden states by d_model^-0.5 before the output layer
    (T5's ``scale_decoder_outputs``): that stays in the body, so the sharing object's h is taken after it."""
    if fam.output_rescale is None or not getattr(model.config, fam.output_rescale):
        return []
    return [
        f"the model multiplies its final hidden states by d_model^-0.5 before the output layer "
        f"(config.{fam.output_rescale}=True); kept in the body: the sharing object gets the rescaled h"
    ]


def _build_sharing(strategy: str, tables: _Tables, opts: dict[str, Any], *, training: bool) -> SharingStrategy:
    """The sharing object, on the device and in the dtype of the model's embedding."""
    try:
        json.dumps(opts)
    except TypeError as e:
        raise ConfigError(f"strategy options must be plain numbers, strings or booleans: {e}") from None
    sharing = catalogue.build(strategy, vocab_size=tables.vocab_size, dim=tables.dim, **opts)
    weight = tables.embedding.weight
    sharing.to(device=weight.device, dtype=weight.dtype)
    sharing.train(training)
    return sharing


def _install(
    model: nn.Module,
    sharing: SharingStrategy,
    tables: _Tables,
    scale_holders: list[tuple[nn.Module, str]],
    logits_bias: torch.Tensor | None,
) -> None:
    """Put ``sharing`` in every place of the model's tables; its own scale and bias neutralised."""
    emb_module, head_module = EmbtieEmbedding(sharing, model), EmbtieHead(sharing, model)
    for parent, attr, _ in tables.in_paths:
        setattr(parent, attr, emb_module)
    for parent, attr, _ in tables.out_paths:
        setattr(parent, attr, head_module)
    for holder, _ in scale_holders:
        holder.embed_scale = 1.0
    if tables.family.softcap is not None:  # the sharing object caps the logits now (and its loss with them)
        setattr(model.config.get_text_config(), tables.family.softcap, None)
    if logits_bias is not None:
        assert tables.family.logits_bias is not None
        # (1, 1) zeros broadcast against both the (B, T, V) logits and the head's empty capture output.
        model.register_buffer(tables.family.logits_bias, logits_bias.new_zeros(1, 1))
    for sub in iter_pretrained_submodels(model):
        sub._tied_weights_keys = None
        sub.all_tied_weights_keys = {}
    model.add_module("embtie_sharing", sharing)


def _copy_weights(
    sharing: SharingStrategy, embedding: nn.Module, output: nn.Module, logits_bias: torch.Tensor | None
) -> list[str]:
    notes = ["input embedding copied into the sharing object's E (weight)"]
    out_weight = sharing.separate_output_weight()
    separate_output = output.weight is not embedding.weight
    with torch.no_grad():
        sharing.weight.copy_(embedding.weight)
        if out_weight is not None:
            out_weight.copy_(output.weight)
            notes.append("output layer copied into the sharing object's O (out_weight)")
        elif separate_output and not torch.equal(output.weight, embedding.weight):
            notes.append(f"the model's separate output matrix is not used by strategy {sharing.name!r}")
        if logits_bias is not None and sharing.bias is not None:
            sharing.bias.copy_(logits_bias.reshape(-1))
        zero = sharing.weight.eq(0).all(dim=1)
        if bool(zero.any()) and (sharing.head().row_scale is not None or sharing.head().norm_power is not None):
            # A zero row (transformers zeroes the padding_idx row) has no direction: a strategy that scales
            # rows by their norm would divide by ~0 and send huge gradients to it. Give it the strategy's init.
            fresh = sharing.init_(torch.empty_like(sharing.weight[zero]))
            sharing.weight[zero] = fresh
            rows = zero.nonzero().flatten().tolist()
            notes.append(f"zero rows {rows[:8]} of E (padding) re-initialised: {sharing.name} divides by row norms")
    return notes
