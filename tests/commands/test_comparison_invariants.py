"""The bad-input catalogue, fourth round (issue 54, classes 2-4): a comparison never silently compares
something else, refused in one line before anything trains (the harness of ``test_bad_inputs`` checks that the
command created nothing: no run folder, no design file).

- ``INVARIANTS``: a labelled variant setting what every arm shares (evaluation data and settings, the
  tokenizer and vocabulary, the corpus), or what a ladder or ``--match`` sets for every arm; two arms alike;
  an optimizer option that reaches no parameter;
- ``METRICS``: a metric (or a margin) the task does not have, a quantized metric with an arm that has no
  flat table, also under ``--until-decided`` and ``--ladder``;
- ``VALUES``: one ladder value in several spellings, labels that are no safe folder name.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
from test_bad_inputs import Ctx, case, check_cli_case


def compare(*args: Any, preset: str = "ptb-gpt-tiny") -> Callable[[Ctx], list[Any]]:
    """``embtie compare PRESET ARGS --out TMP/c``."""
    return lambda c: ["compare", preset, *[str(a) for a in args], "--out", c.tmp / "c"]


def variant(option: str, *more: str, preset: str = "ptb-gpt-tiny") -> Callable[[Ctx], list[Any]]:
    """A comparison of tied against a variant of tied with one config override."""
    return compare("--strategies", f"tied,x=tied:{option}", *more, preset=preset)


SHARED = "which every arm shares"
MT = "multi30k-transformer-small"

INVARIANTS = [
    case("variant-valid-tokens", variant("data.valid_tokens=500"), "x=tied:data.valid_tokens=500",
         "cannot set data.valid_tokens", SHARED, "measured on the same text"),
    case("variant-valid-file", variant("data.valid_file=other.txt"), "data.valid_file", SHARED),
    case("variant-test-file", variant("data.test_file=other.txt"), "data.test_file", SHARED),
    case("variant-eval-batch-size", variant("data.eval_batch_size=2"), "data.eval_batch_size", SHARED),
    case("variant-eval-batches", variant("train.eval_batches=3"), "train.eval_batches", "same batches"),
    case("variant-eval-every", variant("train.eval_every=5"), "train.eval_every", "at the same steps"),
    case("variant-bptt", variant("data.bptt=32"), "data.bptt", "data.bptt-token windows"),
    case("variant-tokenizer", variant("data.tokenizer=bpe"), "data.tokenizer", "one tokenizer and vocabulary"),
    case("variant-vocab-size", variant("data.vocab_size=500"), "data.vocab_size", "vocabulary"),
    case("variant-min-count", variant("data.min_count=3"), "data.min_count", "vocabulary"),
    case("variant-dataset", variant("data.dataset=wikitext-2"), "data.dataset", "one corpus"),
    case("variant-mt-beam", variant("data.beam=1", preset=MT), "data.beam", "decoding decides BLEU"),
    case("variant-mt-valid-pairs", variant("data.valid_pairs=10", preset=MT), "data.valid_pairs", SHARED),
    case("variant-mt-src-lang", variant("data.src_lang=en:data.tgt_lang=de", preset=MT), "data.src_lang", SHARED),
    case("ladder-variant-depth", variant("model.n_layers=3", "--ladder", "model.n_layers=1,2"),
         "cannot set model.n_layers", "which --ladder model.n_layers=1,2 steps for every arm"),
    case("ladder-variant-steps", variant("train.max_steps=10", "--ladder", "model.n_layers=1,2"),
         "cannot set train.max_steps", "--tokens-per-param"),
    case("ladder-variant-epochs", variant("train.epochs=2", "--ladder", "size=xs,s"), "train.epochs"),
    case("ladder-size-variant-width", variant("model.dim=64", "--ladder", "size=xs,s"),
         "cannot set model.dim", "--ladder size=xs,s steps"),
    case("match-variant-depth", variant("model.n_layers=4", "--match", "params"),
         "cannot set model.n_layers", "--match params sets for every arm"),
    case("match-flops-variant-depth", variant("model.n_layers=4", "--match", "flops"), "--match flops"),
    case("variant-changes-nothing", variant("train.lr=0.003"), "x=tied:train.lr=0.003 trains the same config as tied",
         "compared with itself"),
    case("variant-repeats-a-comparison-option", compare("--strategies", "fixed,fl=fixed:logit_scale=learned"),
         "trains the same config as fixed"),
    case("global-muon-on-lstm", compare("--strategies", "tied,untied", "train.optimizer=muon", preset="ptb-lstm-small"),
         "train.optimizer=muon reaches 0 parameters", "LSTMLM", "use adamw"),
    case("train-muon-on-lstm", lambda c: ["train", "ptb-lstm-small", "train.optimizer=muon", "--out", c.tmp / "r"],
         "train.optimizer=muon reaches 0 parameters of this model"),
    # an option the arm's optimizer never reads: the variant was compared with itself (bitwise the same runs)
    case("variant-sgd-momentum-on-adamw", variant("train.momentum=0.5"),
         "train.momentum is set but train.optimizer=adamw does not use it (only sgd does)", "train.optimizer=sgd"),
    case("variant-muon-momentum-on-adamw", variant("train.muon_momentum=0.1"), "train.muon_momentum", "only muon"),
    case("variant-muon-adjust-on-adamw", variant("train.muon_adjust_lr=original"), "train.muon_adjust_lr"),
    case("global-eps-on-sgd", compare("--strategies", "tied,untied", "train.eps=1e-6", preset="ptb-lstm-small"),
         "train.eps is set but train.optimizer=sgd does not use it (only adamw and muon do)"),
    case("train-betas-on-sgd", lambda c: ["train", "ptb-lstm-small", "train.betas=[0.8,0.9]", "--out", c.tmp / "r"],
         "train.betas is set but train.optimizer=sgd"),
    case("train-momentum-on-muon", lambda c: ["train", "ptb-gpt-tiny", "train.optimizer=muon", "train.momentum=0.9",
                                              "--out", c.tmp / "r"], "train.momentum", "only sgd"),
]  # fmt: skip


def test_a_preset_s_own_adamw_values_stay_when_a_user_switches_to_sgd(tmp_path):
    """The check reads what the user gave: a preset's betas (or a whole config written by to_yaml, which spells
    every default out) pass with train.optimizer=sgd; a file of the user's own with momentum under adamw does not."""
    from embtie.config import load_config
    from embtie.errors import ConfigError

    assert load_config("multi30k-transformer-small", ["train.optimizer=sgd"]).train.betas == [0.9, 0.98]
    dump = tmp_path / "dump.yaml"
    dump.write_text(load_config("ptb-gpt-tiny").to_yaml())
    assert load_config(str(dump), ["train.optimizer=sgd", "train.momentum=0.9"]).train.momentum == 0.9
    mine = tmp_path / "mine.yaml"
    mine.write_text(load_config("ptb-gpt-tiny").to_yaml().replace("momentum: 0.0", "momentum: 0.5"))
    with pytest.raises(ConfigError, match=r"train\.momentum is set but train\.optimizer=adamw"):
        load_config(str(mine))


@pytest.mark.parametrize("c", INVARIANTS)
def test_invariants(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs transformers (embtie[hf])")
def test_muon_on_a_gpt2_of_conv1d_layers_is_refused_before_the_adamw_arm_trains(tmp_path, monkeypatch, request, capfd):
    """Issue 54's example: HF GPT-2's blocks are Conv1D, so muon reached nothing and the arm was bitwise
    AdamW; the muon arm comes second, so a refusal at its optimizer would come after tied trained."""
    c = case("hf-gpt2-muon", variant("train.optimizer=muon", preset="ptb-hf-gpt2-tiny"),
             "train.optimizer=muon reaches 0 parameters of the model of x (hf)", "Conv1D").values[0]  # fmt: skip
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


METRICS = [
    case("bleu-on-lm", compare("--metric", "bleu"), "--metric bleu (BLEU) is not measured on lm runs",
         "one of ppl, bpb, ppl-int8, ppl-int4"),
    case("vu-on-lm", compare("--metric", "vu"), "--metric vu", "lm runs"),
    case("bleu-on-lm-until-decided", compare("--metric", "bleu", "--until-decided", "--seeds", "2", "--max-seeds", "4"),
         "--metric bleu"),
    case("bleu-on-lm-ladder", compare("--metric", "bleu", "--ladder", "size=xs,s"), "--metric bleu"),
    case("bpb-on-translation", compare("--metric", "bpb", preset=MT),
         "--metric bpb (bits per byte) is not measured on translation runs", "one of ppl, bleu, vu"),
    case("ppl-int8-on-translation", compare("--metric", "ppl-int8", preset=MT), "--metric ppl-int8"),
    case("ppl-int8-with-adaptive", compare("--strategies", "tied,adaptive", "--metric", "ppl-int8"),
         "--metric ppl-int8 quantizes each arm's one (V, d) table", "adaptive (adaptive) keeps per-cluster tables"),
    case("ppl-int4-with-adaptive-variant",
         compare("--strategies", "tied,ad=adaptive:within=l2norm", "--metric", "ppl-int4"), "ad (adaptive)"),
    case("bleu-margin-on-lm", compare("--margin", "bleu=1"), "--margin bleu=1", "have no BLEU",
         "valid_ppl, valid_bpb"),
    case("bpb-margin-on-translation", compare("--margin", "valid_bpb=0.5%", preset=MT), "have no bits per byte"),
]  # fmt: skip


@pytest.mark.parametrize("c", METRICS)
def test_metrics(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


LONG = "a" * 300

VALUES = [
    case("ladder-int-spellings", compare("--ladder", "model.n_layers=1,1.0"),
         "--ladder gives model.n_layers=1 and model.n_layers=1.0, both 1"),
    case("ladder-zero-padded", compare("--ladder", "model.n_layers=01,2,+1"),
         "model.n_layers=01 and model.n_layers=+1"),
    case("ladder-float-spellings", compare("--ladder", "model.dropout=0.1,1e-1"), "both 0.1"),
    case("extrapolate-a-rung-spelled-otherwise", compare("--ladder", "model.n_layers=1,2", "--extrapolate", "2.0"),
         "--extrapolate model.n_layers=2 is a rung the ladder trains"),
    case("extrapolate-twice", compare("--ladder", "model.n_layers=1,2", "--extrapolate", "4,4.0"),
         "--extrapolate gives model.n_layers=4 and model.n_layers=4.0"),
    case("ladder-value-of-another-type", compare("--ladder", "model.n_layers=1,1.5"), "--ladder rung 1.5",
         "model.n_layers"),
    case("label-dot", compare("--strategies", "tied,.=tied:train.lr=0.002"), "bad strategy label '.'",
         "runs/<label>"),
    case("label-dotdot", compare("--strategies", "tied,..=tied:train.lr=0.002"), "bad strategy label '..'"),
    case("label-hidden", compare("--strategies", "tied,.x=tied:train.lr=0.002"), "bad strategy label '.x'"),
    case("label-slash", compare("--strategies", "tied,a/b=tied:train.lr=0.002"), "bad strategy label 'a/b'"),
    case("label-dash", compare("--strategies", "tied,-x=tied:train.lr=0.002"), "bad strategy label '-x'"),
    case("label-300", compare("--strategies", f"tied,{LONG}=tied:train.lr=0.002"), "has 300 characters",
         "at most 64"),
    case("labels-differ-in-case", compare("--strategies", "tied,Tied=tied:train.lr=0.002"),
         "'tied' and 'Tied', which differ only in case"),
]  # fmt: skip


@pytest.mark.parametrize("c", VALUES)
def test_values(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


def test_hf_compare_labels_of_many_options_fit_the_label_rule():
    """``embtie hf-compare --option ...`` names its variants itself: a long one is cut to the label's bound and
    ends in a hash of the whole, so two option sets alike in their first 55 characters keep two labels."""
    from embtie.commands.hf_compare import _strategy_entry
    from embtie.comparison import labels

    many = {"logit_scale": "learned", "logit_scale_init": 4, "logit_scale_lr": 10, "bias": True}
    a = _strategy_entry("fixed", {**many, "target_dim": 512}).partition("=")[0]
    b = _strategy_entry("fixed", {**many, "target_dim": 2048}).partition("=")[0]
    assert len(a) == len(b) == labels.MAX_LABEL and a != b
    for label in (a, b, _strategy_entry("fixed", {"bias": True}).partition("=")[0]):
        labels.check_label(label, label)
    assert _strategy_entry("fixed", {"bias": True}).startswith("fixed-bias.True=fixed:bias=True")
