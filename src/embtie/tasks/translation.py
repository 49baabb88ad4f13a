"""Translation (``task: translation``): Multi30k / IWSLT14 De<->En with SentencePiece BPE subwords.

- Subwords: one joint BPE model trained on both sides of the training split (``data.vocab: joint``;
  the encoder input, decoder input and decoder output can then be one sharing object), or one per
  language (``separate``; the encoder gets its own ``PlainEmbedding``, only the decoder shares).
  Models are cached (``embtie.data.subwords``) and copied into the run directory.
- Words instead (``data.tokenizer: word``, Shalev et al.): the tokenized lowercased text of the split,
  words seen at least ``data.min_count`` times in training, the rest <unk> (``embtie.data.word_vocab``);
  outputs are then space-joined words and BLEU is computed on tokenized lowercased text.
- Batches: length-bucketed by token count (``data.max_tokens`` padded tokens of the longer side per
  global batch) or by sentences (``data.batch_sentences`` pairs), one partition per epoch drawn and
  ordered with (seed, epoch), so the loop's (epoch, index) is the whole data position.
- Loss: ``model.sharing.loss(h, y, ignore_index=PAD, label_smoothing)`` + ``model.regularization()``.
  Validation loss/perplexity is the plain (unsmoothed) cross-entropy over reference tokens.
- Translation quality: ``translate`` (greedy or beam search, detokenized by SentencePiece) and
  ``score`` (sacreBLEU and chrF on detokenized, cased text, with their signatures).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from embtie import models, progress, seeding, sharing
from embtie.config import RunConfig
from embtie.data.batching import BucketedPairs, PairBatch, make_batch, source_tensor, token_batches
from embtie.data.files import data_root, verify
from embtie.data.mt import ParallelText, check_pair, load_parallel, load_user_files, split_files
from embtie.data.subwords import PAD, Subwords
from embtie.data.vocabs import VOCAB_FILES, learn_vocabs, load_vocabs, save_vocab
from embtie.data.word_vocab import WordVocab
from embtie.errors import ConfigError, DataError
from embtie.evaluation.beam_search import translate_ids
from embtie.evaluation.bleu import corpus_scores
from embtie.evaluation.loss_meter import LossMeter
from embtie.models import rnn_mt, transformer_mt  # noqa: F401  (registers "transformer" and "rnn")
from embtie.models.seq2seq import PlainEmbedding
from embtie.runtime import autocast
from embtie.tasks.base import StepLoss, Task
from embtie.tasks.capabilities import Translates
from embtie.tasks.registry import register


@dataclass
class MTDataConfig:
    """Corpus, subwords, batching and decoding of a translation run."""

    dataset: Literal["multi30k", "iwslt14"] = "multi30k"
    src_lang: Literal["de", "en"] = "de"
    tgt_lang: Literal["de", "en"] = "en"
    train_split: str = "train"
    """iwslt14 ships only ``valid``: give train_src_file/train_tgt_file, or train_split=valid for a smoke run."""
    train_src_file: str | None = None
    """your own training source text (one sentence per line), instead of the dataset's train split."""
    train_tgt_file: str | None = None
    valid_split: str = "valid"
    tokenizer: Literal["bpe", "word"] = "bpe"
    """bpe: SentencePiece subwords of the cased text; word: whitespace tokens of the dataset's tokenized,
    lowercased text (user train files must be tokenized the same way), outputs scored as tokenized text."""
    min_count: int = 2
    """word tokenizer: keep training words seen at least this often (joint: in both languages together)."""
    vocab: Literal["joint", "separate"] = "joint"
    """joint: one BPE model for both languages (three-way tying possible); separate: one per language."""
    share_encoder_embedding: bool = True
    """joint vocab only: the encoder embeds with the decoder's sharing object (three-way tying)."""
    vocab_size: int = 8000
    """SentencePiece vocabulary size (of each model when separate)."""
    max_tokens: int = 4096
    """padded tokens (longer side x rows) per global training batch."""
    batch_sentences: int | None = None
    """sentence pairs per global training batch (length-bucketed) instead of max_tokens; null: max_tokens."""
    eval_max_tokens: int = 8192
    max_len: int = 128
    """training pairs with a side longer than this many tokens (subwords or words) are dropped."""
    train_pairs: int | None = None
    """use only the first N training pairs (tests, quick runs); the subwords are learned on them too."""
    valid_pairs: int | None = None
    """use only the first N pairs of the validation split (tests, quick runs)."""
    label_smoothing: float = 0.1
    beam: int = 5
    lenpen: float = 1.0
    max_len_ratio: float = 1.5
    """outputs have at most max_len_ratio * source_length + max_len_extra subwords."""
    max_len_extra: int = 10

    def validate(self) -> None:
        if self.src_lang == self.tgt_lang:
            raise ConfigError(f"data.src_lang and data.tgt_lang are both {self.src_lang!r}; use de->en or en->de")
        for k in ("vocab_size", "min_count", "max_tokens", "eval_max_tokens", "max_len", "beam"):
            if getattr(self, k) < 1:
                raise ConfigError(f"data.{k}={getattr(self, k)} must be >= 1")
        if (self.train_src_file is None) != (self.train_tgt_file is None):
            raise ConfigError("give both data.train_src_file and data.train_tgt_file, or neither")
        if self.batch_sentences is not None and self.batch_sentences < 1:
            raise ConfigError(f"data.batch_sentences={self.batch_sentences} must be >= 1 (or null for max_tokens)")
        if self.train_pairs is not None and self.train_pairs < 1:
            raise ConfigError(f"data.train_pairs={self.train_pairs} must be >= 1 (or null for all)")
        if self.valid_pairs is not None and self.valid_pairs < 1:
            raise ConfigError(f"data.valid_pairs={self.valid_pairs} must be >= 1 (or null for all)")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ConfigError(f"data.label_smoothing={self.label_smoothing} must be in [0, 1)")
        if self.lenpen < 0 or self.max_len_ratio < 0 or self.max_len_extra < 0:
            raise ConfigError("data.lenpen, data.max_len_ratio and data.max_len_extra must be >= 0")


def _parallel(dataset: str, split: str, src: str, tgt: str, tokenized: bool = False) -> ParallelText:
    """A split under the current data root (cached per root: changing $EMBTIE_DATA reads again)."""
    return _parallel_at(str(data_root()), dataset, split, src, tgt, tokenized)


@lru_cache(maxsize=8)
def _parallel_at(root: str, dataset: str, split: str, src: str, tgt: str, tokenized: bool) -> ParallelText:
    return load_parallel(dataset, split, src, tgt, root=Path(root), tokenized=tokenized)


SUBWORD_FILES = VOCAB_FILES["bpe"]
Vocab = Subwords | WordVocab


PRETOKENIZED_DATASETS = frozenset({"iwslt14"})
"""datasets whose shipped text is already Moses-tokenized (``embtie.data.mt``): their tokenized BLEU
splits hypotheses and references on whitespace instead of tokenizing them again."""


@register
class TranslationTask(Task, Translates):
    """Sentence-level translation; BLEU/chrF by ``translate`` + ``score``, loss/ppl by ``evaluate``."""

    name = "translation"
    data_config = MTDataConfig
    metrics = ("loss", "bleu")

    def __init__(self, cfg: RunConfig, subwords: tuple[Vocab, Vocab] | None = None) -> None:
        super().__init__(cfg)
        self.data: MTDataConfig = cfg.data
        self.src_sw, self.tgt_sw = subwords if subwords is not None else self._learn_subwords()
        self._train: BucketedPairs | None = None
        self._epoch_batches: tuple[int, list[list[int]]] | None = None
        self._eval_cache: dict[tuple, tuple[list[list[int]], list[list[int]]]] = {}

    @classmethod
    def check_config(cls, cfg: RunConfig) -> None:
        if not hasattr(cfg.model, "dim") or not hasattr(models.model_class(cfg.model.name), "start"):
            seq2seq = [n for n in models.names() if hasattr(models.model_class(n), "start")]
            raise ConfigError(
                f"model {cfg.model.name!r} is not a translation model; use model.name= one of: {', '.join(seq2seq)}"
            )

    @classmethod
    def check_data(cls, cfg: RunConfig) -> None:
        d: MTDataConfig = cfg.data
        if d.train_src_file is not None:
            load_user_files(d.train_src_file, d.train_tgt_file, "data.train_src_file", "data.train_tgt_file")
        splits = [d.valid_split] if d.train_src_file is not None else [d.train_split, d.valid_split]
        check_pair(d.dataset, d.src_lang, d.tgt_lang)
        root = data_root()
        for split in splits:
            for f in split_files(d.dataset, split, d.tokenizer == "word").values():
                verify(f.path(root), f.sha256)

    # ------------------------------------------------------------------ subwords
    def _train_text(self) -> ParallelText:
        d = self.data
        if d.train_src_file is not None:
            pt = load_user_files(d.train_src_file, d.train_tgt_file)
        else:
            pt = _parallel(d.dataset, d.train_split, d.src_lang, d.tgt_lang, d.tokenizer == "word")
        if d.train_pairs is not None:
            pt = ParallelText(pt.src[: d.train_pairs], pt.ref[: d.train_pairs] if pt.ref else None)
        return pt

    def _learn_subwords(self) -> tuple[Vocab, Vocab]:
        pt, d = self._train_text(), self.data
        assert pt.ref is not None
        return learn_vocabs(
            d.tokenizer, pt.src, pt.ref, joint=d.vocab == "joint", vocab_size=d.vocab_size, min_count=d.min_count
        )

    @property
    def joint(self) -> bool:
        return self.src_sw is self.tgt_sw

    # ------------------------------------------------------------------ model
    def build_model(self) -> nn.Module:
        dim, opts = self.cfg.model.dim, self.cfg.sharing.options

        def body(s: nn.Module) -> nn.Module:
            src_embed = None
            if not (self.joint and self.data.share_encoder_embedding):
                src_embed = PlainEmbedding(len(self.src_sw), dim, embed_scale=s.embed_scale, init_std=s.init_std)
            return models.model_class(self.cfg.model.name)(self.cfg.model, s, src_embed)

        return seeding.build_with_streams(
            self.cfg.seed,
            lambda: sharing.build(self.cfg.sharing.name, vocab_size=len(self.tgt_sw), dim=dim, **opts),
            body,
        )

    # ------------------------------------------------------------------ training data
    @property
    def train_data(self) -> BucketedPairs:
        if self._train is None:
            pt = self._train_text()
            assert pt.ref is not None
            src = self.src_sw.encode_batch(pt.src)
            tgt = self.tgt_sw.encode_batch(pt.ref)
            d = self.data
            self._train = BucketedPairs(src, tgt, d.max_tokens, max_len=d.max_len, max_sentences=d.batch_sentences)
            if len(self._train) == 0:
                raise DataError(f"no training pair is shorter than data.max_len={self.data.max_len}; raise it")
        return self._train

    def steps_per_epoch(self, world_size: int = 1) -> int:
        return len(self.train_data.batches(None))  # the partition's size does not depend on the shuffle

    def _batches_of_epoch(self, epoch: int) -> list[list[int]]:
        if self._epoch_batches is None or self._epoch_batches[0] != epoch:
            g = torch.Generator().manual_seed(self.cfg.seed * 1_000_003 + epoch)
            self._epoch_batches = (epoch, self.train_data.batches(g))
        return self._epoch_batches[1]

    def train_batch(self, epoch: int, index: int, rank: int, world_size: int, device: torch.device) -> PairBatch:
        idx = self._batches_of_epoch(epoch)[index]
        mine = idx[rank::world_size] or idx[-1:]
        data = self.train_data
        return make_batch([data.src[i] for i in mine], [data.tgt[i] for i in mine], mine).to(device)

    def loss(self, model: nn.Module, batch: PairBatch, carry: Any) -> tuple[StepLoss, Any]:
        h = model(batch.src, batch.tgt_in)
        ce = model.sharing.loss(h, batch.tgt_out, ignore_index=PAD, label_smoothing=self.data.label_smoothing)
        objective = ce + model.regularization()
        return StepLoss(objective=objective, ce=ce.detach(), tokens=batch.num_target_tokens), None

    # ------------------------------------------------------------------ evaluation
    def texts(self, split: str = "valid", src_file: str | Path | None = None, ref_file: str | Path | None = None):
        """The ParallelText of a split of the configured dataset, or of user files."""
        if src_file is not None:
            return load_user_files(src_file, ref_file)
        d = self.data
        pt = _parallel(d.dataset, split, d.src_lang, d.tgt_lang, d.tokenizer == "word")
        if split == d.valid_split and d.valid_pairs is not None:
            pt = ParallelText(pt.src[: d.valid_pairs], pt.ref[: d.valid_pairs] if pt.ref else None)
        return pt

    def _encoded(self, texts: ParallelText, key: tuple) -> tuple[list[list[int]], list[list[int]]]:
        if key not in self._eval_cache:
            if texts.ref is None:
                raise DataError("perplexity needs references; give --ref-file with --src-file")
            self._eval_cache[key] = (self.src_sw.encode_batch(texts.src), self.tgt_sw.encode_batch(texts.ref))
        return self._eval_cache[key]

    @torch.no_grad()
    def evaluate(
        self,
        model: nn.Module,
        split: str = "valid",
        path: str | Path | None = None,
        max_batches: int | None = None,
        ref_path: str | Path | None = None,
    ) -> dict[str, Any]:
        """Teacher-forced cross-entropy (no label smoothing) per reference token, and its perplexity.

        ``path``/``ref_path``: a user-supplied source file and its references instead of ``split``.
        """
        texts = self.texts(split, path, ref_path)
        src, tgt = self._encoded(texts, (split, str(path), str(ref_path)))
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        meter = LossMeter()
        order = sorted(range(len(src)), key=lambda i: (max(len(src[i]), len(tgt[i])), i))
        lengths = [max(len(s), len(t)) + 1 for s, t in zip(src, tgt)]
        try:
            for n, idx in enumerate(token_batches(lengths, self.data.eval_max_tokens, order)):
                if max_batches is not None and n >= max_batches:
                    break
                b = make_batch([src[i] for i in idx], [tgt[i] for i in idx], idx).to(device)
                with autocast(device, self.cfg.train.precision):
                    h = model(b.src, b.tgt_in)
                    ce = model.sharing.loss(h, b.tgt_out, ignore_index=PAD)
                meter.add(ce, b.num_target_tokens)
        finally:
            model.train(was_training)
        return {"split": split, "loss": meter.loss, "ppl": meter.ppl, "tokens": meter.tokens}

    @torch.no_grad()
    def translate(
        self,
        model: nn.Module,
        sentences: list[str],
        *,
        beam: int | None = None,
        lenpen: float | None = None,
        max_tokens: int | None = None,
    ) -> list[str]:
        """Detokenized translations of ``sentences`` (batched by length, returned in input order); an empty
        (or blank) sentence translates to an empty line, so outputs stay line-aligned with the input."""
        d = self.data
        beam = d.beam if beam is None else beam
        lenpen = d.lenpen if lenpen is None else lenpen
        if beam < 1:
            raise ConfigError(f"--beam {beam} must be >= 1")
        device = next(model.parameters()).device
        was_training = model.training
        model.eval()
        ids = self.src_sw.encode_batch(sentences)
        budget = max_tokens or max(d.eval_max_tokens // max(beam, 1), 64)
        order = sorted((i for i in range(len(ids)) if ids[i]), key=lambda i: (len(ids[i]), i))
        out: list[str] = [""] * len(ids)
        bar = progress.bar(total=len(order), desc=f"beam {beam}", unit="sent")
        try:
            for idx in token_batches([len(s) + 1 for s in ids], budget, order):
                bar.update(len(idx))
                src = source_tensor([ids[i] for i in idx]).to(device)
                with autocast(device, self.cfg.train.precision):
                    hyps = translate_ids(
                        model, src, beam=beam, lenpen=lenpen, max_len_ratio=d.max_len_ratio,
                        max_len_extra=d.max_len_extra,
                    )  # fmt: skip
                for i, h in zip(idx, hyps):
                    out[i] = self.tgt_sw.decode(h)
        finally:
            bar.close()
            model.train(was_training)
        return out

    def score(self, model: nn.Module, metric: str, result: dict[str, Any]) -> float:
        """``bleu``: sacreBLEU of greedy translations of the validation split (fast enough to run at every
        validation; the final evaluation uses the configured beam)."""
        if metric != "bleu":
            return super().score(model, metric, result)
        return float(self.evaluate_translation(model, "valid", beam=1, tok_bleu=False)["bleu"])

    def evaluate_translation(
        self,
        model: nn.Module,
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
        ``embtie.evaluation.bleu``); ``ref_tokenized``: the references are tokenized already (None: True for the
        splits of ``PRETOKENIZED_DATASETS`` and of word-level runs, False for user files)."""
        if src_file is not None and ref_file is None:
            raise DataError("scoring needs references: give --ref-file R with --src-file S")
        texts = self.texts(split, src_file, ref_file)
        assert texts.ref is not None
        beam = self.data.beam if beam is None else beam
        lenpen = self.data.lenpen if lenpen is None else lenpen
        hyps = self.translate(model, texts.src, beam=beam, lenpen=lenpen)
        res = {"split": split if src_file is None else "file", "src_file": None if src_file is None else str(src_file),
               "ref_file": None if ref_file is None else str(ref_file), "beam": beam, "lenpen": lenpen,
               "bleu_text": self.tgt_sw.text_form,
               **corpus_scores(hyps, texts.ref, self.data.tgt_lang if tok_bleu else None,
                               pretokenized=self._ref_tokenized(src_file, ref_tokenized))}  # fmt: skip
        ppl = self.evaluate(model, split, src_file, ref_path=ref_file)
        res.update(loss=ppl["loss"], ppl=ppl["ppl"], tokens=ppl["tokens"], hyps=hyps)
        return res

    def _ref_tokenized(self, src_file: str | Path | None, given: bool | None) -> bool:
        """Whether the references being scored are tokenized already (``evaluate_translation``)."""
        if given is not None:
            return given
        word_level = getattr(self.data, "tokenizer", "bpe") == "word"
        return src_file is None and (self.data.dataset in PRETOKENIZED_DATASETS or word_level)

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
        names = VOCAB_FILES[self.data.tokenizer]["joint" if self.joint else "separate"]
        sws = (self.tgt_sw,) if self.joint else (self.src_sw, self.tgt_sw)
        for name, sw in zip(names, sws):
            dst = Path(run_dir) / name
            if not dst.is_file():
                save_vocab(sw, dst)
        kind = {"tokenizer": self.data.tokenizer, "vocab": "joint" if self.joint else "separate"}
        (Path(run_dir) / "subwords.json").write_text(json.dumps({**kind, "files": list(names)}), encoding="utf-8")

    @classmethod
    def load(cls, cfg: RunConfig, run_dir: Path) -> TranslationTask:
        vocabs = load_vocabs(cfg.data.tokenizer, cfg.data.vocab, Path(run_dir))
        return cls(cfg, vocabs)  # None: re-learned (subwords from the cache) when the run dir lacks them
