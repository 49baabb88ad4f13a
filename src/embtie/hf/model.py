"""The class a patched model gets: its transformers class with embtie's forward(labels=...), resizing,
tying and saving on top.

``apply()`` sets ``model.__class__`` to ``make_patched_class(type(model))``, a subclass of
``(EmbtieModelMixin, <original class>)`` that keeps the original's name and module (so transformers'
name-based logic, e.g. the Trainer's causal-LM label shifting and ``config.architectures``, sees the
model it knows) and whose ``forward`` has the original signature (the Trainer inspects it).
"""

from __future__ import annotations

import functools
import inspect
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from embtie.errors import ConfigError
from embtie.hf import saved_config, step_hook
from embtie.hf.families import FAMILIES
from embtie.hf.modules import EmbtieEmbedding, EmbtieHead
from embtie.hf.peft_compat import active_sharing
from embtie.hf.resize import resized_sharing
from embtie.sharing.base import SharingStrategy

IGNORE_INDEX = -100


class EmbtieModelMixin:
    """Methods shared by every patched model. The sharing object is ``self.embtie_sharing``; the model's
    input embedding(s) are EmbtieEmbedding and its output layer an EmbtieHead, all serving that object."""

    # transformers ties nothing on a patched model: the sharing object *is* the tying.
    _tied_weights_keys = None
    # forward(labels=...) honours num_items_in_batch (gradient accumulation), like transformers' own losses.
    accepts_loss_kwargs = True
    _embtie_base: type
    training: bool  # nn.Module's, through the transformers class the mixin joins

    def tie_weights(self, *args: Any, **kwargs: Any) -> None:
        """No-op: input and output share one object, so there is nothing to re-tie (after loading or resizing)."""
        return None

    # ------------------------------------------------------------------ saving
    def save_pretrained(self, save_directory: str | os.PathLike, *args: Any, push_to_hub: bool = False, **kwargs: Any):
        """transformers' ``save_pretrained``, then config.json guarded (``embtie.hf.saved_config``): plain
        ``from_pretrained`` refuses the folder in one line naming ``embtie.hf.load`` instead of returning the
        stock model with a random embedding. ``push_to_hub=True`` uploads through ``push_to_hub``, which saves
        (guarded) into a temporary folder first."""
        hub = {k: kwargs.pop(k) for k in ("repo_id", "commit_message", "create_pr", "private") if k in kwargs}
        result = super().save_pretrained(save_directory, *args, **kwargs)
        if kwargs.get("is_main_process", True) and (Path(save_directory) / saved_config.CONFIG).is_file():
            saved_config.guard(save_directory, self.config.embtie["strategy"])
        if push_to_hub:
            repo_id = hub.pop("repo_id", Path(save_directory).name)
            self.push_to_hub(repo_id, token=kwargs.get("token"), **hub)
        return result

    # ------------------------------------------------------------------ loss
    def _embtie_forward_with_labels(self, base_forward: Callable, labels: Tensor, kwargs: dict[str, Any]):
        sharing: SharingStrategy = active_sharing(self.embtie_sharing)
        if self.training and torch.is_grad_enabled():
            step_hook.check(sharing)  # a Trainer without EmbtieCallback would never untie tie-untie
        record = self.config.embtie
        fam = FAMILIES[record["model_type"]]
        return_dict = kwargs.pop("return_dict", None)
        if return_dict is None:
            return_dict = getattr(self.config, "return_dict", True)  # foreign: a transformers config
        num_items = kwargs.pop("num_items_in_batch", None)
        shift_labels = kwargs.pop("shift_labels", None)
        if kwargs.get("use_cache") is None:
            kwargs["use_cache"] = False  # a training forward needs no key/value cache
        no_decoder_inputs = kwargs.get("decoder_input_ids") is None and kwargs.get("decoder_inputs_embeds") is None
        if fam.encoder_decoder and no_decoder_inputs:
            kwargs["decoder_input_ids"] = self.prepare_decoder_input_ids_from_labels(labels=labels)
        head: EmbtieHead = self.get_output_embeddings()
        with head.capture() as captured:
            out = base_forward(self, return_dict=True, **kwargs)
        if len(captured) != 1:
            raise RuntimeError(f"the output layer was called {len(captured)} times in one forward pass")
        h = captured[0]  # (B, T, d): the final hidden states the logits are taken from
        if shift_labels is not None:
            targets = shift_labels
        elif fam.encoder_decoder:
            targets = labels
        else:  # causal LM: position t predicts token t+1; the last position predicts nothing
            targets = F.pad(labels[..., 1:], (0, 1), value=IGNORE_INDEX)
        targets = targets.to(h.device)
        reg = sharing.regularization()
        if num_items is None:
            loss = sharing.loss(h, targets, ignore_index=IGNORE_INDEX)
        else:
            # sum over this micro-batch / tokens over the accumulated batch (transformers' convention),
            # and the regulariser in the same share, so it adds up to once per optimizer step.
            kept = targets.ne(IGNORE_INDEX).sum()
            share = kept / torch.as_tensor(num_items, device=h.device)
            loss = sharing.loss(h, _stand_in_if_empty(targets, kept), ignore_index=IGNORE_INDEX) * share
            reg = reg * share
        loss = loss + reg
        logits = sharing.logits(h) if wants_logits(record.get("logits_with_labels", False), self.training) else None
        fields = {k: v for k, v in out.items() if k not in ("loss", "logits")}
        result = type(out)(loss=loss, logits=logits, **fields)
        return result if return_dict else result.to_tuple()

    # ------------------------------------------------------------------ resizing
    def resize_token_embeddings(
        self, new_num_tokens: int | None = None, pad_to_multiple_of: int | None = None, mean_resizing: bool = True
    ) -> EmbtieEmbedding:
        """Grow or shrink the sharing object (E, any untied O, bias, fixed targets) to ``new_num_tokens``.

        Existing rows are kept bit-exactly; see ``embtie.hf.resize``. Returns the input embedding module.
        """
        old: SharingStrategy = self.embtie_sharing
        embedding = self.get_input_embeddings()
        if new_num_tokens is None and pad_to_multiple_of is None:
            return embedding
        size = old.vocab_size if new_num_tokens is None else int(new_num_tokens)
        if pad_to_multiple_of is not None:
            size = -(-size // pad_to_multiple_of) * pad_to_multiple_of
        if size != old.vocab_size:
            new = resized_sharing(old, size, self.config.embtie["options"], mean_resizing=mean_resizing)
            self.embtie_sharing = new
            for module in self.modules():
                if isinstance(module, EmbtieEmbedding | EmbtieHead):
                    module.bind(new)
        text_config = self.config.get_text_config()
        text_config.vocab_size = size
        if hasattr(self.config, "decoder_vocab_size"):  # foreign: Marian's config keeps the target vocabulary apart
            self.config.decoder_vocab_size = size
        self.vocab_size = size
        self.config.embtie["vocab_size"] = size
        return embedding


def _stand_in_if_empty(targets: Tensor, kept: Tensor) -> Tensor:
    """``targets``, or, when no token is labelled (a micro-batch that is all prompt or padding), the same with
    one stand-in target, so that the mean over kept tokens stays finite; its share (0) then makes the
    micro-batch add nothing, as in transformers' summed loss. No host sync."""
    if targets.numel() == 0:
        return targets  # no tokens at all: sharing.loss says so
    first = torch.zeros_like(targets, dtype=torch.bool).view(-1)
    first[0] = True
    return torch.where((kept == 0) & first.view_as(targets), torch.zeros_like(targets), targets)


def check_logits_with_labels(setting: Any) -> bool | str:
    """``setting`` when it is one of "eval", True, False; else a ConfigError saying what each means."""
    if isinstance(setting, bool) or setting == "eval":
        return setting
    raise ConfigError(
        f"logits_with_labels={setting!r} must be 'eval' (logits with the loss in eval mode, for the Trainer's "
        "compute_metrics; the default), True (also while training) or False (never)"
    )


def wants_logits(setting: bool | str, training: bool) -> bool:
    """Whether forward(labels=...) returns the (..., V) logits beside the loss. "eval": only in eval mode,
    where transformers' Trainer hands them to ``compute_metrics`` (a training step keeps the memory-lean
    loss that never holds them); True: always; False: never."""
    return setting is True or (setting == "eval" and not training)


_PATCHED: dict[type, type] = {}


def _positional_to_keywords(signature: inspect.Signature, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    bound = signature.bind_partial(None, *args, **kwargs)  # None stands for self
    out: dict[str, Any] = {}
    for i, (name, value) in enumerate(bound.arguments.items()):
        if i == 0:
            continue
        if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif signature.parameters[name].kind is inspect.Parameter.VAR_POSITIONAL:
            raise TypeError("positional *args cannot be forwarded by a patched model")
        else:
            out[name] = value
    return out


def _make_forward(base_forward: Callable) -> Callable:
    signature = inspect.signature(base_forward)

    @functools.wraps(base_forward)
    def forward(self, *args: Any, **kwargs: Any):
        if args:
            kwargs = _positional_to_keywords(signature, args, kwargs)
        labels = kwargs.pop("labels", None)
        if labels is None:
            return base_forward(self, **kwargs)
        return self._embtie_forward_with_labels(base_forward, labels, kwargs)

    return forward


def make_patched_class(base: type) -> type:
    """The patched subclass of a transformers model class (made once per class)."""
    if issubclass(base, EmbtieModelMixin):
        return base
    cls = _PATCHED.get(base)
    if cls is None:
        namespace = {
            "forward": _make_forward(base.forward),
            "_embtie_base": base,
            "__module__": base.__module__,
            "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} whose token embedding and output layer are one embtie sharing object.",
        }
        cls = type(base.__name__, (EmbtieModelMixin, base), namespace)
        _PATCHED[base] = cls
    return cls
