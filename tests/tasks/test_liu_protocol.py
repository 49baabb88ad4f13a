"""Liu, Zhai & Chen's protocol: the paper presets (sizes, decode settings, checkpoint
averaging, the one-line error without the user's training files) and BLEU on tokenized text
(multi-bleu.perl style) next to detokenized sacreBLEU."""

from __future__ import annotations

import json
import math

import pytest
import torch
from sacrebleu.metrics import BLEU

from embtie import models, sharing
from embtie.analysis.translation_diag import diagnose_translation
from embtie.cli import main
from embtie.config import config_from_dict, load_config
from embtie.errors import DataError
from embtie.evaluation.bleu import corpus_scores, moses_tokenize, tokenized_bleu
from embtie.rundir.loading import load_for_decoding
from embtie.tasks.translation import TranslationTask
from embtie.tasks.translation.evaluation import references_tokenized
from embtie.training import train

PAPER = ("iwslt14-dynamicconv-paper", "wmt16-transformer-big-paper", "wmt16-dynamicconv-paper")


# ---------------------------------------------------------------------------- parameter counts


def attn(d: int) -> int:
    """q, k, v, o projections with biases."""
    return 4 * (d * d + d)


def ffn(d: int, f: int) -> int:
    return 2 * d * f + f + d


def ln(d: int) -> int:
    return 2 * d


def transformer_params(v: int, d: int, f: int, enc: int, dec: int) -> int:
    """Post-norm encoder-decoder Transformer with one V x d matrix shared by all three embeddings."""
    return enc * (attn(d) + ffn(d, f) + 2 * ln(d)) + dec * (2 * attn(d) + ffn(d, f) + 3 * ln(d)) + v * d


def dynamicconv_params(v: int, d: int, f: int, heads: int, enc_k: list[int], dec_k: list[int]) -> int:
    """Wu et al.'s blocks: GLU input projection d -> 2d, kernel predictor d -> H*K (no bias), output d -> d."""

    def block(k: int) -> int:
        return (2 * d * d + 2 * d) + d * heads * k + (d * d + d)

    enc = sum(block(k) + ffn(d, f) + 2 * ln(d) for k in enc_k)
    dec = sum(block(k) + attn(d) + ffn(d, f) + 3 * ln(d) for k in dec_k)
    return enc + dec + v * d


def build_on_meta(cfg) -> torch.nn.Module:
    """The preset's model at full size, three-way tied, without allocating its weights."""
    with torch.device("meta"):
        s = sharing.build(cfg.sharing.name, vocab_size=cfg.data.vocab_size, dim=cfg.model.dim, **cfg.sharing.options)
        return models.model_class(cfg.model.name)(cfg.model, s, None)


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_transformer_big_has_the_papers_size():
    cfg = load_config("wmt16-transformer-big-paper")
    m = cfg.model
    assert (m.dim, m.ffn_dim, m.heads, m.enc_layers, m.dec_layers, m.dropout) == (1024, 4096, 16, 6, 6, 0.3)
    assert n_params(build_on_meta(cfg)) == transformer_params(cfg.data.vocab_size, 1024, 4096, 6, 6)
    # the formula at Vaswani et al.'s ~37000-token shared vocabulary gives their published 213M (Table 3)
    assert transformer_params(37000, 1024, 4096, 6, 6) == pytest.approx(213e6, rel=0.01)


@pytest.mark.parametrize("preset", ["iwslt14-dynamicconv-paper", "wmt16-dynamicconv-paper"])
def test_dynamicconv_presets_have_the_papers_size(preset):
    cfg = load_config(preset)
    m = cfg.model
    assert m.enc_kernels == [3, 7, 15, 31, 31, 31, 31] and m.dec_kernels == [3, 7, 15, 31, 31, 31]
    expected = dynamicconv_params(cfg.data.vocab_size, m.dim, m.ffn_dim, m.heads, m.enc_kernels, m.dec_kernels)
    assert n_params(build_on_meta(cfg)) == expected


# ---------------------------------------------------------------------------- presets


@pytest.mark.parametrize(
    ("preset", "beam", "lenpen"),
    [  # Liu et al. section 3.2 (and fairseq's pay_less_attention_paper commands for DynamicConv)
        ("iwslt14-dynamicconv-paper", 4, 1.0),
        ("wmt16-transformer-big-paper", 4, 0.6),
        ("wmt16-dynamicconv-paper", 5, 0.5),
        ("iwslt14-transformer-paper", 5, 1.0),
    ],
)
def test_presets_carry_lius_decoding_and_averaging(preset, beam, lenpen):
    cfg = load_config(preset)
    assert (cfg.data.beam, cfg.data.lenpen) == (beam, lenpen)
    assert cfg.train.keep_checkpoints >= 10  # `embtie average RUN --last 10` needs the last 10
    assert cfg.data.vocab == "joint" and cfg.data.share_encoder_embedding  # all embeddings shared
    assert cfg.data.label_smoothing == 0.1 and cfg.train.betas == [0.9, 0.98]


@pytest.mark.parametrize("preset", ["wmt16-transformer-big-paper", "wmt16-dynamicconv-paper"])
def test_wmt16_presets_use_458k_token_updates(preset):
    cfg = load_config(preset)
    tokens = cfg.data.max_tokens * cfg.train.accumulate
    assert tokens == 3584 * 128 and round(tokens / 1000) == 459  # Liu's "458k" = 458,752 tokens
    assert cfg.train.lr == 1e-3 and cfg.train.precision == "bf16" and cfg.train.grad_clip is None
    assert cfg.data.src_lang == "en" and cfg.data.tgt_lang == "de" and cfg.data.vocab_size == 32768


@pytest.mark.parametrize("preset", PAPER)
def test_missing_training_files_give_one_line_naming_the_keys(preset, tmp_path, capsys):
    with pytest.raises(DataError) as e:
        TranslationTask.check_data(load_config(preset))
    msg = str(e.value)
    assert "\n" not in msg and "data.train_src_file" in msg and "data.train_tgt_file" in msg
    # the command line says the same in one line and writes nothing
    out = tmp_path / "run"
    assert main(["train", preset, "--out", str(out)]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data.train_src_file" in err and not out.exists()


def test_given_training_files_that_do_not_exist_are_named(monkeypatch, tmp_path):
    monkeypatch.setenv("EMBTIE_DATA", str(tmp_path))
    cfg = load_config("wmt16-dynamicconv-paper", ["data.train_src_file=/nope/train.en", "data.train_tgt_file=/x.de"])
    with pytest.raises(DataError, match=r"/nope/train\.en"):
        TranslationTask.check_data(cfg)


# ---------------------------------------------------------------------------- tokenized BLEU


def multi_bleu(hyps: list[str], refs: list[str], lowercase: bool = False) -> float:
    """multi-bleu.perl's arithmetic (one reference): clipped n-gram precisions on whitespace tokens,
    geometric mean, brevity penalty; 0 when an order has no match."""
    correct, total = [0] * 4, [0] * 4
    hyp_len = ref_len = 0
    for h, r in zip(hyps, refs):
        ht, rt = (h.lower() if lowercase else h).split(), (r.lower() if lowercase else r).split()
        hyp_len, ref_len = hyp_len + len(ht), ref_len + len(rt)
        for n in range(1, 5):
            hn = [tuple(ht[i : i + n]) for i in range(len(ht) - n + 1)]
            rn = [tuple(rt[i : i + n]) for i in range(len(rt) - n + 1)]
            total[n - 1] += len(hn)
            correct[n - 1] += sum(min(hn.count(g), rn.count(g)) for g in set(hn))
    if min(correct) == 0:
        return 0.0
    bp = 1.0 if hyp_len >= ref_len else math.exp(1 - ref_len / hyp_len)
    return 100 * bp * math.exp(sum(math.log(c / t) for c, t in zip(correct, total)) / 4)


HYPS = ["The cat's on the mat, isn't it?", 'He said "hello" to the dog.']
REFS = ["The cat's sitting on the mat, isn't it?", 'He said "hi" to the dog.']
HYPS_TOK = ["The cat 's on the mat , isn 't it ?", 'He said " hello " to the dog .']
REFS_TOK = ["The cat 's sitting on the mat , isn 't it ?", 'He said " hi " to the dog .']


def test_moses_tokenization_of_the_hand_made_pair():
    assert moses_tokenize(HYPS, "en") == HYPS_TOK and moses_tokenize(REFS, "en") == REFS_TOK


def test_tokenized_bleu_is_sacrebleu_none_on_hand_tokenized_text():
    res = corpus_scores(HYPS, REFS, "en")
    reference = BLEU(tokenize="none", smooth_method="none").corpus_score(HYPS_TOK, [REFS_TOK]).score
    assert res["bleu_tok"] == pytest.approx(reference)
    assert res["bleu_tok"] == pytest.approx(multi_bleu(HYPS_TOK, REFS_TOK))
    assert "tok:none" in res["bleu_tok_signature"] and "case:mixed" in res["bleu_tok_signature"]
    assert "pretok:moses.en" in res["bleu_tok_signature"]
    assert res["bleu_tok"] != pytest.approx(res["bleu"])  # a different number, reported next to it


def test_detokenized_bleu_and_keys_are_unchanged():
    plain = BLEU()
    expected = plain.corpus_score(HYPS, [REFS]).score
    with_tok, without = corpus_scores(HYPS, REFS, "en"), corpus_scores(HYPS, REFS)
    assert with_tok["bleu"] == without["bleu"] == pytest.approx(expected)
    assert with_tok["bleu_signature"] == without["bleu_signature"] == str(plain.get_signature())
    assert set(without) == {"bleu", "chrf", "bleu_signature", "chrf_signature", "bleu_detail", "sentences"}
    assert set(with_tok) - set(without) == {"bleu_tok", "bleu_tok_signature", "bleu_tok_detail"}


def test_lowercased_references_lowercase_the_hypotheses_as_multi_bleu_lc():
    refs = [r.lower() for r in REFS]
    res = tokenized_bleu(HYPS, refs, "en")  # lowercase=None: detected from the references
    assert "case:lc" in res["bleu_tok_signature"]
    assert res["bleu_tok"] == pytest.approx(multi_bleu(HYPS_TOK, [r.lower() for r in REFS_TOK], lowercase=True))
    cased = tokenized_bleu(HYPS, refs, "en", lowercase=False)  # forced off: "The" no longer matches "the"
    assert cased["bleu_tok"] < res["bleu_tok"] and "case:mixed" in cased["bleu_tok_signature"]


def test_pretokenized_references_are_split_as_they_are():
    res = tokenized_bleu(HYPS_TOK, REFS_TOK, "en", pretokenized=True)
    assert res["bleu_tok"] == pytest.approx(multi_bleu(HYPS_TOK, REFS_TOK))
    assert res["bleu_tok_signature"].endswith("pretok:given")
    # tokenizing tokenized text again is not the identity ('s -> ' s), hence the option
    assert moses_tokenize(["the cat 's ."], "en") != ["the cat 's ."]


def test_no_match_at_some_order_is_zero_as_multi_bleu():
    assert tokenized_bleu(["a b c d"], ["a x b y"], "en")["bleu_tok"] == 0.0 == multi_bleu(["a b c d"], ["a x b y"])


# ---------------------------------------------------------------------------- embtie eval


TINY = {
    "task": "translation",
    "data": {"dataset": "multi30k", "vocab_size": 120, "train_pairs": 200, "valid_pairs": 8, "max_tokens": 512,
             "max_len": 40, "beam": 2},
    "model": {"name": "transformer", "dim": 16, "enc_layers": 1, "dec_layers": 1, "heads": 2, "ffn_dim": 32,
              "max_positions": 128},
    "sharing": {"name": "tied"},
    "train": {"lr": 3e-3, "epochs": None, "max_steps": 2, "eval_batches": 1, "progress": False, "threads": 1},
}  # fmt: skip


def test_eval_reports_tokenized_bleu_next_to_sacrebleu(tmp_path, capsys):
    run = tmp_path / "run"
    train(config_from_dict(TINY), run)
    src, ref = tmp_path / "src.de", tmp_path / "ref.en"
    src.write_text("Ein Mann läuft.\nZwei Hunde spielen im Schnee.\n", encoding="utf-8")
    ref.write_text("A man runs.\nTwo dogs play in the snow.\n", encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", str(run), "--src-file", str(src), "--ref-file", str(ref)]) == 0
    out = capsys.readouterr().out
    saved = json.loads((run / "eval.json").read_text())["test"]
    hyps = (run / "hyps.test.txt").read_text(encoding="utf-8").splitlines()
    refs = ref.read_text(encoding="utf-8").splitlines()
    assert saved["bleu"] == pytest.approx(BLEU().corpus_score(hyps, [refs]).score)
    assert saved["bleu_tok"] == pytest.approx(tokenized_bleu(hyps, refs, "en")["bleu_tok"])
    assert f"tok-BLEU {saved['bleu_tok_signature']} = {saved['bleu_tok']:.2f}" in out
    assert f"sacreBLEU {saved['bleu_signature']} = {saved['bleu']:.2f}" in out
    # --ref-tokenized: the references (and outputs) are split on spaces as they are
    assert main(["eval", str(run), "--src-file", str(src), "--ref-file", str(ref), "--ref-tokenized"]) == 0
    saved = json.loads((run / "eval.json").read_text())["test"]
    assert saved["bleu_tok_signature"].endswith("pretok:given")
    assert saved["bleu_tok"] == pytest.approx(tokenized_bleu(hyps, refs, "en", pretokenized=True)["bleu_tok"])
    # the run's diagnostics (embtie analyze / compare) carry both BLEUs of the validation split
    r = load_for_decoding(run)
    diag, _ = diagnose_translation(r.task, r.model)
    res = r.task.evaluate_translation(r.model, "valid")
    assert diag.scores.bleu == pytest.approx(res["bleu"])
    assert diag.scores.bleu_tok == pytest.approx(
        tokenized_bleu(res["hyps"], r.task.texts("valid").ref, "en")["bleu_tok"]
    )
    assert "pretok:moses.en" in (diag.scores.bleu_tok_signature or "")  # Multi30k text is untokenized


def test_shipped_iwslt14_references_count_as_tokenized():
    def tokenized(preset: str, src_file: str | None, given: bool | None = None) -> bool:
        return references_tokenized(load_config(preset).data, src_file, given)

    assert tokenized("iwslt14-dynamicconv-paper", None)  # fairseq's prepared (Moses-tokenized) valid split
    assert not tokenized("iwslt14-dynamicconv-paper", "test.de")  # a user file: tokenized by embtie
    assert tokenized("wmt16-transformer-big-paper", "newstest2014.tok.en", True)  # --ref-tokenized
    assert not tokenized("multi30k-transformer-small", None)  # Multi30k's raw text
