"""export(): write a patched model as plain transformers weights that ``from_pretrained`` loads without embtie.

The strategy is folded (``embtie.hf.fold``) into the input table and a linear output layer; these go into
a stock model of the original class (built on the meta device, so no memory or time is spent on an init
that is overwritten), together with every other tensor of the patched model, and that model is saved with
``save_pretrained``. Family conventions are honoured: where the stock model multiplies looked-up vectors
by its own factor (Marian/BART ``scale_embedding``) the table is divided by it; an output bias goes into
the family's logits-bias buffer (``final_logits_bias``) and is refused where the family has none; the
head is tied to the table (``tie_word_embeddings=True``) exactly when they are the same matrix.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path

import torch
from torch import Tensor, nn

from embtie.errors import ConfigError
from embtie.hf.families import FAMILIES, Family, attribute_paths, model_embed_scale
from embtie.hf.fold import Folded, NotFoldableError, fold
from embtie.hf.patch import sharing_of

SHARING_PREFIX = "embtie_sharing."
EXPORT_MARKER = "embtie_export"
"""The config.json entry export writes ({"strategy", "options", "tied"}): where the weights came from, for
``embtie hf-audit``; stock transformers keeps it as an inert config attribute."""
TIE_TOL = 1e-9
"""Relative float64 difference under which the input table and the output layer are one matrix (tied)."""


@dataclass
class ExportResult:
    """What export() wrote."""

    path: Path
    tied: bool
    """True: the saved model has tie_word_embeddings=True (one matrix for input and output)."""
    notes: list[str] = field(default_factory=list)


def _stock_model(model: nn.Module, tied: bool, softcap: float | None = None) -> nn.Module:
    """An unpatched model of the original class and configuration (embtie record removed), on meta; in a
    family whose model soft-caps its logits (Gemma 2/3) its config's cap is ``softcap``."""
    config = copy.deepcopy(model.config)
    if hasattr(config, "embtie"):  # foreign: a transformers config
        delattr(config, "embtie")
    config.tie_word_embeddings = tied
    text = config.get_text_config()
    if text is not config:
        text.tie_word_embeddings = tied
    cap_attr = FAMILIES[model.config.embtie["model_type"]].softcap
    if cap_attr is not None:
        setattr(text, cap_attr, softcap)
    with torch.device("meta"):
        return model._embtie_base(config).eval()


def _check_family_can_hold(fam: Family, folded: Folded, model: nn.Module, name: str, tied: bool) -> None:
    """NotFoldableError (one line) when the stock model of ``fam`` cannot compute what ``folded`` says: a soft
    cap where the model applies none after its lm_head, or an untied head where transformers always ties."""
    cls = type(model).__name__
    if folded.softcap is not None and fam.softcap is None:
        raise NotFoldableError(
            f"strategy {name!r} soft-caps its logits (softcap={folded.softcap:g}), but {cls}'s stock lm_head is "
            "linear and nothing caps after it, so this cannot be exported; train without the softcap option to "
            "export (gemma2 and gemma3_text export with it: their stock model caps by final_logit_softcapping)"
        )
    if fam.head_always_tied and not tied:
        raise NotFoldableError(
            f"strategy {name!r} gives an output matrix that differs from the input table, but transformers always "
            f"ties {cls}'s lm_head to its input table (its config forces tie_word_embeddings=True), so this cannot "
            "be exported; export a strategy whose input and output are one matrix (tied, tied-loginit, l2norm)"
        )


def _same_matrix(a: Tensor, b: Tensor) -> bool:
    return bool((a - b).abs().max() <= TIE_TOL * (1.0 + a.abs().max()))


def _bias_state(fam: Family, folded: Folded, model: nn.Module, name: str) -> dict[str, Tensor]:
    """{buffer key: (1, V) bias} for the family's logits-bias buffer; refuses a bias the family cannot hold."""
    if fam.logits_bias is None:
        if folded.bias is not None:
            raise NotFoldableError(
                f"strategy {name!r} has a nonzero output bias, but {type(model).__name__}'s lm_head has no bias, "
                "so it cannot be exported; train with bias=False (and a strategy without a per-token bias term, "
                "e.g. not 'distance') to export"
            )
        return {}
    vocab = folded.weight.shape[0]
    bias = folded.bias if folded.bias is not None else folded.weight.new_zeros(vocab)
    return {fam.logits_bias: bias.reshape(1, vocab)}


def _input_paths(model: nn.Module, stock: nn.Module, fam: Family) -> tuple[list[str], float]:
    """The dotted paths of the input embedding modules (those the patched model serves from its sharing
    object), and the factor the stock model multiplies looked-up vectors by (1, or Marian/BART's
    sqrt(d_model) with scale_embedding)."""
    paths = list(model.config.embtie["input_paths"])
    embeddings = [stock.get_submodule(p) for p in paths]
    parents = [(stock.get_submodule(p.rpartition(".")[0]), p.rpartition(".")[2], p) for p in paths]
    scale, _ = model_embed_scale(fam, embeddings, parents)
    return paths, scale


def _stock_state(
    model: nn.Module, stock: nn.Module, fam: Family, folded: Folded, table: Tensor, tied: bool
) -> dict[str, Tensor]:
    """The full state dict of ``stock``: the patched model's own tensors plus the folded table and head.
    Untied, each input embedding key gets its own copy of the table: transformers ties an encoder-decoder's
    token tables only together with the head, so shared storage would be dropped on save and not re-tied."""
    dtype = table.dtype
    state = {k: v for k, v in model.state_dict().items() if not k.startswith(SHARING_PREFIX)}
    for i, path in enumerate(_input_paths(model, stock, fam)[0]):
        state[f"{path}.weight"] = table if tied or i == 0 else table.clone()
    head = table if tied else folded.weight.to(dtype)
    for _, _, path in attribute_paths(stock, stock.get_output_embeddings()):
        state[f"{path}.weight"] = head
    name = sharing_of(model).name
    state.update({k: v.to(dtype) for k, v in _bias_state(fam, folded, model, name).items()})
    return state


def export(model: nn.Module, out_dir: str | Path) -> ExportResult:
    """Save ``model`` (patched by ``embtie.hf.apply``) to ``out_dir`` as stock transformers weights, so that
    ``AutoModelForCausalLM.from_pretrained(out_dir)`` (or the family's Seq2SeqLM) gives the same logits with
    embtie not installed.

    Folded: input-side normalization and embed_scale into the input table; row scales (cosine, sqnorm,
    l2norm), logit_scale (fixed or learned) and a linear transform of h (tied-proj, tied-shuffle, the
    projection of fixed/hadamard with target_dim) into the output matrix. Tied exactly when the input table
    and output matrix coincide (tied, l2norm). Refused with one line (NotFoldableError, a ConfigError):
    softcap (except in gemma2 / gemma3_text, whose stock model caps its logits by ``final_logit_softcapping``:
    the cap is written there), an untied head for T5 (transformers always ties it), a non-linear transform
    of h (nGPT's normalized h, tied-bert with an activation or norm), and a
    nonzero output bias (the bias option, distance's -||e_i||^2/2) for families whose lm_head has no bias.
    Memory: float64 copies of the sharing object's tensors are made while folding.
    """
    if isinstance(model, str | Path):
        raise ConfigError(
            f"export() takes the model, not a path ({str(model)!r}): load a saved model with "
            f"embtie.hf.load({str(model)!r}) first, then export(model, out_dir)"
        )
    sharing = sharing_of(model)
    fam = FAMILIES[model.config.embtie["model_type"]]
    folded = fold(sharing)
    stock = _stock_model(model, tied=False, softcap=folded.softcap)
    table = folded.input_vectors / _input_paths(model, stock, fam)[1]
    tied = _same_matrix(table, folded.weight) and folded.bias is None
    _check_family_can_hold(fam, folded, model, sharing.name, tied)
    if tied:
        stock = _stock_model(model, tied=True, softcap=folded.softcap)
    state = _stock_state(model, stock, fam, folded, table.to(sharing.weight.dtype), tied)
    expected = set(stock.state_dict())
    if set(state) != expected:
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        raise RuntimeError(f"export: state does not match the stock model: missing {missing[:5]}, extra {extra[:5]}")
    stock.load_state_dict(state, strict=True, assign=True)
    if tied:
        stock.tie_weights()
    stock.generation_config = copy.deepcopy(model.generation_config)
    record = model.config.embtie
    setattr(stock.config, EXPORT_MARKER, {"strategy": record["strategy"], "options": record["options"], "tied": tied})
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    stock.save_pretrained(out)
    notes = [*folded.notes, "tied: tie_word_embeddings=True" if tied else "untied lm_head (tie_word_embeddings=False)"]
    if folded.softcap is not None:
        notes.append(f"soft cap {folded.softcap:g} kept in the config: the stock model caps its logits itself")
    return ExportResult(out, tied, notes)
