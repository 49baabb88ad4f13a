"""Config values and command-line arguments that cannot be meant: each is refused with one line on stderr
that names the key or flag, the value and what is allowed, before anything is written (the test's folder,
which is also the working directory, is unchanged: no run folder, no comparison folder).

The cases are tables, like tests/commands/test_bad_inputs.py (whose harness this mirrors): ``CONFIG_CASES``
(values in overrides and YAML files, read through their declarations), ``ARGUMENT_CASES`` (every
command's numbers and paths, checked where argparse reads them) and ``API_CASES`` (the same declarations
from Python).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from embtie.cli import main
from embtie.errors import ConfigError

os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data"))

TINY_LM = ["model.dim=16", "model.n_layers=1", "model.n_heads=2", "model.max_len=16", "data.bptt=16"]
TINY_MT = ["data.train_pairs=200", "model.dim=16", "model.heads=2"]


def snapshot(root: Path) -> dict[str, str]:
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = "dir" if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
    return out


@dataclass(frozen=True)
class Case:
    """``argv(tmp)`` is the command line; the one stderr line must contain every string of ``expect``."""

    argv: Callable[[Path], list[Any]]
    expect: tuple[str, ...]


def case(id: str, argv: Callable[[Path], list[Any]], *expect: str) -> Any:
    return pytest.param(Case(argv, expect), id=id)


def check_refused(c: Case, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture) -> str:
    monkeypatch.chdir(tmp_path)  # a default output folder (runs/...) would appear here
    argv = [str(a) for a in c.argv(tmp_path)]
    before = snapshot(tmp_path)
    capfd.readouterr()
    try:
        code = main(argv)
    except SystemExit as e:  # argparse
        code = e.code if isinstance(e.code, int) else 1
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err and len(lines) == 1, err
    assert code == 2, (code, lines[0])
    for s in c.expect:
        assert s in lines[0], f"{s!r} not in {lines[0]!r}"
    assert snapshot(tmp_path) == before, "a refused command wrote something"
    return lines[0]


# ---------------------------------------------------------------------------- config values


def train(*overrides: str, preset: str = "ptb-gpt-tiny", tiny: list[str] = TINY_LM) -> Callable[[Path], list[Any]]:
    return lambda tmp: ["train", preset, *tiny, *overrides, "--out", tmp / "run"]


def yaml_file(text: str) -> Callable[[Path], list[Any]]:
    def argv(tmp: Path) -> list[Any]:
        from embtie.config import load_config

        p = tmp / "mine.yaml"
        p.write_text(load_config("ptb-gpt-tiny").to_yaml().replace("lr: 0.003", text))
        return ["train", p, "--out", tmp / "run"]

    return argv


CONFIG_CASES = [
    case("train-tokens-zero", train("data.train_tokens=0"), "data.train_tokens=0", ">= 2"),
    case("valid-tokens-negative", train("data.valid_tokens=-5"), "data.valid_tokens=-5", ">= 2", "or null"),
    case("lr-infinite", train("train.lr=inf"), "train.lr=inf", "finite number in (0, 100]"),
    case("lr-nan", train("train.lr=nan"), "train.lr=nan", "finite number in (0, 100]"),
    case("lr-zero-in-exponent-form", train("train.lr=0e-4"), "train.lr=0.0", "in (0, 100]", "the default is"),
    case("seed-negative", train("seed=-1"), "seed=-1", ">= 0"),
    case("dropout-one", train("model.dropout=1"), "model.dropout=1", "in [0, 1)"),
    case("betas-out-of-range", train("train.betas=[0.9,1]"), "train.betas=[0.9, 1]", "2 numbers in [0, 1)"),
    case("betas-three", train("train.betas=[0.9,0.95,0.99]"), "train.betas", "a list of 2 numbers"),
    case("device-unknown", train("train.device=gpu"), "train.device='gpu'", "auto, cpu, cuda or cuda:N"),
    case("max-steps-in-exponent-form-fraction", train("train.max_steps=2.5e0"), "train.max_steps=2.5", "integer"),
    case("z-loss-negative", train("sharing.options.z_loss=-1e-4"), "sharing.options.z_loss=-0.0001", ">= 0"),
    case(
        "untie-at-over-one",
        train("sharing.name=tie-untie", "sharing.options.untie_at=1.5"),
        "sharing.options.untie_at=1.5",
        "in [0, 1]",
    ),
    case(
        "cutoffs-decreasing",
        train("sharing.name=adaptive", "sharing.options.cutoffs=[50,20]"),
        "sharing.options.cutoffs=[50, 20]",
        "increase strictly",
    ),
    case(
        "option-word-mistyped",
        train("sharing.options.init_std=log_v_over_D"),
        "sharing.options.init_std='log_v_over_D'",
        "did you mean 'log_v_over_d'",
    ),
    case(
        "option-number-as-text-out-of-range",
        train("sharing.options.logit_scale=-1E1"),
        "sharing.options.logit_scale=-10.0",
        "> 0",
    ),
    case("yaml-number-out-of-range", yaml_file("lr: -1e-4"), "mine.yaml", "train.lr=-0.0001", "in (0, 100]"),
    case("yaml-number-text", yaml_file("lr: fast"), "mine.yaml", "train.lr='fast'", "a number in (0, 100]"),
    case(
        "vocab-size-below-the-characters",
        train("data.vocab_size=10", preset="multi30k-transformer-small", tiny=TINY_MT),
        "data.vocab_size=10",
        "must be in [",
        "2147483647]",
        "distinct characters",
    ),
    case(
        "vocab-size-over-int32",
        train("data.vocab_size=3e9", preset="multi30k-transformer-small", tiny=TINY_MT),
        "data.vocab_size=3000000000",
        "in [8, 2147483647]",
    ),
    case(
        "compare-vocab-size-below-the-characters",
        lambda tmp: [
            "compare",
            "multi30k-transformer-small",
            *TINY_MT,
            "data.vocab_size=10",
            "--strategies",
            "tied",
            "--seeds",
            "1",
            "--out",
            tmp / "cmp",
        ],
        "data.vocab_size=10",
        "must be in [",
    ),
    case(
        "compare-variant-option-out-of-range",
        lambda tmp: ["compare", "ptb-gpt-tiny", "--strategies", "zl=tied:z_loss=-1", "--seeds", "1"],
        "z_loss=-1",
        ">= 0",
    ),
]


@pytest.mark.parametrize("c", CONFIG_CASES)
def test_config_value(c, tmp_path, monkeypatch, capfd):
    check_refused(c, tmp_path, monkeypatch, capfd)


def test_compare_with_missing_data_creates_no_folder(tmp_path, monkeypatch, capfd):
    """Data is checked before a comparison writes anything (it used to fail in its first run, inside the
    output folder)."""
    monkeypatch.setenv("EMBTIE_DATA", str(tmp_path / "nowhere"))
    c = Case(lambda tmp: ["compare", "ptb-gpt-tiny", "--strategies", "tied", "--seeds", "1"], ("EMBTIE_DATA=",))
    check_refused(c, tmp_path, monkeypatch, capfd)


# ---------------------------------------------------------------------------- command-line arguments


def compare(*argv: str) -> Callable[[Path], list[Any]]:
    return lambda tmp: ["compare", "ptb-gpt-tiny", "--strategies", "tied", *argv]


ARGUMENT_CASES = [
    case("compare-seeds-zero", compare("--seeds", "0"), "--seeds 0 must be >= 1"),
    case("compare-seeds-negative", compare("--seeds", "-2"), "--seeds -2 must be >= 1"),
    case("compare-seeds-not-a-number", compare("--seeds", "two"), "--seeds 'two' must be an integer >= 1"),
    case("compare-seeds-fraction", compare("--seeds", "2.5"), "--seeds '2.5' must be an integer >= 1"),
    case("compare-jobs-zero", compare("--jobs", "0"), "--jobs 0 must be >= 1"),
    case("compare-out-empty", compare("--out", ""), "--out '' is empty"),
    case("compare-first-seed-negative", compare("--first-seed", "-1"), "--first-seed -1 must be >= 0"),
    case("compare-max-seeds-below-two", compare("--max-seeds", "1"), "--max-seeds 1 must be >= 2"),
    case(
        "compare-max-seeds-below-seeds",
        compare("--until-decided", "--seeds", "4", "--max-seeds", "3"),
        "--max-seeds 3 must be >= --seeds 4",
    ),
    case("compare-until-decided-one-seed", compare("--until-decided", "--seeds", "1"), "--seeds 1 must be >= 2"),
    case("compare-seeds-per-round-zero", compare("--seeds-per-round", "0"), "--seeds-per-round 0 must be >= 1"),
    case("train-out-empty", lambda tmp: ["train", "ptb-gpt-tiny", "--out", ""], "--out '' is empty"),
    case("analyze-batches-zero", lambda tmp: ["analyze", tmp, "--batches", "0"], "--batches 0 must be >= 1"),
    case("analyze-run-dir-empty", lambda tmp: ["analyze", ""], "RUN_DIR '' is empty"),
    case("average-last-zero", lambda tmp: ["average", tmp, "--last", "0"], "--last 0 must be >= 1"),
    case("theory-vocab-one", lambda tmp: ["theory", "--vocab", "1"], "--vocab 1 must be >= 2"),
    case("theory-dim-zero", lambda tmp: ["theory", "--dim", "0"], "--dim 0 must be >= 1"),
    case("theory-seed-negative", lambda tmp: ["theory", "--seed", "-1"], "--seed -1 must be >= 0"),
    case("eval-lenpen-negative", lambda tmp: ["eval", tmp, "--lenpen", "-1"], "--lenpen -1.0 must be >= 0"),
    case("eval-beam-fraction", lambda tmp: ["eval", tmp, "--beam", "1.5"], "--beam '1.5' must be an integer >= 1"),
    case("eval-test-file-empty", lambda tmp: ["eval", tmp, "--test-file", ""], "--test-file '' is empty"),
    case("translate-lenpen-infinite", lambda tmp: ["translate", tmp, "--lenpen", "inf"], "--lenpen inf", "finite"),
    case("hf-compare-steps-zero", lambda tmp: ["hf-compare", "c.json", "--steps", "0"], "--steps 0 must be >= 1"),
    case("hf-compare-lr-zero", lambda tmp: ["hf-compare", "c.json", "--lr", "0"], "--lr 0.0 must be > 0"),
    case("hf-compare-dataset", lambda tmp: ["hf-compare", "c.json", "--dataset", "ptbb"], "did you mean 'ptb'"),
    case("hf-compare-out-empty", lambda tmp: ["hf-compare", "c.json", "--out", " "], "--out ' ' is empty"),
    case(
        "prepare-captions-batch-size-zero",
        lambda tmp: ["prepare-captions", "--batch-size", "0"],
        "--batch-size 0 must be >= 1",
    ),
    case("export-out-empty", lambda tmp: ["export", tmp, ""], "OUT '' is empty"),
    case("config-unknown-task", lambda tmp: ["config", "--task", "mt"], "--task 'mt' is not a task"),
]


@pytest.mark.parametrize("c", ARGUMENT_CASES)
def test_argument(c, tmp_path, monkeypatch, capfd):
    line = check_refused(c, tmp_path, monkeypatch, capfd)
    assert "invalid choice" in line or "argument " not in line, line  # our checks name the flag once


def test_numbers_on_the_command_line_parse_alike():
    """1E1 and 1_0 are the integer 10 for --seeds, as they are in a config."""
    from embtie.commands.common import number_arg

    read = number_arg(int, "--seeds", ge=1)
    assert read("1E1") == read("1_0") == read("10") == 10
    assert number_arg(float, "--lr", gt=0)(".5") == 0.5


def test_a_key_given_twice_is_a_note_and_the_last_value_is_used(capfd):
    """Scripts build commands by appending overrides, so a key given twice with different values is not
    refused; one note on stderr names the key, both values and the one used, and the plan uses it."""
    import json

    capfd.readouterr()
    assert main(["plan", "ptb-gpt-tiny", "model.dim=32", "model.dim=64", "--hardware", "cpu:1", "--json"]) == 0
    out, err = capfd.readouterr()
    assert "note: model.dim is given 2 times (32, then 64); the last, 64, is used" in err
    assert json.loads(out)["strategies"][0]["params"]["dim"] == 64
    assert main(["plan", "ptb-gpt-tiny", "model.dim=64", "model.dim=64", "--hardware", "cpu:1", "--json"]) == 0
    assert "given 2 times" not in capfd.readouterr().err  # the same value twice says nothing


# ---------------------------------------------------------------------------- Python API


def _api(fn: Callable[[], Any], *expect: str) -> Any:
    return pytest.param(fn, expect)


def _train_config(**kw: Any) -> Any:
    from embtie.config import TrainConfig

    return TrainConfig(**kw)


def _lm_data(**kw: Any) -> Any:
    from embtie.tasks.lm.config import LMDataConfig

    return LMDataConfig(**kw)


def _mt_data(**kw: Any) -> Any:
    from embtie.tasks.translation.config import MTDataConfig

    return MTDataConfig(**kw)


def _gpt(**kw: Any) -> Any:
    from embtie.models.gpt import GPTConfig

    return GPTConfig(**kw)


def _param_groups(**kw: Any) -> Any:
    from torch import nn

    from embtie.loop import param_groups

    return param_groups(nn.Linear(2, 2), **kw)


def _table(**kw: Any) -> Any:
    from embtie.training.table_settings import TableSettings

    return TableSettings(**kw)


def _build(name: str, **options: Any) -> Any:
    from embtie import sharing

    return sharing.build(name, vocab_size=10, dim=8, **options)


API_CASES = [
    _api(lambda: _train_config(lr=0), "train.lr=0 must be in (0, 100]"),
    _api(lambda: _train_config(epochs=None, max_steps=None), "set at least one"),
    _api(lambda: _train_config(keep_checkpoints="1e0x"), "train.keep_checkpoints='1e0x' must be an integer >= 1"),
    _api(lambda: _lm_data(valid_tokens=-5), "data.valid_tokens=-5 must be >= 2"),
    _api(lambda: _lm_data(train_tokens=0), "data.train_tokens=0 must be >= 2"),
    _api(lambda: _mt_data(vocab_size=3), "data.vocab_size=3 must be in [8, 2147483647]"),
    _api(lambda: _gpt(dim=0), "model.dim=0 must be >= 1"),
    _api(lambda: _build("tied", z_loss="-1e-4"), "option z_loss=-0.0001 must be >= 0"),
    _api(lambda: _build("tied-gradscale", input_grad_scale=float("inf")), "option input_grad_scale=inf", "finite"),
    _api(lambda: _build("tie-untie", untie_at="2"), "option untie_at=2.0 must be in [0, 1]"),
    _api(lambda: _build("ngpt", scale_init=0), "option scale_init=0 must be > 0"),
    _api(lambda: _build("adaptive", div_factor=0.5), "option div_factor=0.5 must be >= 1"),
    _api(lambda: _param_groups(weight_decay="0.1"), "param_groups(weight_decay)='0.1' is text", "a number >= 0"),
    _api(lambda: _param_groups(lr="6e-4"), "param_groups(lr)='6e-4' is text: it must be a number in (0, 100]"),
    _api(lambda: _table(betas=("0.9", 0.95)), "TableSettings.betas=['0.9', 0.95] holds text", "list of 2 numbers"),
]


def test_param_groups_takes_numbers_it_is_given_as_numbers():
    assert [g["lr"] for g in _param_groups(weight_decay=0.1, lr=6e-4)] == [6e-4, 6e-4]


@pytest.mark.parametrize(("fn", "expect"), API_CASES)
def test_python_api(fn, expect):
    with pytest.raises(ConfigError) as e:
        fn()
    for s in expect:
        assert s in str(e.value), f"{s!r} not in {str(e.value)!r}"
    assert "\n" not in str(e.value)


def test_catalogue_size():
    ids = [p.id for p in CONFIG_CASES + ARGUMENT_CASES]
    assert len(ids) == len(set(ids))
    assert len(CONFIG_CASES) >= 20 and len(ARGUMENT_CASES) >= 25 and len(API_CASES) >= 10


def test_subword_training_names_the_key_and_its_range(tmp_path):
    """The check before training (``check_vocab_size``) and SentencePiece agree on the smallest size; the
    trainer's own refusal is a one-line DataError too (the Python API trains without the command's check)."""
    from embtie.data.subwords import required_vocab_size, train_subwords
    from embtie.errors import DataError

    texts = ["ein Hund läuft über die Wiese", "zwei Männer spielen Fußball", "a dog runs"] * 20
    need = required_vocab_size(texts)
    assert train_subwords(texts, need, cache_dir=tmp_path).is_file()
    with pytest.raises(DataError, match=rf"^data.vocab_size={need - 1} must be in \[{need}, 2147483647\]"):
        train_subwords(texts, need - 1, cache_dir=tmp_path)


def test_a_training_line_sentencepiece_skips_is_noted_with_its_share(tmp_path, capfd):
    """SentencePiece skips training lines over 4,192 bytes: some skipped is one note naming how many and their
    share of the bytes (the subwords are learned from the rest); none skipped says nothing."""
    from embtie.data.subwords import SPM_MAX_SENTENCE, long_lines, train_subwords

    short = ["ein Hund läuft über die Wiese", "zwei Männer spielen Fußball", "a dog runs"] * 20
    long = " ".join(["the cat sat on the mat"] * 400)
    assert len(long.encode()) > SPM_MAX_SENTENCE
    n, skipped, total = long_lines([*short, long])
    assert (n, skipped) == (1, len(long.encode())) and total == skipped + sum(len(t.encode()) for t in short)
    capfd.readouterr()
    train_subwords([*short, long], 60, cache_dir=tmp_path)
    err = capfd.readouterr().err
    assert f"note: 1 line(s) of the training text ({skipped / total:.0%} of its bytes) are longer than 4,192" in err
    train_subwords(short, 60, cache_dir=tmp_path)
    assert "longer than" not in capfd.readouterr().err
