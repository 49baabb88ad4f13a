"""audit(): the tie state of any local transformers checkpoint, embtie's or not, and what is wrong with it.

What it reads: config.json (the tie flag as transformers reads it, the family's embedding scale, final-logit
soft cap and output rescale), the safetensors headers (which keys the files hold), and at most the two
tensors of the input embedding and the output layer (to compare them). No model is loaded: the key names
come from the model class built on the meta device.

Whether the two share storage once loaded follows transformers 5's ``tie_weights`` during
``from_pretrained``: with ``tie_word_embeddings=True`` they are tied to whichever key the file holds, unless
it holds both with different values, which are then left untied (with a warning). The verdicts, problems
first (see ``VERDICTS``): an embtie save; flag-tied with diverged tensors (transformers #45127); tied with a
missing key; tied on disk but untied in the config; no embedding at all; an embtie export; an untied head
that started as a copy of the input table (what peft's modules_to_save leaves after merge_and_unload,
peft #2777); untied equal copies; consistent tied; consistent untied.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from embtie.hf.checkpoint_files import CheckpointFolder, embedding_keys, meta_model, read_folder
from embtie.hf.families import FAMILIES, Family, attribute_paths, model_embed_scale
from embtie.hf.stock_weights import EXPORT_MARKER

COPY_COSINE = 0.5
"""Median cosine between the rows of an untied head and the input table above which the head started as a
copy of the table (independently initialised or trained matrices of width >= 32 have a median near 0)."""
ROWS_PER_CHUNK = 8192
SHARING_WEIGHT, SHARING_OUT = "embtie_sharing.weight", "embtie_sharing.out_weight"
"""The keys of an embtie save's matrix E and, for untied strategies, its output matrix O."""


@dataclass(frozen=True)
class Verdict:
    """One class of checkpoint: what it is, whether it is a problem, and its repair."""

    key: str
    problem: bool
    says: str
    """what the checkpoint is and what transformers does with it."""
    repair: str
    """what ``embtie hf-audit PATH --fix OUT`` writes (or why nothing)."""


VERDICTS: dict[str, Verdict] = {
    v.key: v
    for v in (
        Verdict(
            "embtie-save",
            False,
            "a model patched by embtie.hf.apply, saved with save_pretrained: load it with embtie.hf.load "
            "(from_pretrained refuses it); input and output are one sharing object",
            "--fix OUT writes stock transformers weights (embtie export)",
        ),
        Verdict(
            "flag-tied-diverged",
            True,
            "config says tie_word_embeddings=True but the file holds input and output matrices that differ "
            "(transformers #45127): transformers 5 loads them untied with a warning, other loaders tie them "
            "and silently drop one",
            "--fix OUT writes tie_word_embeddings=False, keeping both matrices (or --tie-from input|output "
            "keeps one, tied)",
        ),
        Verdict(
            "tied-missing-key",
            True,
            "config says tied but the file holds only the output layer's key, not the input embedding's: "
            "transformers 5 ties to the key that is there; loaders that read the embedding key fail or "
            "start from random",
            "--fix OUT stores the matrix under the input embedding's key, as save_pretrained does",
        ),
        Verdict(
            "tied-on-disk-untied-in-config",
            True,
            "the file holds one matrix for input and output but config says tie_word_embeddings=False: "
            "from_pretrained leaves the missing one at a random init",
            "--fix OUT writes tie_word_embeddings=True (the stored matrix serves both)",
        ),
        Verdict(
            "no-embedding",
            True,
            "the file holds neither the input embedding nor the output layer",
            "none: the matrix is not in the checkpoint; save the model again",
        ),
        Verdict(
            "embtie-export",
            False,
            "stock weights written by embtie export; the config's tie flag matches the file",
            "none needed",
        ),
        Verdict(
            "peft-merged",
            False,
            "untied, but the head started as a copy of the input table and was trained apart: what peft's "
            "modules_to_save on a tied model leaves after merge_and_unload (peft #2777: it sets "
            "tie_word_embeddings=False), or any untie by copying",
            "none if the untie was meant; to tie again, --fix OUT --tie-from output (the trained head) or "
            "--tie-from input",
        ),
        Verdict(
            "untied-equal-copies",
            False,
            "untied in config and on disk, but the two matrices are equal: they will drift apart when trained",
            "--fix OUT ties them (lossless: tie_word_embeddings=True, one matrix stored)",
        ),
        Verdict("consistent-tied", False, "tied in config and on disk: one matrix serves both", "none needed"),
        Verdict("consistent-untied", False, "untied in config and on disk: two independent matrices", "none needed"),
    )
}


@dataclass
class Comparison:
    """The input embedding matrix against the output layer's, both read from the file."""

    equal: bool
    max_abs_diff: float
    median_row_cosine: float


@dataclass
class Audit:
    """Everything ``embtie hf-audit`` reports about one checkpoint folder."""

    path: Path
    model_type: str
    architecture: str
    tie_flag: bool
    """tie_word_embeddings as transformers reads the config (T5 in transformers 5: always True)."""
    input_keys: list[str]
    """the state-dict names of the input embedding (one matrix; several keys for encoder-decoders)."""
    output_keys: list[str]
    held_input: str | None
    """the input key the file holds (the first of input_keys found), or None."""
    held_output: str | None
    shapes: dict[str, list[int]]
    """shape of each embedding / output key the file holds."""
    files: dict[str, str]
    """the weight file that holds each of these keys."""
    n_keys: int
    """how many tensors the file(s) hold in all."""
    weight_files: list[str]
    shares_storage: bool
    """input and output are one tensor once ``from_pretrained`` has loaded the folder."""
    comparison: Comparison | None
    """None unless the file holds both matrices."""
    embed_scale: str
    softcap: float | None
    output_rescale: str | None
    verdict: str
    embtie: dict | None = None
    """the embtie record: the patched model's (embtie save) or export's (embtie export), else None."""
    notes: list[str] = field(default_factory=list)

    @property
    def described(self) -> Verdict:
        return VERDICTS[self.verdict]


def compare_matrices(a: Tensor, b: Tensor) -> Comparison:
    """Equality, max |a - b| and the median cosine between matching rows of two (V, d) matrices, in float32
    chunks of rows (no float64 copy of a large vocabulary)."""
    if a.shape != b.shape:
        return Comparison(False, math.inf, 0.0)
    diffs, cosines = [], []
    for start in range(0, a.shape[0], ROWS_PER_CHUNK):
        x, y = a[start : start + ROWS_PER_CHUNK].float(), b[start : start + ROWS_PER_CHUNK].float()
        diffs.append((x - y).abs().amax() if x.numel() else torch.zeros(()))
        cosines.append(torch.nn.functional.cosine_similarity(x, y, dim=1, eps=1e-12))
    return Comparison(bool(torch.equal(a, b)), float(torch.stack(diffs).max()), float(torch.cat(cosines).median()))


def nonfinite_notes(matrices: dict[str, Tensor]) -> list[str]:
    """One line per matrix holding NaN or inf values (the count): such a checkpoint is broken whatever its tie."""
    notes = []
    for key, m in matrices.items():
        bad = int((~torch.isfinite(m)).sum())
        if bad:
            notes.append(f"{key} holds {bad} non-finite values (NaN or inf): the weights are broken, not only the tie")
    return notes


def _family_conventions(folder: CheckpointFolder, model: Any) -> tuple[str, float | None, str | None]:
    """(embedding scale, final-logit soft cap, output rescale) of the folder's family as its config sets them."""
    fam: Family | None = FAMILIES.get(folder.config.model_type)
    if fam is None:
        return f"unknown (model type {folder.config.model_type!r} is not one embtie.hf knows)", None, None
    text = folder.config.get_text_config()
    embedding = model.get_input_embeddings()
    paths = attribute_paths(model, embedding)
    scale, _ = model_embed_scale(fam, [embedding], paths)
    dim = int(embedding.weight.shape[1])
    shown = "1 (none)" if scale == 1.0 else f"{scale:g}" + (" = sqrt(d)" if math.isclose(scale, math.sqrt(dim)) else "")
    softcap = getattr(text, fam.softcap) if fam.softcap is not None else None
    rescale = None
    if fam.output_rescale is not None and getattr(folder.config, fam.output_rescale):
        rescale = f"final hidden states x d_model^-0.5 before the output layer ({fam.output_rescale}=True)"
    return shown, softcap, rescale


def _classify(tie: bool, held_in: str | None, held_out: str | None, cmp: Comparison | None, export: bool) -> str:
    if held_in is None and held_out is None:
        return "no-embedding"
    if cmp is not None:  # the file holds both
        if tie:
            return "consistent-tied" if cmp.equal else "flag-tied-diverged"
        if cmp.equal:
            verdict = "untied-equal-copies"
        else:
            verdict = "peft-merged" if cmp.median_row_cosine >= COPY_COSINE else "consistent-untied"
    elif not tie:
        return "tied-on-disk-untied-in-config"
    elif held_in is None:
        return "tied-missing-key"
    else:
        verdict = "consistent-tied"
    return "embtie-export" if export else verdict  # a consistent export (a cosine head is a scaled copy of E)


def _audit_embtie_save(folder: CheckpointFolder) -> Audit:
    record = folder.raw_config["embtie"]
    held = [k for k in folder.tensors if k.startswith("embtie_sharing.")]
    out = SHARING_OUT if SHARING_OUT in held else SHARING_WEIGHT
    shapes = {k: list(folder.tensors[k].shape) for k in held}
    return Audit(
        folder.path,
        str(folder.config.model_type),
        str(record.get("base_class", "")),
        tie_flag=bool(folder.raw_config.get("tie_word_embeddings", False)),
        input_keys=[SHARING_WEIGHT],
        output_keys=[out],
        held_input=SHARING_WEIGHT if SHARING_WEIGHT in held else None,
        held_output=out if out in held else None,
        shapes=shapes,
        files={k: folder.tensors[k].file for k in held},
        n_keys=len(folder.tensors),
        weight_files=folder.weight_files,
        shares_storage=True,
        comparison=None,
        embed_scale=str(record.get("options", {}).get("embed_scale", "1 (none)")),
        softcap=record.get("options", {}).get("softcap"),
        output_rescale=None,
        verdict="embtie-save",
        embtie=record,
        notes=[f"strategy {record.get('strategy')!r}; conventions: {'; '.join(record.get('conventions', []))}"],
    )


def audit(path: str | Path) -> Audit:
    """The tie state of the checkpoint folder ``path`` (see the module docstring); DataError (one line) when
    it is not a readable save_pretrained folder with safetensors weights."""
    folder = read_folder(path)
    if isinstance(folder.raw_config.get("embtie"), dict):
        return _audit_embtie_save(folder)
    model = meta_model(folder)
    inputs, outputs = embedding_keys(model)
    held_in = next((k for k in inputs if k in folder.tensors), None)
    held_out = next((k for k in outputs if k in folder.tensors), None)
    held = [k for k in dict.fromkeys([*inputs, *outputs]) if k in folder.tensors]
    text = folder.config.get_text_config()
    tie = bool(getattr(text, "tie_word_embeddings", False))  # foreign: a transformers config
    matrices = {k: folder.tensor(k) for k in (held_in, held_out) if k is not None}
    cmp = compare_matrices(matrices[held_in], matrices[held_out]) if held_in and held_out else None
    export = folder.raw_config.get(EXPORT_MARKER)
    scale, softcap, rescale = _family_conventions(folder, model)
    return Audit(
        folder.path,
        str(folder.config.model_type),
        type(model).__name__,
        tie_flag=tie,
        input_keys=inputs,
        output_keys=outputs,
        held_input=held_in,
        held_output=held_out,
        shapes={k: list(folder.tensors[k].shape) for k in held},
        files={k: folder.tensors[k].file for k in held},
        n_keys=len(folder.tensors),
        weight_files=folder.weight_files,
        shares_storage=tie and (held_in or held_out) is not None and (cmp is None or cmp.equal),
        comparison=cmp,
        embed_scale=scale,
        softcap=softcap,
        output_rescale=rescale,
        verdict=_classify(tie, held_in, held_out, cmp, isinstance(export, dict)),
        embtie=export if isinstance(export, dict) else None,
        notes=nonfinite_notes(matrices),
    )
