"""A user's own corpus: LM from plain text files (words, a SentencePiece model or a Hugging Face tokenizer),
MT from parallel files (train/valid/test), a Hugging Face datasets dataset (save_to_disk or a local file),
`embtie compare` on it with the same report, and `hf-compare` with the user's corpus and tokenizer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED
from embtie import cli
from embtie.config import load_config
from embtie.data.lm_corpora import EOS, Corpus, load_corpus_tokens
from embtie.errors import ConfigError, DataError

TINY_LM = ["model.dim=16", "model.n_layers=1", "model.n_heads=2", "model.max_len=16", "data.bptt=16",
           "data.batch_size=4", "data.eval_batch_size=4", "train.max_steps=6", "train.warmup_steps=0",
           "train.eval_every=3", "train.log_every=2", "train.checkpoint_every=0", "train.threads=1",
           "train.progress=false"]  # fmt: skip


def ptb_slice(n: int, skip: int = 0) -> str:
    lines = (SHARED / "ptb/ptb.valid.txt").read_text(encoding="utf-8").split("\n")
    return "\n".join(line.strip() for line in lines[skip : skip + n]) + "\n"


@pytest.fixture
def lm_files(tmp_path) -> dict[str, Path]:
    files = {}
    for split, (n, skip) in {"train": (600, 0), "valid": (60, 600), "test": (60, 700)}.items():
        files[split] = tmp_path / f"{split}.txt"
        files[split].write_text(ptb_slice(n, skip), encoding="utf-8")
    return files


def lm_args(files: dict[str, Path]) -> list[str]:
    return [f"data.{s}_file={p}" for s, p in files.items()]


def test_an_lm_trains_and_is_tested_on_plain_text_files(lm_files, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("EMBTIE_DATA", str(tmp_path / "nothing"))  # no dataset needed
    (tmp_path / "nothing").mkdir()
    run = tmp_path / "run"
    words_all = ["data.tokenizer=word", "data.min_count=1"]  # every word (the default for own text: bpe)
    assert cli.main(["train", "ptb-gpt-tiny", *lm_args(lm_files), *words_all, *TINY_LM, "--out", str(run)]) == 0
    vocab = json.loads((run / "vocab.json").read_text())
    words = set(lm_files["train"].read_text().split()) | {EOS}
    assert set(vocab["itos"]) == words
    capsys.readouterr()
    assert cli.main(["eval", str(run), "--split", "test"]) == 0
    assert "test ppl" in capsys.readouterr().out
    assert json.loads((run / "eval.json").read_text())["test"]["tokens"] > 0


def test_words_of_valid_or_test_that_train_lacks_become_unk(tmp_path):
    from embtie.tasks.lm.streams import train_vocab

    (tmp_path / "t.txt").write_text("a b c\na b\n")
    vocab = train_vocab(Corpus(train_file=str(tmp_path / "t.txt"), valid_file=str(tmp_path / "t.txt")))
    # every word of train is kept at min_count 1, so the rarest (c) becomes <unk>: its row is trained
    assert vocab.itos == ["a", "b", "<eos>", "<unk>"] and vocab.counts == [2, 2, 2, 1]
    assert vocab.encode(["a", "zebra", "c"]).tolist() == [0, 3, 3]


def test_a_subword_tokenizer_cuts_the_corpus_into_its_pieces(lm_files, tmp_path):
    import sentencepiece as spm

    prefix = tmp_path / "sp"
    spm.SentencePieceTrainer.train(input=str(lm_files["train"]), model_prefix=str(prefix), vocab_size=300,
                                   model_type="bpe", minloglevel=2)  # fmt: skip
    corpus = Corpus(train_file=str(lm_files["train"]), valid_file=str(lm_files["valid"]),
                    tokenizer=f"sentencepiece:{prefix}.model")  # fmt: skip
    toks = load_corpus_tokens(corpus, "train")
    words = load_corpus_tokens(Corpus(train_file=str(lm_files["train"]), valid_file="x"), "train")
    assert toks.count(EOS) == 600 and "▁the" in toks
    assert len(toks) > len(words) and len(set(toks)) < 350 < len(set(words))  # pieces: more tokens, fewer types


def test_a_hugging_face_tokenizer_the_user_names(lm_files, tmp_path):
    pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train([str(lm_files["train"])], trainers.BpeTrainer(vocab_size=200, special_tokens=["[UNK]"]))
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(tmp_path / "tok")
    tokenizer = f"hf:{tmp_path / 'tok'}"
    corpus = Corpus(train_file=str(lm_files["train"]), valid_file=str(lm_files["valid"]), tokenizer=tokenizer)
    toks = load_corpus_tokens(corpus, "valid")
    assert toks.count(EOS) == 60 and len(set(toks)) <= 201
    with pytest.raises(DataError, match="cannot be loaded"):
        load_corpus_tokens(Corpus(train_file=str(lm_files["train"]), tokenizer="hf:no/such-tokenizer"), "train")


def test_a_datasets_dataset_saved_to_disk_or_a_local_file(lm_files, tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    text = {s: [x for x in p.read_text().split("\n") if x] for s, p in lm_files.items()}
    dd = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"sentence": text["train"], "n": list(range(len(text["train"])))}),
        "validation": datasets.Dataset.from_dict({"sentence": text["valid"], "n": [0] * len(text["valid"])}),
        "test": datasets.Dataset.from_dict({"sentence": text["test"], "n": [0] * len(text["test"])}),
    })  # fmt: skip
    dd.save_to_disk(str(tmp_path / "ds"))
    corpus = Corpus(source=f"hf:{tmp_path / 'ds'}", text_column="sentence")
    plain = Corpus(train_file="t", valid_file=str(lm_files["valid"]))
    assert load_corpus_tokens(corpus, "valid") == load_corpus_tokens(plain, "valid")
    assert load_corpus_tokens(corpus, "test").count(EOS) == 60
    with pytest.raises(DataError, match=r"no column 'text'.*sentence"):
        load_corpus_tokens(Corpus(source=f"hf:{tmp_path / 'ds'}"), "train")
    jsonl = tmp_path / "train.jsonl"
    jsonl.write_text("".join(json.dumps({"text": x}) + "\n" for x in text["train"]))
    one = Corpus(source=f"hf:{jsonl}", valid_file=str(lm_files["valid"]))
    assert load_corpus_tokens(one, "train").count(EOS) == 600
    assert load_corpus_tokens(one, "valid").count(EOS) == 60  # a file of the split wins over the source
    with pytest.raises(DataError, match=r"no such|cannot be loaded"):
        load_corpus_tokens(Corpus(source=f"hf:{tmp_path / 'nope'}"), "train")


def test_bad_corpus_settings_are_one_line(lm_files):
    for overrides, match in (
        (["data.source=ptb"], "hf:PATH_OR_NAME"),
        (["data.tokenizer=wordpiece"], "sentencepiece:MODEL_FILE"),
        ([f"data.train_file={lm_files['train']}"], "data.valid_file"),
        ([f"data.valid_file={lm_files['valid']}"], "go with your own data.train_file"),
        ([f"data.train_file={lm_files['train']}", f"data.valid_file={lm_files['valid']}", "data.source=hf:x"],
         "not both"),
    ):  # fmt: skip
        with pytest.raises(ConfigError, match=match):
            load_config("ptb-gpt-tiny", overrides)


def test_compare_on_a_users_corpus_writes_the_same_report(lm_files, tmp_path, capsys):
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "2", "--out", str(out)]
    assert cli.main([*argv, "--no-progress", *lm_args(lm_files), *TINY_LM]) == 0
    md = (out / "report.md").read_text()
    for section in ("tied", "untied", "perplexity"):
        assert section in md.lower()
    assert (out / "report.html").is_file() and (out / "results.csv").is_file()


def test_mt_from_parallel_files_train_valid_and_test(tmp_path, capsys, monkeypatch):
    import gzip

    src = gzip.decompress((SHARED / "multi30k/raw/val.de.gz").read_bytes()).decode().split("\n")
    tgt = gzip.decompress((SHARED / "multi30k/raw/val.en.gz").read_bytes()).decode().split("\n")
    files = {}
    for split, (a, b) in {"train": (0, 800), "valid": (800, 900), "test": (900, 1000)}.items():
        for side, lines in (("src", src), ("tgt", tgt)):
            files[f"{split}_{side}"] = tmp_path / f"{split}.{side}"
            files[f"{split}_{side}"].write_text("\n".join(lines[a:b]) + "\n", encoding="utf-8")
    monkeypatch.setenv("EMBTIE_DATA", str(tmp_path / "nothing"))
    (tmp_path / "nothing").mkdir()
    run = tmp_path / "mt"
    tiny = ["model.dim=16", "model.enc_layers=1", "model.dec_layers=1", "model.heads=2", "model.ffn_dim=32",
            "data.vocab_size=200", "data.max_tokens=512", "train.max_steps=3", "train.eval_every=0",
            "train.checkpoint_every=0", "train.threads=1", "train.progress=false", "data.beam=1",
            "train.warmup_steps=0"]  # fmt: skip
    own = [f"data.{k}_file={p}" for k, p in files.items()]
    code = cli.main(["train", "multi30k-transformer-small", *own, *tiny, "--out", str(run)])
    assert code == 0, capsys.readouterr().err
    capsys.readouterr()
    assert cli.main(["eval", str(run), "--split", "test"]) == 0, capsys.readouterr().err
    res = json.loads((run / "eval.json").read_text())["test"]
    assert res["sentences"] == 100 and res["split"] == "test"
    with pytest.raises(ConfigError, match=r"data\.valid_src_file and data\.valid_tgt_file"):
        load_config("multi30k-transformer-small", [f"data.valid_src_file={files['valid_src']}"])


def test_hf_compare_takes_the_users_corpus_and_tokenizer(lm_files, tmp_path):
    pytest.importorskip("transformers")
    import sentencepiece as spm

    spm.SentencePieceTrainer.train(input=str(lm_files["train"]), model_prefix=str(tmp_path / "sp"), vocab_size=200,
                                   model_type="bpe", minloglevel=2)  # fmt: skip
    cfg = tmp_path / "gpt2-micro.json"
    cfg.write_text(json.dumps({"model_type": "gpt2", "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 32}))
    out = tmp_path / "out"
    argv = ["hf-compare", str(cfg), "--strategies", "tied", "--steps", "2", "--out", str(out), "--block", "16",
            "--seeds", "1", "--batch-size", "4", "--device", "cpu", "--train-file", str(lm_files["train"]),
            "--valid-file", str(lm_files["valid"]), "--tokenizer", f"sentencepiece:{tmp_path}/sp.model"]  # fmt: skip
    assert cli.main(argv) == 0
    from embtie.rundir.loading import read_config

    run = read_config(out / "runs" / "tied" / "seed0")
    assert run.data.train_file == str(lm_files["train"]) and run.data.tokenizer == f"sentencepiece:{tmp_path}/sp.model"
    vocab = json.loads((out / "runs" / "tied" / "seed0" / "vocab.json").read_text())["itos"]
    assert len(vocab) < 250 and json.loads((out / "results.json").read_text())["rows"][0]["steps"] == 2
