"""The diagnostics of one trained run as typed records: what ``RUN_DIR/analysis/diagnostics.json`` holds
(``RunDiagnostics`` and the records nested in it) and the per-token and per-unit arrays of
``arrays.npz`` (``RunArrays``).

Field order is the key order of the files (see ``embtie.analysis.json_records``). Fields that the
analysis writes as null when they do not apply (``translation`` for a language model) are ``X | None``;
``optional()`` fields are keys that older files of the same version may lack.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from embtie.analysis.json_records import JSONValue, Record, optional
from embtie.errors import DataError


@dataclass(kw_only=True)
class Step0Loss(Record):
    """The loss at step 0: Su's prediction (simple and refined), ln V, and what training measured."""

    predicted: float
    predicted_refined: float
    ln_v: float
    measured: float | None


@dataclass(kw_only=True)
class ParameterCounts(Record):
    """Elements of learned parameters and of fixed weights, whole model and sharing strategy alone."""

    learned: int
    fixed: int
    sharing_learned: int
    sharing_fixed: int


@dataclass(kw_only=True)
class NormHistogram(Record):
    """A histogram of (V,) vector norms (``embtie.analysis.norms.norm_histogram``)."""

    edges: list[float]
    counts: list[int]
    mean: float
    std: float
    min: float
    max: float

    @property
    def constant(self) -> bool:
        """All norms equal up to float rounding (normalised or fixed rows)."""
        return self.max - self.min <= 1e-5 * max(abs(self.max), 1e-12)


@dataclass(kw_only=True)
class NormHistograms(Record):
    """Input- and output-vector norm histograms on one shared bin range."""

    input: NormHistogram
    output: NormHistogram


@dataclass(kw_only=True)
class RankCorrelation(Record):
    """Spearman's rho of vector norm against training count (NaN when the norms are constant)."""

    rho: float
    pvalue: float
    n: int


@dataclass(kw_only=True)
class NormFrequency(Record):
    input: RankCorrelation
    output: RankCorrelation


@dataclass(kw_only=True)
class WordSimCorrelation(Record):
    """Spearman's rho of cosine similarities against human scores over the pairs found in the vocabulary."""

    rho: float
    pvalue: float
    found: int
    total: int
    coverage: float


@dataclass(kw_only=True)
class WordSimilarity(Record):
    """One benchmark, scored on the input and on the output vectors."""

    input: WordSimCorrelation
    output: WordSimCorrelation


@dataclass(kw_only=True)
class VocabularyUsage(Record):
    """Diversity of generated text (``embtie.evaluation.vocab_usage.vocabulary_usage``)."""

    vu: int
    tokens: int
    types_rare: int
    rare_token_share: float
    type_token_ratio: float
    rare_max: int | None = optional()


@dataclass(kw_only=True)
class TranslationScores(Record):
    """Corpus scores of the decoded validation split, as the task's ``evaluate_translation`` reports them
    (its numbers and strings; keys it adds beyond these are kept in ``extra``)."""

    split: str | None = optional()
    beam: int | None = optional()
    lenpen: float | None = optional()
    bleu_text: str | None = optional()
    """the text BLEU was computed on: "detokenized" (subword vocabularies) or "tokenized" (word vocabularies)."""
    bleu: float
    chrf: float
    bleu_signature: str | None = optional()
    chrf_signature: str | None = optional()
    bleu_detail: str | None = optional()
    sentences: int | None = optional()
    bleu_tok: float | None = optional()
    """multi-bleu.perl-style BLEU on tokenized text."""
    bleu_tok_signature: str | None = optional()
    bleu_tok_detail: str | None = optional()
    loss: float | None = optional()
    ppl: float | None = optional()
    tokens: int | None = optional()
    extra: dict[str, JSONValue] = dataclasses.field(default_factory=dict)


@dataclass(kw_only=True)
class TranslationQuality(Record):
    """Translation diagnostics: scores, vocabulary usage of the hypotheses and of the references."""

    scores: TranslationScores
    vocab_usage: VocabularyUsage
    reference_vocab_usage: VocabularyUsage
    unk_share: float | None = optional()
    """share of the output words that are ``<unk>``."""


@dataclass(kw_only=True)
class CaptionScores(Record):
    """COCO scores x100 (METEOR only where Java was there)."""

    bleu1: float
    bleu2: float
    bleu3: float
    bleu4: float
    meteor: float | None = optional()
    rouge_l: float
    cider: float


@dataclass(kw_only=True)
class CaptionExamples(Record):
    """Every validation image's name and its caption."""

    names: list[str]
    hyps: list[str]


@dataclass(kw_only=True)
class CaptioningQuality(Record):
    """Captioning diagnostics of the validation images."""

    scores: CaptionScores
    beam: int
    images: int
    mean_length: float
    unk_share: float
    vocab_usage: VocabularyUsage
    reference_vocab_usage: VocabularyUsage
    examples: CaptionExamples


@dataclass(kw_only=True)
class RowUpdates(Record):
    """How often rows got an input- and an output-path gradient over the first training batches (the
    per-row counts are in ``RunArrays``)."""

    batches: int
    input_rows_per_batch: float
    output_rows_per_batch: float
    parameters: list[str]
    """names of the strategy's parameters with one row per token."""


@dataclass(kw_only=True)
class ValidationSummary(Record):
    """The validation loss recomputed unit by unit (the units are ``RunArrays.valid_units``)."""

    units: int
    tokens: int
    loss: float
    task_metrics: dict[str, float | int | str]
    """the task's own ``evaluate`` numbers and strings."""


@dataclass(kw_only=True)
class Provenance(Record):
    """What a derived file was computed from: the checkpoint (folder name, step, sha256 of its
    model.safetensors), the content of the run's input files, and the command that computed it."""

    checkpoint: str
    step: int | None
    model_sha256: str
    inputs: dict[str, str] | None = optional()  # noqa: RUF009 (a field whose default is None)
    """{config key: sha256} of the files the run read beyond its folder (``embtie.rundir.inputs``); None in
    files of older code or of runs that read none."""
    command: str


@dataclass(kw_only=True)
class RunDiagnostics(Record):
    """Everything ``embtie analyze`` computes once for a run (``RUN_DIR/analysis/diagnostics.json``)."""

    version: int
    strategy: str
    """the sharing strategy's registered name (a comparison's label may differ)."""
    options: dict[str, JSONValue]
    vocab_size: int
    dim: int
    seed: int
    task: str
    step0: Step0Loss
    params: ParameterCounts
    norms: NormHistograms
    norm_frequency: NormFrequency | None
    """None when the task has no training counts of its output vocabulary."""
    wordsim: dict[str, WordSimilarity] | None
    """benchmark -> scores; None without an English word vocabulary."""
    wordsim_skipped: str | None = optional()
    """why word similarity was not computed (or not on every benchmark), in one sentence for the report:
    subword pieces, another language, a missing benchmark file; None when it was, or was not asked for."""
    translation: TranslationQuality | None = None
    captioning: CaptioningQuality | None = None
    row_updates: RowUpdates | None
    """None when the analysis was light or none (``embtie compare --analysis``)."""
    valid: ValidationSummary | None
    """None when the analysis was none: no per-unit validation, no bootstrap over units."""
    seconds: float | None = optional()
    provenance: Provenance | None = optional()  # noqa: RUF009 (a field factory, as the others)
    """the checkpoint the diagnostics came from (files of older code have none)."""

    @property
    def level(self) -> str:
        """How much was analysed (``embtie.analysis.run_diagnostics.LEVELS``): ``none`` without the
        per-unit validation, ``light`` without row updates, else ``full``."""
        if self.valid is None:
            return "none"
        return "light" if self.row_updates is None else "full"


IntArray = NDArray[np.int64]
FloatArray = NDArray[np.float64]


@dataclass(kw_only=True)
class QualityArrays:
    """The per-unit statistics behind the paired tests of output quality (translation, captioning)."""

    bleu_stats: FloatArray
    """(units, k) sacreBLEU statistics per sentence or image."""
    word_incidence: NDArray[np.uint8]
    """(units, W) 0/1: word j occurs in output i."""


@dataclass(kw_only=True)
class RunArrays:
    """The arrays behind a run's diagnostics (``RUN_DIR/analysis/arrays.npz``, one entry per set field)."""

    input_norms: FloatArray
    """(V,) norms of the effective input vectors."""
    output_norms: FloatArray
    """(V,) norms of the effective output vectors."""
    counts: IntArray | None = None
    """(V,) training counts of the output vocabulary, where the task knows them."""
    bleu_stats: FloatArray | None = None
    """(units, k) sacreBLEU statistics per sentence or image (translation, captioning)."""
    word_incidence: NDArray[np.uint8] | None = None
    """(units, W) 0/1: word j occurs in output i (translation, captioning)."""
    input_update_counts: IntArray | None = None
    """(V,) batches in which each row got an input-path gradient (None: light or no analysis)."""
    output_update_counts: IntArray | None = None
    """(V,) batches in which each row got an output-path gradient (None: light or no analysis)."""
    valid_units: FloatArray | None = None
    """(units, 2) [summed token loss, tokens] per validation unit (None: no analysis)."""

    def save(self, path: Path) -> None:
        present = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        np.savez_compressed(path, **{k: v for k, v in present.items() if v is not None})

    @classmethod
    def load(cls, path: Path) -> RunArrays:
        names = {f.name for f in dataclasses.fields(cls)}
        with np.load(path) as z:
            arrays: dict[str, Any] = {k: z[k] for k in z.files if k in names}
        try:
            return cls(**arrays)
        except TypeError as e:
            raise DataError(f"{path}: {e}") from None
