"""A language model on raw text: ``data.tokenizer=bpe|unigram`` trains a SentencePiece model on the training
split through ``train_subwords``, caches it by content in ``$EMBTIE_CACHE`` and keeps it in the run; every
evaluation gives bits per byte of the original text, the same number whatever the tokenizer cuts."""

from __future__ import annotations

import math
import shutil

import pytest

from embtie.config import load_config
from embtie.data.lm_corpora import load_corpus_tokens
from embtie.rundir.loading import load_run
from embtie.tasks.lm.task import LMTask
from embtie.training import train
from raw_corpus import raw_corpus
from tiny_runs import TINY_GPT_BODY

SHORT = ["train.max_steps=3", "train.warmup_steps=0", "train.eval_every=0", "train.checkpoint_every=0"]


@pytest.fixture
def files(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path / "cache"))
    return raw_corpus(tmp_path / "corpus", train=1500, valid=100, test=100)


def _cfg(files, *overrides: str):
    own = [f"data.{s}_file={p}" for s, p in files.items()]
    return load_config("ptb-gpt-tiny", [*own, *TINY_GPT_BODY, "data.train_tokens=null", *SHORT, *overrides])


@pytest.mark.parametrize("kind", ["bpe", "unigram"])
def test_subwords_are_trained_on_train_and_cached_by_content(files, tmp_path, kind):
    task = LMTask(_cfg(files, f"data.tokenizer={kind}", "data.vocab_size=400"))
    model = task.subword_model_file()
    assert model is not None and model.is_relative_to(tmp_path / "cache" / "subwords")
    assert len(task.vocab) <= 400 and task.vocab.unk_count() == 0
    again = LMTask(_cfg(files, f"data.tokenizer={kind}", "data.vocab_size=400")).subword_model_file()
    assert again == model  # same text and options: the cached model
    assert LMTask(_cfg(files, f"data.tokenizer={kind}", "data.vocab_size=500")).subword_model_file() != model


def test_raw_text_defaults_to_subwords():
    cfg = load_config("ptb-gpt-tiny", ["data.train_file=a.txt", "data.valid_file=b.txt"])
    assert cfg.data.corpus().tokenizer == "bpe" and cfg.data.dataset is None  # config.yaml: the user's files
    assert load_config("ptb-gpt-tiny").data.corpus().tokenizer == "word"


def test_bits_per_byte_count_the_original_text_and_the_run_keeps_its_tokenizer(files, tmp_path):
    run_dir = tmp_path / "run"
    summary = train(_cfg(files, "data.tokenizer=bpe", "data.vocab_size=400"), run_dir)
    run = load_run(run_dir)
    res = run.task.evaluate(run.model, "valid")
    tokens = load_corpus_tokens(run.task.corpus, "valid")
    size = files["valid"].stat().st_size  # UTF-8 bytes, one per line end: the file itself
    assert res["bpb"] == pytest.approx(res["loss"] / math.log(2) * len(tokens) / size, rel=1e-12)
    assert summary["valid_bpb"] == pytest.approx(res["bpb"], rel=1e-5)
    # the run reads its own copy of the subword model: the cache may go
    shutil.rmtree(tmp_path / "cache")
    again = load_run(run_dir)
    assert again.task.corpus.tokenizer == f"sentencepiece:{run_dir / 'subwords.model'}"
    assert again.task.evaluate(again.model, "valid")["bpb"] == pytest.approx(res["bpb"], rel=1e-6)
    train(_cfg(files, "data.tokenizer=word"), tmp_path / "words")
    words = load_run(tmp_path / "words")
    w = words.task.evaluate(words.model, "valid")
    wt = load_corpus_tokens(words.task.corpus, "valid")
    assert w["bpb"] == pytest.approx(w["loss"] / math.log(2) * len(wt) / size, rel=1e-12)
