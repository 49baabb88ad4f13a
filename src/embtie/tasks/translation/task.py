"""``TranslationTask``: sentence-level translation with a ``Seq2Seq`` model.

Loss: ``model.sharing.loss(h, y, ignore_index=PAD, label_smoothing)`` + ``model.regularization()``.
Quality: ``translate`` (greedy or beam search, detokenized) and ``evaluate_translation`` (sacreBLEU and
chrF on detokenized, cased text, with their signatures, and BLEU on tokenized text). The text,
vocabularies and batches are ``embtie.tasks.translation.inputs``'s; decoding and scoring are
``embtie.tasks.translation.evaluation``'s.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from embtie.config import RunConfig
from embtie.data.pair_batches import PairBatch
from embtie.data.parallel_corpora import ParallelText
from embtie.data.subwords import PAD
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.evaluation.bleu import corpus_scores
from embtie.models.registry import model_class
from embtie.models.seq2seq import PlainEmbedding, Seq2Seq
from embtie.sharing.base import SharingStrategy
from embtie.tasks.base import StepLoss, Task, TrainingText
from embtie.tasks.capabilities import Translates
from embtie.tasks.registry import register
from embtie.tasks.translation import evaluation, inputs
from embtie.tasks.translation.config import MTDataConfig
from embtie.tasks.translation.inputs import Vocab


@register
class TranslationTask(Task[Seq2Seq], Translates[Seq2Seq]):
    """Sentence-level translation; BLEU/chrF by ``translate`` + ``score``, loss/ppl by ``evaluate``."""

    name = "translation"
    data_config = MTDataConfig
    metrics = ("loss", "bleu")
    model_kind = Seq2Seq
    model_kind_name = "translation model"

    def __init__(self, cfg: RunConfig, subwords: tuple[Vocab, Vocab] | None = None) -> None:
        super().__init__(cfg)
        self.data: MTDataConfig = cfg.data
        self.src_sw, self.tgt_sw = subwords if subwords is not None else inputs.learn_vocabularies(self.data)
        self.batches = inputs.TrainingBatches(self.data, cfg.seed, self.src_sw, self.tgt_sw)
        self._encoded = inputs.EncodedSplits(self.src_sw, self.tgt_sw)

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        inputs.check_data(cfg.data)

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        """A model with one token table (``Seq2Seq.one_table``) needs a joint, shared vocabulary; a model with a
        position limit (``model.max_len``) must embed a training pair's longer side plus EOS (or BOS)."""
        model = model_class(cfg.model.name)
        data: MTDataConfig = cfg.data
        one_table = data.vocab == "joint" and data.share_encoder_embedding
        if issubclass(model, Seq2Seq) and model.one_table and not one_table:
            raise ConfigError(
                f"model {cfg.model.name!r} embeds source and target with one table (three-way tying); set "
                "data.vocab=joint and data.share_encoder_embedding=true"
            )
        max_len = cfg.model.max_len
        if max_len is not None and data.max_len + 1 > max_len:
            raise ConfigError(
                f"data.max_len={data.max_len} + 1 (EOS) > model.max_len={max_len}; lower data.max_len or raise the "
                "model's positions"
            )

    @property
    def joint(self) -> bool:
        return self.src_sw is self.tgt_sw

    # ------------------------------------------------------------------ model
    def output_vocab_size(self) -> int:
        return len(self.tgt_sw)

    def model_arguments(self, shared: SharingStrategy) -> dict[str, Any]:
        """The encoder embeds with the decoder's sharing object (three-way tying) when the vocabulary is
        joint and shared; otherwise with its own table, scaled and initialised as the sharing object's. A model
        that records them (``Seq2Seq.reads_sharing_options``: a Hugging Face body) gets the strategy's options."""
        model = model_class(self.cfg.model.name)
        extra = {"sharing_options": dict(self.cfg.sharing.options)} if issubclass(model, Seq2Seq) and \
            model.reads_sharing_options else {}  # fmt: skip
        if self.joint and self.data.share_encoder_embedding:
            return {"src_embed": None, **extra}
        dim = self.cfg.model.embedding_dim
        return {"src_embed": PlainEmbedding(len(self.src_sw), dim, embed_scale=shared.embed_scale,
                                            init_std=shared.init_std), **extra}  # fmt: skip

    # ------------------------------------------------------------------ training data
    @property
    def train_data(self) -> Any:
        """The training pairs, encoded and length-bucketed (``BucketedPairs``)."""
        return self.batches.pairs

    def steps_per_epoch(self, world_size: int = 1) -> int:
        return self.batches.steps_per_epoch()

    def training_text(self) -> TrainingText:
        pairs = self.batches.pairs
        return TrainingText(tokens=sum(len(pairs.tgt[i]) + 1 for i in pairs.indices), sequences=len(pairs))  # + </s>

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> PairBatch:
        return self.batches.batch(epoch, index, rank, world_size).to(device)

    def loss(self, model: Seq2Seq, batch: PairBatch, carry: Any) -> tuple[StepLoss, Any]:
        h = model(batch.src, batch.tgt_in)
        ce = model.sharing.loss(h, batch.tgt_out, ignore_index=PAD, label_smoothing=self.data.label_smoothing)
        objective = ce + model.regularization()
        return StepLoss(objective=objective, ce=ce.detach(), tokens=batch.num_target_tokens), None

    # ------------------------------------------------------------------ evaluation
    def texts(
        self, split: str = "valid", src_file: str | Path | None = None, ref_file: str | Path | None = None
    ) -> ParallelText:
        """The ParallelText of a split of the configured dataset, or of user files."""
        return inputs.split_text(self.data, split, src_file, ref_file)

    def evaluate(
        self,
        model: Seq2Seq,
        split: str = "valid",
        path: str | Path | None = None,
        max_batches: int | None = None,
        ref_path: str | Path | None = None,
    ) -> dict[str, Any]:
        """Teacher-forced cross-entropy (no label smoothing) per reference token, and its perplexity.

        ``path``/``ref_path``: a user-supplied source file and its references instead of ``split``.
        """
        pairs = self._encoded.encoded(self.texts(split, path, ref_path), (split, str(path), str(ref_path)))
        meter = evaluation.teacher_forced_loss(
            model, pairs, self.data.eval_max_tokens, self.cfg.train.precision, max_batches
        )
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens}

    def translate(
        self,
        model: Seq2Seq,
        sentences: list[str],
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """Detokenized translations of ``sentences``, line-aligned with them (``evaluation.translate``)."""
        return evaluation.translate(model, sentences, (self.src_sw, self.tgt_sw), self.data,
                                    self.cfg.train.precision, beam=beam, lenpen=lenpen,
                                    max_tokens=max_tokens)  # fmt: skip

    def score(self, model: Seq2Seq, metric: str, result: dict[str, Any]) -> float:
        """``bleu``: sacreBLEU of greedy translations of the validation split (fast enough to run at every
        validation; the final evaluation uses the configured beam)."""
        if metric != "bleu":
            return super().score(model, metric, result)
        return float(self.evaluate_translation(model, "valid", beam=1, tok_bleu=False)["bleu"])

    def evaluate_translation(
        self,
        model: Seq2Seq,
        split: str = "valid",
        src_file: str | Path | None = None,
        ref_file: str | Path | None = None,
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        tok_bleu: bool = True,
        ref_tokenized: bool | None = None,
    ) -> dict[str, Any]:
        """Decode a split (or user files) and score it: sacreBLEU + chrF (with signatures) on the
        detokenized, cased output, plus the teacher-forced loss/perplexity. ``hyps`` holds the outputs.

        ``tok_bleu``: also BLEU on Moses-tokenized text (``bleu_tok``, multi-bleu.perl style, see
        ``embtie.evaluation.bleu``); ``ref_tokenized``: the references are tokenized already (None: see
        ``evaluation.references_tokenized``)."""
        if src_file is not None and ref_file is None:
            raise DataError("scoring needs references: give --ref-file R with --src-file S")
        texts = self.texts(split, src_file, ref_file)
        assert texts.ref is not None
        beam = self.data.beam if beam is None else beam
        lenpen = self.data.lenpen if lenpen is None else lenpen
        hyps = self.translate(model, texts.src, beam=beam, lenpen=lenpen)
        pretokenized = evaluation.references_tokenized(self.data, src_file, ref_tokenized)
        res = {**evaluation.result_header(split, src_file, ref_file, beam, lenpen, self.tgt_sw.text_form),
               **corpus_scores(hyps, texts.ref, self.data.tgt_lang if tok_bleu else None,
                               pretokenized=pretokenized)}  # fmt: skip
        ppl = self.evaluate(model, split, src_file, ref_path=ref_file)
        res.update(loss=ppl["loss"], ppl=ppl["ppl"], tokens=ppl["tokens"], hyps=hyps)
        return res

    # ------------------------------------------------------------------ vocabulary facts
    def output_token_counts(self) -> np.ndarray:
        """(V,) how often each target token id occurs in the training targets (as encoded for training)."""
        counts = np.zeros(len(self.tgt_sw), dtype=np.int64)
        for ids in self.tgt_sw.encode_batch(self.texts(self.data.train_split).ref or []):
            np.add.at(counts, np.asarray(ids, dtype=np.int64), 1)
        return counts

    def english_words(self) -> dict[str, int] | None:
        """The target vocabulary's words when it is a word vocabulary of English text."""
        return self.tgt_sw.stoi if isinstance(self.tgt_sw, WordVocab) and self.data.tgt_lang == "en" else None

    # ------------------------------------------------------------------ run directory
    def save(self, run_dir: Path) -> None:
        inputs.save_vocabularies(self.data, run_dir, self.src_sw, self.tgt_sw)

    @classmethod
    def load(cls, cfg: RunConfig, run_dir: Path) -> TranslationTask:
        # None: re-learned (subwords from the cache) when the run dir lacks them
        return cls(cfg, inputs.load_vocabularies(cfg.data, run_dir))
