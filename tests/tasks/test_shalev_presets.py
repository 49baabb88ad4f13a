"""Shalev et al.'s translation setup: word-level vocabularies (min count, <unk>), batches of N sentences
(deterministic, resumable), the multi30k/iwslt14 ``*-rnn-shalev`` presets, and a tiny real run."""

import json
import math
import shutil
from collections import Counter

import pytest
import torch
from safetensors.torch import load_file

from embtie.cli import main
from embtie.config import load_config
from embtie.data.files import data_root
from embtie.data.pair_batches import BucketedPairs
from embtie.data.subwords import BOS, EOS, PAD, UNK
from embtie.data.vocabs import learn_vocabs, load_vocabs, save_vocab
from embtie.data.word_vocab import WordVocab
from embtie.errors import DataError
from embtie.rundir.checkpoints import CKPT, LATEST, latest
from embtie.rundir.loading import load_for_decoding
from embtie.tasks.translation import TranslationTask
from embtie.training import train
from embtie.training.metrics_log import read_metrics

SRC = ["a b c a", "b a d", "e a b", "x"]
TGT = ["p q p", "q r", "p s t", "q"]


def test_word_vocab_keeps_words_seen_min_count_times_and_maps_the_rest_to_unk(tmp_path):
    counts = Counter(w for line in SRC for w in line.split())  # a:4 b:3 c:1 d:1 e:1 x:1
    v = WordVocab.from_texts(SRC, min_count=2)
    assert len(v) == 4 + sum(c >= 2 for c in counts.values()) == 6
    assert v.words[4:] == ["a", "b"]  # most frequent first
    assert v.encode("a c b zzz") == [4, UNK, 5, UNK]
    assert v.decode([BOS, 4, UNK, 5, EOS, PAD]) == "a <unk> b"
    assert v.pieces("b d") == ["b", "<unk>"]
    assert len(WordVocab.from_texts(SRC, min_count=1)) == 4 + len(counts)
    with pytest.raises(DataError, match=r"lower data\.min_count"):
        WordVocab.from_texts(SRC, min_count=5)

    src, tgt = learn_vocabs("word", SRC, TGT, joint=False, vocab_size=0, min_count=2)
    assert src.words[4:] == ["a", "b"] and tgt.words[4:] == ["p", "q"]
    joint, same = learn_vocabs("word", SRC, TGT, joint=True, vocab_size=0, min_count=2)
    assert joint is same and set(joint.words[4:]) == {"a", "b", "p", "q"}

    save_vocab(tgt, tmp_path / "words.src.txt")
    save_vocab(tgt, tmp_path / "words.tgt.txt")
    back, _ = load_vocabs("word", "separate", tmp_path)
    assert back.words == tgt.words and back.encode("q p s") == tgt.encode("q p s")


def test_word_runs_read_the_tokenized_lowercased_multi30k_text():
    cfg = load_config("multi30k-rnn-shalev", ["data.train_pairs=2000"])
    task = TranslationTask(cfg)
    tok = data_root() / "multi30k" / "tok"
    train_en = (tok / "train.lc.norm.tok.en").read_text(encoding="utf-8").splitlines()[:2000]
    counts = Counter(w for line in train_en for w in line.split())
    assert len(task.tgt_sw) == 4 + sum(c >= 2 for c in counts.values())
    valid = task.texts("valid")
    assert valid.ref == (tok / "val.lc.norm.tok.en").read_text(encoding="utf-8").splitlines()
    assert valid.src[0] == (tok / "val.lc.norm.tok.de").read_text(encoding="utf-8").splitlines()[0]
    assert task.src_sw is not task.tgt_sw and task.tgt_sw.text_form == "tokenized"


def test_sentence_batches_cover_every_pair_once_with_at_most_n_sentences():
    g = torch.Generator().manual_seed(0)
    lengths = torch.randint(1, 30, (203,), generator=g).tolist()
    src = [[5] * n for n in lengths]
    tgt = [[6] * (n // 2 + 1) for n in lengths]
    pairs = BucketedPairs(src, tgt, max_tokens=1, max_len=25, max_sentences=16)
    kept = [i for i, n in enumerate(lengths) if n <= 25]
    for epoch in range(2):
        batches = pairs.batches(torch.Generator().manual_seed(epoch))
        assert all(1 <= len(b) <= 16 for b in batches)
        assert len(batches) == math.ceil(len(kept) / 16)
        assert sorted(i for b in batches for i in b) == kept
        assert batches == pairs.batches(torch.Generator().manual_seed(epoch))  # same seed, same epoch
    assert pairs.batches(torch.Generator().manual_seed(0)) != pairs.batches(torch.Generator().manual_seed(1))


TINY = [
    "data.train_pairs=240",
    "data.valid_pairs=24",
    "data.batch_sentences=16",
    "data.beam=2",
    "model.dim=32",
    "model.enc_hidden=24",
    "model.dec_hidden=32",
    "model.attn_dim=16",
    "model.dropout=0.1",
    "train.threads=1",
    "train.progress=false",
    "train.log_every=5",
    "train.lr=0.003",
]


def test_presets_load_with_the_papers_settings():
    m30k, bpe, iwslt = (
        load_config(n) for n in ("multi30k-rnn-shalev", "multi30k-rnn-shalev-bpe", "iwslt14-rnn-shalev")
    )
    for c in (m30k, bpe, iwslt):
        assert c.model.name == "rnn" and c.model.dim == 512 and c.train.optimizer == "adamw"
        assert (c.train.schedule, c.train.monitor, c.train.plateau_patience, c.train.early_stop) == (
            "plateau", "bleu", 8, 20,
        )  # fmt: skip
        assert c.train.weight_decay == 0.0 and c.train.eval_every == 0
        assert c.sharing.options.get("embed_scale") == "sqrt_d"
    assert (m30k.data.tokenizer, m30k.data.min_count, m30k.data.batch_sentences) == ("word", 2, 128)
    assert (m30k.train.lr, m30k.train.decay_factor) == (1e-3, 0.8)
    assert (bpe.data.tokenizer, bpe.data.vocab, bpe.data.batch_sentences) == ("bpe", "joint", 128)
    assert (iwslt.data.tokenizer, iwslt.data.min_count, iwslt.data.max_len, iwslt.data.batch_sentences) == (
        "word", 5, 20, 64,
    )  # fmt: skip
    assert (iwslt.train.lr, iwslt.train.decay_factor) == (2e-3, 0.25)
    assert load_config("multi30k-rnn-small").data.tokenizer == "bpe"  # today's default is unchanged
    assert load_config("multi30k-rnn-small").data.batch_sentences is None


def test_iwslt_preset_names_the_missing_training_split(tmp_path, capsys):
    assert main(["train", "iwslt14-rnn-shalev", "--out", str(tmp_path / "r")]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "split 'train' of iwslt14 is not available" in err[0]
    assert "data.train_src_file=PATH" in err[0]
    assert not (tmp_path / "r").exists()


def test_iwslt_word_run_drops_pairs_longer_than_20_words():
    task = TranslationTask(load_config("iwslt14-rnn-shalev", ["data.train_split=valid"]))
    pt = task.texts("valid")
    short = [i for i, (s, r) in enumerate(zip(pt.src, pt.ref)) if max(len(s.split()), len(r.split())) <= 20]
    assert task.train_data.indices == short and 0 < len(short) < len(pt)
    assert task.steps_per_epoch() == math.ceil(len(short) / 64)


def test_tiny_shalev_run_learns_scores_bleu_on_words_and_resumes_exactly(tmp_path):
    cfg = load_config("multi30k-rnn-shalev", [*TINY, "train.max_steps=30", "train.checkpoint_every=5",
                                              "train.keep_checkpoints=10"])  # fmt: skip
    run = tmp_path / "run"
    train(cfg, run)
    log = read_metrics(run)
    losses = [r["loss"] for r in log if r["split"] == "train"]
    assert losses[-1] < losses[0] - 1.0
    bleus = [r["bleu"] for r in log if r["split"] == "valid" and "bleu" in r]
    assert len(bleus) >= 2 and all(0.0 <= b <= 100.0 for b in bleus)
    assert (run / "words.src.txt").is_file() and (run / "words.tgt.txt").is_file()
    assert json.loads((run / "subwords.json").read_text())["tokenizer"] == "word"

    # resumed from step 10 (as after a crash), the run ends with the same weights
    again = tmp_path / "again"
    shutil.copytree(run, again)
    (again / "summary.json").unlink()
    for ck in (again / CKPT).glob("step-*"):
        if int(ck.name.split("-")[1]) > 10:
            shutil.rmtree(ck)
    (again / CKPT / LATEST).write_text("step-00000010", encoding="utf-8")
    train(cfg, again)
    assert [r["loss"] for r in read_metrics(again) if r["split"] == "train"] == losses
    a, b = load_file(str(latest(run) / "model.safetensors")), load_file(str(latest(again) / "model.safetensors"))
    assert latest(again).name == latest(run).name == "step-00000030"  # deleted above: trained again
    assert all(torch.equal(a[k], b[k]) for k in a)

    r = load_for_decoding(run)
    res = r.task.evaluate_translation(r.model, "valid", beam=2)
    assert res["bleu_text"] == "tokenized" and len(res["hyps"]) == 24
    vocab = set(r.task.tgt_sw.words)
    assert all(w in vocab for h in res["hyps"] for w in h.split())  # space-joined words of the vocabulary
