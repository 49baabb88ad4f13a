"""The bad-input catalogue: the ways a user can get an input wrong in the first hour,
and what embtie does about each.

Command line: exit status != 0, exactly one non-empty line on stderr that names the problem (the bad
key, file or value) and no traceback; nothing the user had is changed (every file under the test's
folder, a copied run directory included, hashes the same before and after, and nothing is created).
Python API: a specific exception type whose message names the problem.

The cases are tables (``CONFIG_CASES``, ``DATA_CASES``, ``RUN_CASES``, ``READ_ONLY_CASES``, ``CLI_CASES``,
``API_CASES``; and for one writer per run, results that cannot go stale or carry the wrong name, weights
that are not finite or do not fit, the strategies' own inputs: ``LOCK_CASES``, ``NONFINITE_CASES``,
``MISMATCH_CASES``, ``API_BOUNDARY_CASES``, and the cases that succeed with one line, ``NOTE_CASES`` on
stderr and ``NAME_CASES`` on stdout), so the size of the catalogue is visible and counted
(``test_catalogue_size``); a few
inputs that are not errors but easy to get wrong (blank lines to translate, a damaged newest checkpoint
with a good older one, a damaged state.json on eval, NaN in h or no kept token, an unlabelled HF
micro-batch) have tests of their own. CLI cases run in-process (``embtie.cli.main``);
only the closed pipe needs a subprocess. Read-only folders are made with chmod; as root, the capability
to ignore file permissions is dropped for the call. Runs are the smallest possible: one 2-step GPT and
one 1-step translation model per module, copied into each case's folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import io
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file, save_file

import lock_holders
from embtie import sharing
from embtie.cli import main
from embtie.errors import ConfigError, DataError
from embtie.rundir import lock
from embtie.sharing.inputs import InputTypeError, InputValueError

DATA = Path(os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared" / "data")))

TINY_LM = [
    "model.dim=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.max_len=16",
    "data.bptt=16",
    "data.batch_size=4",
    "data.eval_batch_size=4",
    "data.valid_tokens=500",
    "train.max_steps=2",
    "train.warmup_steps=0",
    "train.checkpoint_every=1",
    "train.keep_checkpoints=2",
    "train.progress=false",
    "train.threads=1",
]

TINY_MT = {
    "task": "translation",
    "data": {"dataset": "multi30k", "vocab_size": 100, "train_pairs": 200, "max_tokens": 600, "beam": 1},
    "model": {
        "name": "transformer",
        "dim": 16,
        "enc_layers": 1,
        "dec_layers": 1,
        "heads": 2,
        "ffn_dim": 16,
        "dropout": 0.0,
        "max_positions": 1024,
    },
    "sharing": {"name": "tied"},
    "train": {"epochs": None, "max_steps": 1, "eval_batches": 1, "log_every": 1, "progress": False, "threads": 1},
}


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory) -> Path:
    """A finished 2-step GPT run with two checkpoints (step-00000001, step-00000002)."""
    out = tmp_path_factory.mktemp("lm") / "run"
    assert main(["train", "ptb-gpt-tiny", *TINY_LM, "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def mt_run(tmp_path_factory) -> Path:
    """A finished 1-step translation run (Multi30k De->En, 100 joint subwords)."""
    from embtie.config import config_from_dict
    from embtie.training import train

    out = tmp_path_factory.mktemp("mt") / "run"
    train(config_from_dict(TINY_MT), out)
    return out


# ---------------------------------------------------------------------------- the harness


def snapshot(root: Path) -> dict[str, str]:
    """Every file (sha256), folder and link under ``root``."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        if p.is_symlink():
            out[rel] = f"link -> {os.readlink(p)}"
        elif p.is_dir():
            out[rel + "/"] = "dir"
        else:
            out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def assert_one_line_error(code: int, err: str, expect: tuple[str, ...]) -> str:
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{err}"
    line = lines[0]
    assert code != 0, f"exit status 0 with {line!r}"
    assert line.startswith("embtie"), line
    for s in expect:
        assert s in line, f"{s!r} not in {line!r}"
    return line


class Ctx:
    """What a case's setup works with: its folder, the environment, copies of the trained runs; ``vars``
    fills placeholders of the expected strings (``{holder}``: the pid of a process holding a lock)."""

    def __init__(self, tmp: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
        self.tmp, self.mp, self.request = tmp, monkeypatch, request
        self.stdin: bytes | None = None
        self.vars: dict[str, str] = {}

    def hold(self, folder: Path, info: dict[str, Any] | str | None = None) -> None:
        """A process holding the writer lock of ``folder`` for the rest of the case (``lock_holders.hold``)."""
        p = lock_holders.hold(folder, info)
        self.request.addfinalizer(lambda: lock_holders.stop(p))
        self.vars["holder"] = str(p.pid)

    def write(self, name: str, content: str | bytes) -> Path:
        p = self.tmp / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
        return p

    def run(self, kind: str = "lm", *, checkpoints: int = 1, finished: bool = True) -> Path:
        """A copy of a trained run at tmp/run, keeping the newest ``checkpoints`` checkpoints; an unfinished
        one has no summary.json (as after a kill), so `embtie train` resumes it from its checkpoint."""
        src = self.request.getfixturevalue(f"{kind}_run")
        run = self.tmp / "run"
        shutil.copytree(src, run)
        steps = sorted((run / "checkpoints").glob("step-*"))
        for old in steps[: max(0, len(steps) - checkpoints)]:
            shutil.rmtree(old)
        if not finished:
            (run / "summary.json").unlink()
        return run

    def newest(self, run: Path) -> Path:
        return sorted((run / "checkpoints").glob("step-*"))[-1]

    def data(self, changes: dict[str, Callable[[bytes], bytes]]) -> Path:
        """A copy of the data root (links to the real files) with the files in ``changes`` rewritten."""
        root = self.tmp / "data"
        for sub in ("ptb", "multi30k/raw"):
            (root / sub).mkdir(parents=True)
            for f in (DATA / sub).iterdir():
                rel = f"{sub}/{f.name}"
                if rel in changes:
                    (root / rel).write_bytes(changes[rel](f.read_bytes()))
                else:
                    (root / rel).symlink_to(f)
        self.mp.setenv("EMBTIE_DATA", str(root))
        return root

    def train_argv(self, out: Path, *more: str) -> list[Any]:
        return ["train", "ptb-gpt-tiny", *TINY_LM, *more, "--out", out]


def run_cli(argv: list[Any], ctx: Ctx) -> int:
    if ctx.stdin is not None:
        ctx.mp.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(ctx.stdin), encoding="utf-8"))
    try:
        return main([str(a) for a in argv])
    except SystemExit as e:  # argparse
        return e.code if isinstance(e.code, int) else 1


@dataclass(frozen=True)
class Case:
    """One bad input on the command line: ``setup(ctx)`` makes the files and returns the argv;
    the one stderr line must contain every string of ``expect``. ``changes``: paths (prefixes, relative to
    the case's folder) that the command may create or change, e.g. the folder of a run that failed at its
    first step (nothing else may change)."""

    id: str
    setup: Callable[[Ctx], list[Any]]
    expect: tuple[str, ...] = field(default=())
    changes: tuple[str, ...] = field(default=())


def case(id: str, setup: Callable[[Ctx], list[Any]], *expect: str, changes: tuple[str, ...] = ()) -> Any:
    return pytest.param(Case(id, setup, expect, changes), id=id)


def check_cli_case(c: Case, tmp_path, monkeypatch, request, capfd) -> str:
    ctx = Ctx(tmp_path, monkeypatch, request)
    argv = c.setup(ctx)
    capfd.readouterr()  # whatever training a fixture run printed
    before = snapshot(tmp_path)
    code = run_cli(argv, ctx)
    _, err = capfd.readouterr()
    line = assert_one_line_error(code, err, tuple(s.format(**ctx.vars) for s in c.expect) if ctx.vars else c.expect)
    after = snapshot(tmp_path)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    assert all(k.startswith(c.changes) for k in changed) if c.changes else not changed, (
        f"the command changed the user's files: {changed}"
    )
    return line


# ---------------------------------------------------------------------------- configs


def cfg_case(id: str, overrides: list[str], *expect: str, spec: str = "ptb-gpt-tiny") -> Any:
    return case(id, lambda c: ["train", spec, *overrides, "--out", c.tmp / "out"], *expect)


def yaml_case(id: str, content: str | bytes, *expect: str, name: str = "my.yaml") -> Any:
    return case(id, lambda c: ["train", c.write(name, content), "--out", c.tmp / "out"], name, *expect)


def _yaml_folder(c: Ctx) -> list[Any]:
    (c.tmp / "cfg.yaml").mkdir()
    return ["train", c.tmp / "cfg.yaml", "--out", c.tmp / "out"]


CONFIG_CASES = [
    cfg_case("unknown-preset", [], "unknown preset 'ptb-gpt-tyni'", "did you mean 'ptb-gpt-tiny'", spec="ptb-gpt-tyni"),
    cfg_case("missing-yaml-file", [], "nosuch.yaml", "does not exist", spec="nosuch.yaml"),
    cfg_case("unknown-top-key", ["trian.lr=0.1"], "unknown key 'trian'", "did you mean 'train'"),
    cfg_case("unknown-train-key", ["train.lr_rate=0.1"], "train.lr_rate", "valid keys"),
    cfg_case("unknown-model-key", ["model.n_layer=1"], "model.n_layer", "did you mean 'n_layers'"),
    cfg_case("unknown-data-key", ["data.bpt=8"], "data.bpt", "did you mean 'bptt'"),
    cfg_case("unknown-strategy", ["sharing.name=l2norn"], "unknown strategy 'l2norn'", "did you mean 'l2norm'"),
    cfg_case("unknown-strategy-option", ["sharing.options.biass=true"], "sharing.options.biass", "did you mean 'bias'"),
    cfg_case("option-of-another-strategy", ["sharing.options.target_dim=8"], "target_dim", "'tied'"),
    cfg_case("bad-strategy-option-value", ["sharing.options.logit_scale=banana"], "logit_scale='banana'"),
    cfg_case("negative-strategy-option", ["sharing.options.softcap=-3"], "softcap=-3", "> 0"),
    cfg_case("unknown-model", ["model.name=gtp"], "unknown model 'gtp'"),
    cfg_case("unknown-task", ["task=lmm"], "unknown task 'lmm'", "did you mean 'lm'"),
    cfg_case("unknown-dataset", ["data.dataset=ptb2"], "data.dataset='ptb2'", "ptb"),
    cfg_case("unknown-optimizer", ["train.optimizer=adam"], "train.optimizer='adam'", "adamw"),
    cfg_case("wrong-type-number", ["train.lr=fast"], "train.lr='fast'", "number"),
    cfg_case("wrong-type-integer", ["model.n_layers=two"], "model.n_layers='two'", "integer"),
    cfg_case("wrong-type-bool", ["data.shuffle=maybe"], "data.shuffle='maybe'", "true or false"),
    cfg_case("fractional-integer", ["train.max_steps=2.5"], "train.max_steps=2.5", "integer"),
    cfg_case("wrong-type-list", ["train.betas=0.9"], "train.betas=0.9", "list"),
    cfg_case("zero-dim", ["model.dim=0"], "model.dim=0", ">= 1"),
    cfg_case("zero-layers", ["model.n_layers=0"], "model.n_layers=0", "in [1, 1024]"),
    cfg_case("negative-bptt", ["data.bptt=-1"], "data.bptt=-1", ">= 1"),
    cfg_case("zero-batch-size", ["data.batch_size=0"], "data.batch_size=0", ">= 1"),
    cfg_case("zero-max-steps", ["train.max_steps=0"], "train.max_steps=0", ">= 1"),
    cfg_case("negative-lr", ["train.lr=-0.1"], "train.lr=-0.1", "in (0, 100]"),
    cfg_case("heads-do-not-divide-dim", ["model.n_heads=3"], "model.dim=128", "model.n_heads=3"),
    cfg_case("bptt-over-max-len", ["data.bptt=128"], "data.bptt=128", "model.max_len=64"),
    cfg_case("section-set-to-a-value", ["train=5"], "train must be a mapping"),
    cfg_case("value-used-as-section", ["train.lr.x=1"], "train.lr is a value"),
    cfg_case("override-without-equals", ["train.lr"], "'train.lr'", "key=value"),
    yaml_case("yaml-invalid", "task: lm\nmodel: {name: gpt\n", "not valid YAML", "line"),
    yaml_case("yaml-empty", "", "is empty"),
    yaml_case("yaml-only-comments", "# nothing here\n", "is empty"),
    yaml_case("yaml-list", "- task: lm\n- seed: 0\n", "holds a list", "key: value"),
    yaml_case("yaml-scalar", "ptb-gpt-tiny\n", "holds a string", "mapping"),
    yaml_case("yaml-non-utf8", "task: lm\nseed: 0 # caf\xe9\n".encode("latin-1"), "not UTF-8"),
    yaml_case("yaml-binary", b"\x00\x01\x02task\x00", "binary"),
    yaml_case("yaml-unknown-key", "task: lm\nmodel: {name: gpt}\ntrian: {lr: 0.1}\n", "'trian'"),
    yaml_case("yaml-model-without-name", "task: lm\nmodel: {dim: 8}\n", "model must be a mapping with a name"),
    case("yaml-path-is-a-folder", _yaml_folder, "cfg.yaml", "is a folder"),
]


@pytest.mark.parametrize("c", CONFIG_CASES)
def test_config(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


# ---------------------------------------------------------------------------- data


def _flip_a_word(data: bytes) -> bytes:
    return data.replace(b" the ", b" teh ", 1)


def _truncate(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _latin1(text: str) -> bytes:
    return text.encode("latin-1")


def with_data_root(where: str, argv: Callable[[Ctx], list[Any]]) -> Callable[[Ctx], list[Any]]:
    """EMBTIE_DATA pointing at a folder that does not exist ("nowhere") or is empty ("empty")."""

    def setup(c: Ctx) -> list[Any]:
        args = argv(c)
        if where == "empty":
            (c.tmp / where).mkdir()
        c.mp.setenv("EMBTIE_DATA", str(c.tmp / where))
        return args

    return setup


def with_damaged_data(rel: str, how: Callable[[bytes], bytes], argv: Callable[[Ctx], list[Any]]) -> Any:
    def setup(c: Ctx) -> list[Any]:
        args = argv(c)
        c.data({rel: how})
        return args

    return setup


def train_lm(c: Ctx) -> list[Any]:
    return c.train_argv(c.tmp / "out")


def eval_lm(*more: Any) -> Callable[[Ctx], list[Any]]:
    return lambda c: ["eval", c.run(), *[m(c) if callable(m) else m for m in more]]


def eval_mt(*more: Any) -> Callable[[Ctx], list[Any]]:
    return lambda c: ["eval", c.run("mt"), *[m(c) if callable(m) else m for m in more]]


def translate(stdin: bytes | None, *more: Any, kind: str = "mt") -> Callable[[Ctx], list[Any]]:
    def setup(c: Ctx) -> list[Any]:
        c.stdin = stdin
        return ["translate", c.run(kind), *[m(c) if callable(m) else m for m in more]]

    return setup


def file(name: str, content: str | bytes) -> Callable[[Ctx], Path]:
    return lambda c: c.write(name, content)


def _damaged_subwords(c: Ctx) -> list[Any]:
    (c.run("mt") / "spm.model").write_bytes(b"not a sentencepiece model")
    return ["translate", c.tmp / "run", "--input", c.write("in.de", "Ein Hund.\n")]


DATA_CASES = [
    case("data-root-missing", with_data_root("nowhere", train_lm), "EMBTIE_DATA=", "nowhere", "is not a folder"),
    case("data-root-empty", with_data_root("empty", train_lm), "missing data file", "ptb.train.txt.gz", "EMBTIE_DATA"),
    case(
        "data-corrupted-valid",
        with_damaged_data("ptb/ptb.valid.txt", _flip_a_word, train_lm),
        "corrupted data file",
        "ptb.valid.txt",
        "SOURCE.md",
    ),
    case(
        "data-truncated-train",
        with_damaged_data("ptb/ptb.train.txt.gz", _truncate, train_lm),
        "corrupted data file",
        "ptb.train.txt.gz",
    ),
    case(
        "data-truncated-mt-train",
        with_damaged_data(
            "multi30k/raw/train.en.gz",
            _truncate,
            lambda c: ["train", "multi30k-transformer-small", "--out", c.tmp / "out"],
        ),
        "corrupted data file",
        "train.en.gz",
    ),
    case(
        "eval-with-corrupted-valid",
        with_damaged_data("ptb/ptb.valid.txt", _flip_a_word, eval_lm()),
        "corrupted data file",
        "ptb.valid.txt",
    ),
    case("eval-with-data-root-missing", with_data_root("nowhere", eval_lm()), "EMBTIE_DATA=", "is not a folder"),
    case(
        "test-file-missing",
        eval_lm("--test-file", lambda c: c.tmp / "nosuch.txt"),
        "--test-file",
        "nosuch.txt",
        "does not exist",
    ),
    case("test-file-empty", eval_lm("--test-file", file("empty.txt", "")), "--test-file", "empty.txt", "is empty"),
    case("test-file-blank-lines", eval_lm("--test-file", file("blank.txt", "\n \n\t\n")), "blank.txt", "is empty"),
    case(
        "test-file-binary",
        eval_lm("--test-file", file("model.bin", bytes(range(256)) * 8)),
        "--test-file",
        "model.bin",
        "UTF-8",
    ),
    case("test-file-nul-bytes", eval_lm("--test-file", file("nul.txt", b"a b\x00c\n")), "nul.txt", "binary"),
    case(
        "test-file-latin1",
        eval_lm("--test-file", file("latin1.txt", _latin1("le caf\xe9\n"))),
        "--test-file",
        "latin1.txt",
        "not UTF-8",
        "line 1",
        "iconv",
    ),
    case("test-file-is-a-folder", eval_lm("--test-file", lambda c: c.tmp), "--test-file", "is a folder"),
    case("test-split-not-shipped", eval_lm("--split", "test"), "split 'test'", "--test-file"),
    case(
        "src-ref-different-lengths",
        eval_mt("--src-file", file("s.de", "Ein Hund.\nZwei Katzen.\n"), "--ref-file", file("r.en", "A dog.\n")),
        "s.de",
        "2 lines",
        "r.en",
        "has 1",
        "line-aligned",
    ),
    case("src-file-without-ref", eval_mt("--src-file", file("s.de", "Ein Hund.\n")), "--ref-file"),
    case("ref-file-without-src", eval_mt("--ref-file", file("r.en", "A dog.\n")), "--ref-file", "--src-file"),
    case(
        "ref-file-missing",
        eval_mt("--src-file", file("s.de", "Ein Hund.\n"), "--ref-file", lambda c: c.tmp / "r.en"),
        "--ref-file",
        "r.en",
        "does not exist",
    ),
    case(
        "src-file-latin1",
        eval_mt("--src-file", file("s.de", _latin1("Gr\xfc\xdfe\n")), "--ref-file", file("r.en", "Hello\n")),
        "--src-file",
        "s.de",
        "not UTF-8",
    ),
    case("test-file-on-translation-run", eval_mt("--test-file", file("t.txt", "a b\n")), "--src-file", "--test-file"),
    case(
        "src-file-on-lm-run",
        eval_lm("--src-file", file("s.de", "a\n"), "--ref-file", file("r.en", "b\n")),
        "'lm' run",
        "--test-file",
    ),
    case("translate-empty-stdin", translate(b""), "stdin is empty", "--input"),
    case("translate-non-utf8-stdin", translate(_latin1("Gr\xfc\xdfe\n")), "stdin", "not UTF-8", "line 1"),
    case("translate-empty-input-file", translate(None, "--input", file("in.de", "")), "--input", "in.de", "is empty"),
    case("translate-lm-run", translate(b"a b\n", kind="lm"), "'lm' run", "not a translation run"),
    case("translate-beam-zero", translate(b"Hund\n", "--beam", "0"), "--beam", "must be >= 1"),
    case("mt-subword-model-damaged", _damaged_subwords, "spm.model", "damaged"),
]


@pytest.mark.parametrize("c", DATA_CASES)
def test_data(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


def test_empty_lines_translate_to_empty_lines(tmp_path, monkeypatch, request, capfd):
    """Not an error: blank lines among the input come out as blank lines, so outputs stay line-aligned."""
    ctx = Ctx(tmp_path, monkeypatch, request)
    run = ctx.run("mt")
    ctx.stdin = "Ein Hund läuft.\n\n   \nZwei Männer.\n".encode()
    capfd.readouterr()
    assert run_cli(["translate", run], ctx) == 0
    out, err = capfd.readouterr()
    lines = out.split("\n")[:-1]
    assert len(lines) == 4 and lines[1] == lines[2] == "" and "Traceback" not in err


# ---------------------------------------------------------------------------- run directories, checkpoints


def _damage(name: str, how: str, *, finished: bool = True) -> Callable[[Ctx], Path]:
    """A run copy whose newest (and only) checkpoint has ``name`` truncated, emptied or replaced by garbage."""

    def setup(c: Ctx) -> Path:
        run = c.run(finished=finished)
        f = c.newest(run) / name
        data = f.read_bytes()
        f.write_bytes({"truncated": data[: len(data) // 2], "zero-byte": b"", "garbage": os.urandom(len(data))}[how])
        return run

    return setup


def eval_damaged(name: str, how: str) -> Any:
    return case(f"eval-{name}-{how}", lambda c: ["eval", _damage(name, how)(c)], name, "step-00000002")


def resume_damaged(name: str, how: str) -> Any:
    setup = _damage(name, how, finished=False)
    return case(f"resume-{name}-{how}", lambda c: c.train_argv(setup(c)), name, "step-00000002")


def run_with(rel: str, content: str, *argv: str, finished: bool = True) -> Callable[[Ctx], list[Any]]:
    """A run copy with file ``rel`` replaced by ``content``; then `embtie eval` (or `train`: resume) on it."""

    def setup(c: Ctx) -> list[Any]:
        run = c.run(finished=finished)
        (run / rel).write_text(content, encoding="utf-8")
        return c.train_argv(run) if argv == ("train",) else [*argv, run]

    return setup


def _empty_folder(c: Ctx) -> list[Any]:
    (c.tmp / "d").mkdir()
    return ["eval", c.tmp / "d"]


def _no_checkpoint(c: Ctx) -> list[Any]:
    shutil.rmtree(c.run() / "checkpoints")
    return ["eval", c.tmp / "run"]


RUN_CASES = [
    case("eval-missing-folder", lambda c: ["eval", c.tmp / "nosuch"], "nosuch", "not a run directory"),
    case("eval-not-a-run-dir", _empty_folder, "not a run directory", "embtie train"),
    case("eval-a-file", lambda c: ["eval", c.write("notes.txt", "x")], "notes.txt", "not a run directory"),
    case("eval-no-checkpoint", _no_checkpoint, "no checkpoint"),
    case("eval-unknown-checkpoint-name", eval_lm("--checkpoint", "avg-last9"), "avg-last9", "step-00000002"),
    eval_damaged("model.safetensors", "truncated"),
    eval_damaged("model.safetensors", "zero-byte"),
    eval_damaged("model.safetensors", "garbage"),
    case("eval-vocab-json-damaged", run_with("vocab.json", '{"itos": [', "eval"), "vocab.json", "damaged"),
    case("eval-config-yaml-damaged", run_with("config.yaml", "task: [lm\n", "eval"), "config.yaml", "not valid YAML"),
    case(
        "eval-config-yaml-unknown-key",
        run_with("config.yaml", "task: lm\nmodel: {name: gpt}\nfoo: 1\n", "eval"),
        "config.yaml",
        "'foo'",
    ),
    case("eval-eval-json-damaged", run_with("eval.json", "{", "eval"), "eval.json", "move it away"),
    case("eval-device-not-there", eval_lm("--device", "cuda:99"), "--device", "cuda:99"),
    case("eval-device-unknown", eval_lm("--device", "gpu"), "--device", "'gpu'"),
    resume_damaged("model.safetensors", "truncated"),
    resume_damaged("model.safetensors", "zero-byte"),
    resume_damaged("model.safetensors", "garbage"),
    resume_damaged("state.json", "truncated"),
    resume_damaged("state.json", "zero-byte"),
    resume_damaged("state.json", "garbage"),
    resume_damaged("optim.safetensors", "garbage"),
    case(
        "resume-changed-config",
        lambda c: c.train_argv(c.run(finished=False), "train.lr=0.5"),
        "another config",
        "train.lr",
        "--out",
    ),
    case(
        "resume-config-yaml-damaged",
        run_with("config.yaml", ":\n- [", "train", finished=False),
        "config.yaml",
        "not valid YAML",
    ),
    case(
        "train-out-is-a-file", lambda c: c.train_argv(c.write("out.txt", "my notes")), "--out", "out.txt", "is a file"
    ),
    case(
        "train-out-under-a-file",
        lambda c: c.train_argv(c.write("out.txt", "my notes") / "run"),
        "--out",
        "out.txt",
        "is a file",
    ),
]


@pytest.mark.parametrize("c", RUN_CASES)
def test_run_directory(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


@pytest.mark.parametrize("how", ["truncated", "zero-byte", "garbage"])
def test_eval_needs_only_the_weights(how, tmp_path, monkeypatch, request, capfd):
    """Not an error: `embtie eval` reads only model.safetensors, so a damaged state.json (which resuming
    needs: see resume-state.json-*) does not stop it, and nothing but eval.json is written."""
    ctx = Ctx(tmp_path, monkeypatch, request)
    run = _damage("state.json", how)(ctx)
    before = snapshot(tmp_path)
    capfd.readouterr()
    assert run_cli(["eval", run], ctx) == 0
    out, err = capfd.readouterr()
    assert out.startswith("valid ppl") and err.strip() == "", err
    after = snapshot(tmp_path)
    assert set(after) - set(before) == {"run/eval.json"} and all(after[k] == v for k, v in before.items())


def test_resume_falls_back_to_the_previous_good_checkpoint(tmp_path, monkeypatch, request, capfd):
    """Not an error: a damaged newest checkpoint with a good one before it is a one-line warning, and the
    run resumes from the good one and finishes."""
    ctx = Ctx(tmp_path, monkeypatch, request)
    run = ctx.run(checkpoints=2, finished=False)
    f = run / "checkpoints" / "step-00000002" / "model.safetensors"
    f.write_bytes(f.read_bytes()[:100])
    capfd.readouterr()
    assert run_cli(ctx.train_argv(run), ctx) == 0
    _, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "warning" in lines[0] and "model.safetensors" in lines[0] and "step-00000001" in lines[0]
    assert (run / "summary.json").is_file()


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


@contextlib.contextmanager
def _permissions_apply_to_root():
    """As root, drop CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH from this thread's effective capabilities for
    the duration, so that file permissions apply (a read-only folder is read-only); restored after."""
    if os.geteuid() != 0:
        yield
        return
    libc = ctypes.CDLL(None, use_errno=True)
    hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()  # _LINUX_CAPABILITY_VERSION_3
    if libc.capget(ctypes.byref(hdr), data) != 0:
        pytest.skip("cannot read this process's capabilities")
    saved = data[0].effective
    data[0].effective &= ~((1 << 1) | (1 << 2))  # CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH
    if libc.capset(ctypes.byref(hdr), data) != 0:
        pytest.skip("cannot drop CAP_DAC_OVERRIDE: root writes anywhere here")
    try:
        yield
    finally:
        data[0].effective = saved
        assert libc.capset(ctypes.byref(hdr), data) == 0


def _read_only(paths: list[Path], on: bool) -> None:
    for p in paths:
        mode = p.stat().st_mode
        p.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) if on else mode | stat.S_IWUSR)


READ_ONLY_CASES = [
    pytest.param(
        lambda ro: ["train", "ptb-gpt-tiny", *TINY_LM, "--out", ro / "new"],
        ("--out", "not writable"),
        id="train-out-in-read-only-folder",
    ),
    pytest.param(lambda ro: ["eval", ro / "run"], ("eval.json", "cannot write"), id="eval-read-only-run"),
    pytest.param(
        lambda ro: ["train", "ptb-gpt-tiny", *TINY_LM, "--out", ro / "run"],
        ("Permission denied", "run"),
        id="resume-read-only-run",
    ),
]


def test_a_read_only_cache_names_embtie_cache(tmp_path, capfd, monkeypatch):
    """Issue 54, class 8: a subword model the cache cannot take said "Permission denied: .../subwords; check its
    permissions", never naming the setting that chose the folder."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("EMBTIE_CACHE", str(cache))
    argv = ["train", "ptb-gpt-tiny", *TINY_LM, "data.tokenizer=bpe", "data.vocab_size=200", "--out", tmp_path / "r"]
    capfd.readouterr()
    _read_only([cache], True)
    try:
        with _permissions_apply_to_root():
            code = main([str(a) for a in argv])
    finally:
        _read_only([cache], False)
    line = assert_one_line_error(code, capfd.readouterr()[1], ("Permission denied", "EMBTIE_CACHE"))
    assert f"it is embtie's cache {cache}, set by EMBTIE_CACHE: point EMBTIE_CACHE at a folder" in line, line


@pytest.mark.parametrize(("argv", "expect"), READ_ONLY_CASES)
def test_read_only(argv, expect, lm_run, tmp_path, capfd):
    """A folder the user cannot write to (as root too: the capability to ignore permissions is dropped)."""
    ro = tmp_path / "ro"
    shutil.copytree(lm_run, ro / "run")
    (ro / "run" / "summary.json").unlink()  # unfinished, so that `train` has to write to resume it
    paths = [ro, *ro.rglob("*")]
    before = snapshot(tmp_path)
    capfd.readouterr()
    _read_only(paths, True)
    try:
        with _permissions_apply_to_root():
            try:
                code = main([str(a) for a in argv(ro)])
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else 1
    finally:
        _read_only(paths, False)
    assert_one_line_error(code, capfd.readouterr()[1], expect)
    assert snapshot(tmp_path) == before


# ---------------------------------------------------------------------------- the command line itself


CLI_CASES = [
    case("no-arguments", lambda c: [], "no command given", "train"),
    case("unknown-subcommand", lambda c: ["trian"], "invalid choice: 'trian'", "did you mean 'train'"),
    case("unknown-option", lambda c: ["strategies", "--colour"], "unrecognized arguments: --colour"),
    case("missing-required-option", lambda c: ["train", "ptb-gpt-tiny"], "--out"),
    case("missing-run-dir", lambda c: ["eval"], "RUN_DIR"),
    case("not-a-number", lambda c: ["eval", c.tmp, "--beam", "five"], "--beam", "'five'"),
    case("bad-choice", lambda c: ["eval", c.tmp, "--split", "tset"], "--split", "did you mean 'test'"),
]


@pytest.mark.parametrize("c", CLI_CASES)
def test_command_line(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


def test_debug_shows_the_traceback(tmp_path):
    """--debug (before or after the subcommand) re-raises the error instead of printing one line."""
    for argv in (["--debug", "eval", str(tmp_path)], ["eval", str(tmp_path), "--debug"]):
        with pytest.raises(ConfigError, match="not a run directory"):
            main(argv)


def test_output_into_a_closed_pipe_is_quiet(tmp_path):
    """`embtie strategies --options | head -1`: the reader is gone before embtie writes; no traceback, no
    'Exception ignored' message."""
    p = subprocess.Popen(
        [sys.executable, "-m", "embtie", "strategies", "--options"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=tmp_path,
    )
    p.stdout.close()  # type: ignore[union-attr]
    err = p.stderr.read().decode()  # type: ignore[union-attr]
    code = p.wait(timeout=120)
    assert err.strip() == "", err
    assert code != 0


# ---------------------------------------------------------------------------- Python API


def _strategy(name: str = "tied", **options: Any) -> sharing.SharingStrategy:
    torch.manual_seed(0)
    return sharing.build(name, vocab_size=10, dim=8, **options)


def _loss(targets: Any, h: Any = None, **kw: Any) -> Any:
    s = _strategy()
    t = torch.as_tensor(targets)
    return lambda _: s.loss(torch.randn(*t.shape, 8) if h is None else h, t, **kw)


def _hf(fn: Callable[[Any, Path], Any]) -> Callable[[Path], Any]:
    def call(tmp: Path) -> Any:
        pytest.importorskip("transformers")
        import embtie.hf
        from embtie.hf.tiny import tiny_model

        return fn(embtie.hf, tmp, tiny_model)

    return call


def _hf_plain_dir(eh, tmp: Path, tiny_model) -> Any:
    tiny_model("gpt2", 40).save_pretrained(tmp / "plain")
    return eh.load(tmp / "plain")


def _hf_damaged_weights(eh, tmp: Path, tiny_model) -> Any:
    eh.apply(tiny_model("gpt2", 40), "tied").save_pretrained(tmp / "saved")
    (tmp / "saved" / "model.safetensors").write_bytes(b"\x00" * 64)
    return eh.load(tmp / "saved")


def _hf_base_model(eh, tmp: Path, tiny_model) -> Any:
    import transformers

    return eh.apply(transformers.GPT2Model(transformers.GPT2Config(n_embd=16, n_layer=1, n_head=2)), "tied")


def _hf_unsupported_family(eh, tmp: Path, tiny_model) -> Any:
    import transformers

    cfg = transformers.BertConfig(
        vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    return eh.apply(transformers.BertForMaskedLM(cfg), "tied")


def api(id: str, fn: Callable[[Path], Any], exc: type[BaseException], *expect: str) -> Any:
    return pytest.param(fn, exc, expect, id=id)


API_CASES = [
    api(
        "build-unknown-name", lambda _: sharing.build("l2norn", vocab_size=10, dim=8), ConfigError, "'l2norn'", "l2norm"
    ),
    api("build-vocab-size-zero", lambda _: sharing.build("tied", vocab_size=0, dim=8), ConfigError, "vocab_size=0"),
    api("build-dim-negative", lambda _: sharing.build("tied", vocab_size=10, dim=-4), ConfigError, "dim=-4"),
    api(
        "build-vocab-size-float",
        lambda _: sharing.build("tied", vocab_size=10.0, dim=8),
        ConfigError,
        "vocab_size=10.0",
    ),
    api("build-unknown-option", lambda _: _strategy(biass=True), ConfigError, "'biass'", "did you mean 'bias'"),
    api("build-bad-option-value", lambda _: _strategy(logit_scale="banana"), ConfigError, "logit_scale='banana'"),
    api(
        "build-option-conflict",
        lambda _: _strategy(init_std=0.1, init_range=0.1),
        ConfigError,
        "init_std",
        "init_range",
    ),
    api("loss-target-too-large", _loss([[1, 10, 2]]), DataError, "target id 10", "[0, 10)"),
    api("loss-target-too-large-chunked", _loss([[1, 10, 2]], impl="chunked"), DataError, "target id 10"),
    api("loss-target-negative", _loss([[1, -5, 2]]), DataError, "target id -5", "ignore_index=-100"),
    api("loss-float-targets", _loss([[1.0, 2.0]]), TypeError, "targets", "torch.float32"),
    api("loss-shape-mismatch", _loss([[1, 2, 3, 4]], h=torch.randn(1, 5, 8)), ValueError, "(1, 5, 8)", "(1, 4)"),
    api("loss-wrong-width", _loss([[1, 2]], h=torch.randn(1, 2, 7)), ValueError, "(1, 2, 7)", "dim=8"),
    api("logits-wrong-width", lambda _: _strategy().logits(torch.randn(3, 9)), ValueError, "(3, 9)", "dim=8"),
    api("loss-zero-tokens", _loss(torch.zeros(0, dtype=torch.long), h=torch.randn(0, 8)), ValueError, "no tokens"),
    api("loss-unknown-impl", _loss([[1, 2]], impl="fast"), ConfigError, "impl='fast'", "chunked"),
    api("loss-label-smoothing-out-of-range", _loss([[1, 2]], label_smoothing=1.5), ConfigError, "label_smoothing=1.5"),
    api(
        "embed-id-out-of-range", lambda _: _strategy().embed(torch.tensor([3, 10])), DataError, "token id 10", "[0, 10)"
    ),
    api("embed-float-ids", lambda _: _strategy().embed(torch.tensor([1.0])), TypeError, "token ids", "float32"),
    api(
        "hf-apply-plain-module",
        _hf(lambda eh, t, tm: eh.apply(torch.nn.Linear(4, 4), "tied")),
        ConfigError,
        "does not support Linear",
        "gpt2",
    ),
    api("hf-apply-not-a-model", _hf(lambda eh, t, tm: eh.apply("gpt2", "tied")), ConfigError, "does not support str"),
    api("hf-apply-base-model-without-head", _hf(_hf_base_model), ConfigError, "GPT2Model", "no output layer"),
    api("hf-apply-unsupported-family", _hf(_hf_unsupported_family), ConfigError, "'bert'", "supported model types"),
    api("hf-apply-unknown-strategy", _hf(lambda eh, t, tm: eh.apply(tm("gpt2", 40), "tide")), ConfigError, "'tide'"),
    api(
        "hf-apply-unknown-option",
        _hf(lambda eh, t, tm: eh.apply(tm("gpt2", 40), "tied", biass=True)),
        ConfigError,
        "'biass'",
    ),
    api(
        "hf-apply-twice",
        _hf(lambda eh, t, tm: eh.apply(eh.apply(tm("gpt2", 40), "tied"), "l2norm")),
        ConfigError,
        "already uses embtie strategy 'tied'",
    ),
    api("hf-load-plain-hf-dir", _hf(_hf_plain_dir), DataError, "plain", "not saved from a model patched"),
    api("hf-load-empty-dir", _hf(lambda eh, t, tm: eh.load(t)), DataError, "no config.json"),
    api("hf-load-damaged-weights", _hf(_hf_damaged_weights), DataError, "model.safetensors", "damaged"),
]


@pytest.mark.parametrize(("fn", "exc", "expect"), API_CASES)
def test_python_api(fn, exc, expect, tmp_path):
    with pytest.raises(exc) as e:
        fn(tmp_path)
    for s in expect:
        assert s in str(e.value), f"{s!r} not in {str(e.value)!r}"


@pytest.mark.parametrize("impl", ["plain", "chunked"])
def test_nan_or_no_kept_token_gives_nan_not_a_number(impl):
    """Not an exception, by the loss's contract: NaN in h and a batch whose every target is ignore_index give
    a NaN loss (0/0, as F.cross_entropy), never a finite one, so the trainer's non-finite check stops or
    skips the step with one line (train.skip_nonfinite)."""
    s = _strategy()
    h, t = torch.randn(2, 3, 8), torch.tensor([[1, 2, 3], [4, 5, 6]])
    h[0, 1, 2] = float("nan")
    assert torch.isnan(s.loss(h, t, impl=impl))
    assert torch.isnan(s.loss(torch.randn(2, 3, 8), torch.full((2, 3), -100), impl=impl))


def test_hf_micro_batch_without_labels_adds_nothing():
    """Not an error: with gradient accumulation (num_items_in_batch) a micro-batch whose labels are all -100
    adds 0 to the summed loss and finite (zero) gradients, as transformers' own loss does (not NaN)."""
    pytest.importorskip("transformers")
    import embtie.hf as eh
    from embtie.hf.tiny import tiny_model

    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", 40), "l2norm")
    ids = torch.randint(3, 40, (2, 6))
    out = model(input_ids=ids, labels=torch.full_like(ids, -100), num_items_in_batch=torch.tensor(7))
    out.loss.backward()
    assert out.loss.item() == 0.0
    assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


# ---------------------------------------------------------------------------- one writer per run directory


def _locked(where: str, info: dict[str, Any] | str | None = None) -> Callable[[Ctx], list[Any]]:
    """`embtie train` into a folder whose writer lock another process holds: a new --out ("new"), or a copy
    of the finished or unfinished GPT run."""

    def setup(c: Ctx) -> list[Any]:
        out = c.tmp / "out" if where == "new" else c.run(finished=where == "finished")
        c.hold(out, info)
        return c.train_argv(out)

    return setup


def _fake_squeue(c: Ctx, state: str) -> None:
    """An ``squeue`` on PATH that lists every job in ``state`` (empty: no such job any more)."""
    bin_dir = c.tmp / "bin"
    bin_dir.mkdir()
    (bin_dir / "squeue").write_text(f"#!/bin/sh\necho '{state}'\n", encoding="utf-8")
    (bin_dir / "squeue").chmod(0o755)
    c.mp.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")


def _locked_by_running_slurm_job(c: Ctx) -> list[Any]:
    _fake_squeue(c, "RUNNING")
    c.mp.setenv("SLURM_JOB_ID", "5000")
    return _locked("unfinished", lock_holders.record(host="node-3", pid=812, slurm_job_id="4999"))(c)


def compare_argv(out: Path, *more: str) -> list[Any]:
    return ["compare", "ptb-gpt-tiny", "--strategies", "tied", "--seeds", "1", *TINY_LM, *more, "--no-progress",
            "--out", out]  # fmt: skip


def _compare_locked(*more: str) -> Callable[[Ctx], list[Any]]:
    def setup(c: Ctx) -> list[Any]:
        c.hold(c.tmp / "cmp", lock_holders.record(what="comparison", command="embtie compare ptb-gpt-tiny"))
        return compare_argv(c.tmp / "cmp", *more)

    return setup


def _compare_run_locked(c: Ctx) -> list[Any]:
    c.hold(c.tmp / "cmp" / "runs" / "tied" / "seed0")
    return compare_argv(c.tmp / "cmp")


LOCK_CASES = [
    case(
        "train-out-locked-by-another-trainer",
        _locked("new"),
        "out",
        "in use (training)",
        "pid {holder} on host",
        "since 2030-01-01T09:00:00",
        "delete",
    ),
    case("resume-while-another-process-trains", _locked("unfinished"), "run", "in use (training)", "pid {holder}"),
    case("train-finished-run-while-another-holds-it", _locked("finished"), "in use (training)", "pid {holder}"),
    case(
        "train-locked-from-another-host",
        _locked("unfinished", lock_holders.record(host="node-17", pid=4711, slurm_job_id="4242")),
        "pid 4711 on host node-17, Slurm job 4242",
        "if that process is gone, delete",
    ),
    case("train-locked-by-a-running-slurm-job", _locked_by_running_slurm_job, "host node-3, Slurm job 4999"),
    case("train-locked-without-record", _locked("new", lock_holders.NO_INFO), "no readable record", ".embtie-lock"),
    case("train-locked-damaged-record", _locked("unfinished", "{not json"), "left no readable record"),
    case(
        "train-into-a-folder-a-comparison-writes",
        _locked("new", lock_holders.record(what="comparison", command="embtie compare ptb-gpt-tiny")),
        "in use (comparison)",
        "embtie compare ptb-gpt-tiny",
    ),
    case("compare-while-another-compares", _compare_locked(), "cmp", "in use (comparison)", "pid {holder}"),
    case("compare-report-only-while-another-compares", _compare_locked("--report-only"), "in use (comparison)"),
    case("compare-a-run-another-process-trains", _compare_run_locked, "seed0", "in use (training)", "pid {holder}"),
]


@pytest.mark.parametrize("c", LOCK_CASES)
def test_lock(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


# ---------------------------------------------------------------------------- not finite, does not fit


def _rewrite(f: Path, change: Callable[[dict[str, torch.Tensor]], None]) -> None:
    tensors = dict(load_file(str(f)))
    change(tensors)
    save_file(tensors, str(f))


def _nan(tensors: dict[str, torch.Tensor]) -> None:
    tensors["sharing.weight"][3, :2] = float("nan")


def _inf(tensors: dict[str, torch.Tensor]) -> None:
    tensors["norm.weight"][0] = float("inf")


def _huge(tensors: dict[str, torch.Tensor]) -> None:
    """Finite weights whose first step overflows (1e29-sized embeddings)."""
    tensors["sharing.weight"] *= 1e30


def _truncated_vocab(tensors: dict[str, torch.Tensor]) -> None:
    tensors["sharing.weight"] = tensors["sharing.weight"][:9000].clone()


def _extra_tensor(tensors: dict[str, torch.Tensor]) -> None:
    tensors["head.extra"] = torch.zeros(4)


def _weights(how: Callable[[dict[str, torch.Tensor]], None], *argv: Any, kind: str = "lm", checkpoints: int = 2,
             finished: bool = True, name: str = "model.safetensors") -> Callable[[Ctx], list[Any]]:  # fmt: skip
    """A run copy whose newest checkpoint's ``name`` is rewritten by ``how``; then ``argv`` on it ("train":
    resume it)."""

    def setup(c: Ctx) -> list[Any]:
        run = c.run(kind, checkpoints=checkpoints, finished=finished)
        _rewrite(c.newest(run) / name, how)
        if argv[:1] == ("train",):
            return c.train_argv(run, *argv[1:])
        return [argv[0], run, *[a(c) if callable(a) else a for a in argv[1:]]]

    return setup


def _only_first_checkpoint(how: Callable[[dict[str, torch.Tensor]], None]) -> Callable[[Ctx], list[Any]]:
    """An unfinished run copy whose only checkpoint is step-00000001, rewritten by ``how``; resumed."""

    def setup(c: Ctx) -> list[Any]:
        run = c.run(checkpoints=2, finished=False)
        shutil.rmtree(run / "checkpoints" / "step-00000002")
        (run / "checkpoints" / "latest").write_text("step-00000001", encoding="utf-8")
        _rewrite(run / "checkpoints" / "step-00000001" / "model.safetensors", how)
        return c.train_argv(run)

    return setup


def _nan_moments(tensors: dict[str, torch.Tensor]) -> None:
    for name, t in tensors.items():
        if name.endswith("exp_avg"):
            t.fill_(float("nan"))


def _mt_nan(tensors: dict[str, torch.Tensor]) -> None:
    tensors["sharing.weight"][0, 0] = float("nan")


def _hf_nan_export(c: Ctx) -> list[Any]:
    pytest.importorskip("transformers")
    import embtie.hf as eh
    from embtie.hf.tiny import tiny_model

    model = eh.apply(tiny_model("gpt2", 40), "tied")
    with torch.no_grad():
        model.get_input_embeddings().weight[1, 1] = float("nan")
    model.save_pretrained(c.tmp / "saved")
    return ["export", c.tmp / "saved", c.tmp / "exported"]


def _init_overflow(c: Ctx) -> list[Any]:
    return c.train_argv(c.tmp / "out", "sharing.options.init_std=1.0e+30")


NONFINITE_CASES = [
    case(
        "eval-nan-weights",
        _weights(_nan, "eval"),
        "step-00000002",
        "not finite",
        "sharing.weight (2 NaN of 160000",
        "--checkpoint step-00000001",
        "changed or damaged after it was written",
    ),
    case("eval-inf-weights", _weights(_inf, "eval"), "norm.weight (1 inf of 16 values)", "--checkpoint step-00000001"),
    case("eval-nan-only-checkpoint", _weights(_nan, "eval", checkpoints=1), "not finite", "no other checkpoint"),
    case("analyze-nan-weights", _weights(_nan, "analyze"), "step-00000002", "not finite", "sharing.weight"),
    case(
        "resume-nan-weights",
        _weights(_nan, "train", finished=False),
        "step-00000002",
        "not finite",
        "resume from the older step-00000001 by moving",
    ),
    case(
        "resume-nan-optimizer-state",
        _weights(_nan_moments, "train", finished=False, name="optim.safetensors"),
        "optimizer state",
        "step-00000002",
        "not finite",
    ),
    case(
        "translate-nan-weights",
        _weights(_mt_nan, "translate", "--input", file("in.de", "Ein Hund.\n"), kind="mt", checkpoints=1),
        "not finite",
        "sharing.weight",
    ),
    case("eval-mt-nan-weights", _weights(_mt_nan, "eval", kind="mt", checkpoints=1), "not finite", "sharing.weight"),
    case("export-nan-weights", _hf_nan_export, "saved", "not finite", "nothing was exported"),
    case(  # refused before anything trains since every number has a range (a step-0 overflow: test_faults)
        "train-init-overflows-at-step-0",
        _init_overflow,
        "sharing.options.init_std=1e+30 is too large",
        "2,147,483,647",
    ),
    case(
        "resume-first-step-after-resuming-overflows",
        _only_first_checkpoint(_huge),
        "step 1",
        "just resumed from, step-00000001",
        "moving step-00000001 away",
        changes=("run/tb", "run/metrics.jsonl"),
    ),
]


@pytest.mark.parametrize("c", NONFINITE_CASES)
def test_nonfinite(c, tmp_path, monkeypatch, request, capfd):
    line = check_cli_case(c, tmp_path, monkeypatch, request, capfd)
    assert "lower train.lr into" not in line or "step 0" not in line  # never the learning rate at step 0


def _edit_config(old: str, new: str, *argv: Any, kind: str = "lm") -> Callable[[Ctx], list[Any]]:
    """A run copy whose config.yaml has ``old`` replaced by ``new`` (as if edited by hand); then ``argv``
    on it ("train": resume it with that config.yaml)."""

    def setup(c: Ctx) -> list[Any]:
        run = c.run(kind, checkpoints=2, finished=argv[0] != "train")
        cfg = run / "config.yaml"
        text = cfg.read_text(encoding="utf-8")
        assert old in text, text
        cfg.write_text(text.replace(old, new, 1), encoding="utf-8")
        if argv[0] == "train":
            return ["train", cfg, "--out", run]
        return [argv[0], run, *[a(c) if callable(a) else a for a in argv[1:]]]

    return setup


def _another_runs_checkpoint(c: Ctx) -> list[Any]:
    other = c.request.getfixturevalue("mt_run")
    return ["eval", c.run(), "--checkpoint", c.newest(other)]


MISMATCH_CASES = [
    case(
        "eval-config-of-another-width",
        _edit_config("dim: 16", "dim: 32", "eval"),
        "does not fit",
        "blocks.0.attn.proj.weight is (16, 16) in the checkpoint, (32, 32) in the model",
        "and 5 more",
        "config.yaml the run was trained with",
    ),
    case(
        "eval-config-of-another-strategy",
        _edit_config("name: tied", "name: untied", "eval"),
        "does not fit",
        "missing: sharing.out_weight (10000, 16)",
    ),
    case(
        "eval-config-with-a-bias",
        _edit_config("options: {}", "options: {bias: true}", "eval"),
        "missing: sharing.bias (10000,)",
    ),
    case("eval-checkpoint-of-another-run", _another_runs_checkpoint, "belongs to another run", "embtie eval"),
    case(
        "eval-checkpoint-of-another-vocabulary",
        _weights(_truncated_vocab, "eval"),
        "sharing.weight is (9000, 16) in the checkpoint, (10000, 16) in the model",
    ),
    case("eval-checkpoint-with-an-unknown-tensor", _weights(_extra_tensor, "eval"), "unexpected: head.extra (4,)"),
    case("analyze-config-of-another-width", _edit_config("dim: 16", "dim: 32", "analyze"), "does not fit"),
    case(
        "resume-config-of-another-width",
        _edit_config("dim: 16", "dim: 32", "train"),
        "does not fit",
        "resume with the config.yaml the run was trained with",
        "another --out",
    ),
    case(
        "translate-config-of-another-width",
        _edit_config("dim: 16", "dim: 24", "translate", "--input", file("in.de", "Ein Hund.\n"), kind="mt"),
        "does not fit",
        "shapes differ",
    ),
]


@pytest.mark.parametrize("c", MISMATCH_CASES)
def test_mismatch(c, tmp_path, monkeypatch, request, capfd):
    check_cli_case(c, tmp_path, monkeypatch, request, capfd)


# ---------------------------------------------------------------------------- not errors: a note, a name


@dataclass(frozen=True)
class NoteCase:
    """A command that succeeds and says one thing on stderr (``expect``); ``check(ctx)`` then looks at
    what it wrote."""

    id: str
    setup: Callable[[Ctx], list[Any]]
    expect: tuple[str, ...]
    check: Callable[[Ctx], None]


def note_case(id: str, setup: Callable[[Ctx], list[Any]], check: Callable[[Ctx], None], *expect: str) -> Any:
    return pytest.param(NoteCase(id, setup, expect, check), id=id)


@pytest.fixture(scope="module")
def analysed_run(tmp_path_factory, lm_run) -> Path:
    """A copy of the GPT run analysed when step-00000001 was its newest checkpoint."""
    from embtie.analysis import run_diagnostics

    run = tmp_path_factory.mktemp("analysed") / "run"
    shutil.copytree(lm_run, run)
    shutil.rmtree(run / "checkpoints" / "step-00000002")
    (run / "checkpoints" / "latest").write_text("step-00000001", encoding="utf-8")
    run_diagnostics.analyse(run, 2)
    return run


@pytest.fixture(scope="module")
def cmp_dir(tmp_path_factory) -> Path:
    """A finished comparison of one run (tied, seed 0) of the tiny GPT."""
    out = tmp_path_factory.mktemp("cmp") / "cmp"
    assert main([str(a) for a in compare_argv(out)]) == 0
    return out


def _diag(run: Path) -> dict[str, Any]:
    import json

    return json.loads((run / "analysis" / "diagnostics.json").read_text(encoding="utf-8"))


def _set_diag(run: Path, change: Callable[[dict[str, Any]], None]) -> None:
    import json

    raw = _diag(run)
    change(raw)
    (run / "analysis" / "diagnostics.json").write_text(json.dumps(raw, indent=1), encoding="utf-8")


def _stale_analysis(change: Callable[[dict[str, Any]], None] | None = None) -> Callable[[Ctx], list[Any]]:
    """The GPT run (newest checkpoint step-00000002) with the analysis of its step-00000001, changed by ``change``."""

    def setup(c: Ctx) -> list[Any]:
        run = c.run(checkpoints=2)
        shutil.copytree(c.request.getfixturevalue("analysed_run") / "analysis", run / "analysis")
        if change is not None:
            _set_diag(run, change)
        if change is _legacy:  # the weights are newer than the analysis
            t = (c.newest(run) / "model.safetensors").stat().st_mtime
            os.utime(run / "analysis" / "diagnostics.json", (t - 60, t - 60))
        return ["analyze", run]

    return setup


def _changed_weights(raw: dict[str, Any]) -> None:
    raw["provenance"].update(checkpoint="step-00000002", step=2, model_sha256="0" * 64)


def _legacy(raw: dict[str, Any]) -> None:
    del raw["provenance"]


def _analysed_newest(c: Ctx) -> None:
    prov = _diag(c.tmp / "run")["provenance"]
    assert prov["checkpoint"] == "step-00000002" and prov["step"] == 2 and prov["command"].startswith("embtie analyze")


def _stale_comparison(*more: str) -> Callable[[Ctx], list[Any]]:
    def setup(c: Ctx) -> list[Any]:
        out = c.tmp / "cmp"
        shutil.copytree(c.request.getfixturevalue("cmp_dir"), out)
        _set_diag(out / "runs" / "tied" / "seed0", lambda raw: raw["provenance"].update(checkpoint="step-00000001"))
        return compare_argv(out, *more)

    return setup


def _comparison_reanalysed(c: Ctx) -> None:
    assert _diag(c.tmp / "cmp" / "runs" / "tied" / "seed0")["provenance"]["checkpoint"] == "step-00000002"
    assert (c.tmp / "cmp" / "report.md").is_file() and not (c.tmp / "cmp" / lock.INFO).exists()


def _older_eval_result(c: Ctx) -> list[Any]:
    run = c.run(checkpoints=2)
    assert run_cli(["eval", run, "--checkpoint", "step-00000001"], c) == 0
    import json

    results = json.loads((run / "eval.json").read_text(encoding="utf-8"))
    results["valid"] = {**results.pop("valid@step-00000001"), "split": "valid"}  # as if step 1 had been the newest
    (run / "eval.json").write_text(json.dumps(results), encoding="utf-8")
    return ["eval", run, "--test-file", c.write("mine.txt", "the company said\n")]


def _eval_json_keeps_both(c: Ctx) -> None:
    import json

    results = json.loads((c.tmp / "run" / "eval.json").read_text(encoding="utf-8"))
    assert set(results) == {"valid", "test"} and results["test"]["provenance"]["checkpoint"] == "step-00000002"


def _stale_record(c: Ctx) -> list[Any]:
    """An unfinished run whose lock a SIGKILLed trainer left behind (its info file; the flock died with it)."""
    import json

    run = c.run(finished=False)
    info = lock_holders.record(pid=lock_holders.dead_pid())
    (run / lock.INFO).write_text(json.dumps(info), encoding="utf-8")
    (run / lock.LOCK).touch()
    return c.train_argv(run)


def _held_by(info: dict[str, Any], env: dict[str, str], squeue: str | None = None) -> Callable[[Ctx], list[Any]]:
    def setup(c: Ctx) -> list[Any]:
        for k, v in env.items():
            c.mp.setenv(k, v)
        if squeue is not None:
            _fake_squeue(c, squeue)
        run = c.run(finished=False)
        c.hold(run, info)
        return c.train_argv(run)

    return setup


def _resumed_and_released(c: Ctx) -> None:
    run = c.tmp / "run"
    assert (run / "summary.json").is_file() and not (run / lock.INFO).exists() and not (run / lock.LOCK).exists()


NOTE_CASES = [
    note_case(
        "analyze-analysis-of-an-older-checkpoint",
        _stale_analysis(),
        _analysed_newest,
        "out of date",
        "it came from step-00000001 but the run's newest checkpoint is step-00000002",
        "computing it again",
    ),
    note_case(
        "analyze-analysis-of-changed-weights",
        _stale_analysis(_changed_weights),
        _analysed_newest,
        "the weights of step-00000002 changed after it was computed",
    ),
    note_case(
        "analyze-analysis-of-older-code",
        _stale_analysis(_legacy),
        _analysed_newest,
        "records no checkpoint",
        "step-00000002, was written after it",
    ),
    note_case(
        "compare-report-only-stale-analysis",
        _stale_comparison("--report-only"),
        _comparison_reanalysed,
        "seed0 is out of date",
        "came from step-00000001",
    ),
    note_case("compare-again-stale-analysis", _stale_comparison(), _comparison_reanalysed, "seed0 is out of date"),
    note_case(
        "eval-json-holds-results-of-an-older-checkpoint",
        _older_eval_result,
        _eval_json_keeps_both,
        "eval.json also holds results of older checkpoints: valid (from step-00000001)",
    ),
    note_case(
        "resume-after-a-killed-trainer",
        _stale_record,
        _resumed_and_released,
        "took over the stale lock",
        "ended without releasing it",
    ),
    note_case(
        "resume-lock-of-a-dead-process-held-by-its-child",
        lambda c: _held_by(lock_holders.record(pid=lock_holders.dead_pid()), {})(c),
        _resumed_and_released,
        "took over the stale lock",
        "its process is gone",
    ),
    note_case(
        "resume-in-a-requeued-slurm-job",
        # Slurm sets SLURM_RESTART_COUNT from a job's first requeue on; the earlier start recorded none
        _held_by(
            lock_holders.record(host="node-17", slurm_job_id="4242"),
            {"SLURM_JOB_ID": "4242", "SLURM_RESTART_COUNT": "1"},
        ),
        _resumed_and_released,
        "Slurm job 4242 was requeued",
    ),
    note_case(
        "resume-after-the-slurm-job-ended",
        _held_by(lock_holders.record(host="node-3", slurm_job_id="4999"), {"SLURM_JOB_ID": "5000"}, ""),
        _resumed_and_released,
        "Slurm job 4999 has ended",
    ),
]


@pytest.mark.parametrize("c", NOTE_CASES)
def test_note(c, tmp_path, monkeypatch, request, capfd):
    """Not errors: exit status 0 and one line on stderr that says what was found and done about it."""
    ctx = Ctx(tmp_path, monkeypatch, request)
    argv = c.setup(ctx)
    capfd.readouterr()
    code = run_cli(argv, ctx)
    _, err = capfd.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 0 and "Traceback" not in err, err
    assert len(lines) == 1 and lines[0].startswith("embtie: note: "), err
    for s in c.expect:
        assert s in lines[0], f"{s!r} not in {lines[0]!r}"
    c.check(ctx)


def _eval_named(kind: str, *argv: Any) -> Callable[[Ctx], list[Any]]:
    return lambda c: ["eval", c.run(kind, checkpoints=2), *[a(c) if callable(a) else a for a in argv]]


NAME_CASES = [
    pytest.param(
        _eval_named("lm", "--split", "valid", "--test-file", file("mine.txt", "the company said\n")),
        "file:mine.txt ppl",
        "file:mine.txt",
        None,
        id="eval-file-under-split-valid",
    ),
    pytest.param(
        _eval_named("lm", "--test-file", file("valid.txt", "the company said\n")),
        "test ppl",
        "test",
        None,
        id="eval-file-named-valid",
    ),
    pytest.param(
        _eval_named(
            "lm",
            "--split",
            "valid",
            "--test-file",
            file("mine.txt", "the company said\n"),
            "--checkpoint",
            "step-00000001",
        ),
        "file:mine.txt@step-00000001 ppl",
        "file:mine.txt@step-00000001",
        None,
        id="eval-file-with-a-named-checkpoint",
    ),
    pytest.param(
        _eval_named("lm", "--checkpoint", "step-00000001"),
        "valid@step-00000001 ppl",
        "valid@step-00000001",
        None,
        id="eval-named-checkpoint-is-not-the-newest",
    ),
    pytest.param(
        _eval_named(
            "mt", "--split", "valid", "--src-file", file("s.de", "Ein Hund.\n"), "--ref-file", file("r.en", "A dog.\n")
        ),
        "file:s.de: BLEU",
        "file:s.de",
        "hyps.file-s.de.txt",
        id="eval-mt-files-under-split-valid",
    ),
]


@pytest.mark.parametrize(("setup", "printed", "key", "hyps"), NAME_CASES)
def test_result_name(setup, printed, key, hyps, tmp_path, monkeypatch, request, capfd):
    """Not errors: a result is written and printed under the name of what was evaluated; a user's file is never
    saved or shown as the validation split (nor a named checkpoint's result as the newest one's)."""
    import json

    ctx = Ctx(tmp_path, monkeypatch, request)
    argv = setup(ctx)
    capfd.readouterr()
    assert run_cli(argv, ctx) == 0
    out, err = capfd.readouterr()
    assert err.strip() == "" and out.splitlines()[0].startswith(printed), (out, err)
    results = json.loads((tmp_path / "run" / "eval.json").read_text(encoding="utf-8"))
    assert list(results) == [key] and results[key]["provenance"]["command"].startswith("embtie eval")
    assert results[key].get("split", key.split("@")[0]) == key.split("@")[0]
    hyp_files = sorted(p.name for p in (tmp_path / "run").glob("hyps.*.txt"))
    assert hyp_files == ([hyps] if hyps else [])


# ---------------------------------------------------------------------------- Python API at its boundary


def _api_loss(h: Any, targets: Any, **kw: Any) -> Callable[[Path], Any]:
    return lambda _: _strategy().loss(h() if callable(h) else h, targets() if callable(targets) else targets, **kw)


META = torch.device("meta")

API_BOUNDARY_CASES = [
    api("embed-a-list", lambda _: _strategy().embed([1, 2]), InputTypeError, "token ids", "torch.Tensor", "list"),
    api("embed-bool-ids", lambda _: _strategy().embed(torch.tensor([True])), TypeError, "torch.bool"),
    api("embed-negative-id", lambda _: _strategy().embed(torch.tensor([[2, -1]])), DataError, "token id -1"),
    api(
        "embed-ids-on-another-device",
        lambda _: _strategy().embed(torch.ones(2, dtype=torch.long, device=META)),
        InputValueError,
        "token ids are on meta",
        "weights are on cpu",
    ),
    api(
        "embed-id-out-of-range-l2norm",
        lambda _: _strategy("l2norm").embed(torch.tensor([11])),
        DataError,
        "token id 11",
        "[0, 10)",
    ),
    api(
        "logits-integer-h",
        lambda _: _strategy().logits(torch.ones(2, 8, dtype=torch.long)),
        InputTypeError,
        "floating point",
        "torch.int64",
    ),
    api("logits-bool-h", lambda _: _strategy().logits(torch.ones(2, 8, dtype=torch.bool)), TypeError, "torch.bool"),
    api(
        "logits-h-on-another-device",
        lambda _: _strategy().logits(torch.ones(2, 8, device=META)),
        InputValueError,
        "hidden states are on meta",
        "weights are on cpu",
    ),
    api("logits-scalar-h", lambda _: _strategy().logits(torch.tensor(1.0)), ValueError, "()", "dim=8"),
    api("logits-a-list", lambda _: _strategy().logits([[0.0] * 8]), InputTypeError, "hidden states", "list"),
    api(
        "logits-wrong-width-transformed",
        lambda _: _strategy("tied-proj").logits(torch.randn(2, 6)),
        ValueError,
        "(2, 6)",
        "dim=8",
    ),
    api(
        "loss-integer-h",
        _api_loss(torch.ones(2, 8, dtype=torch.long), torch.tensor([1, 2])),
        InputTypeError,
        "floating point",
        "torch.int64",
    ),
    api(
        "loss-h-on-another-device",
        _api_loss(lambda: torch.randn(2, 8, device=META), torch.tensor([1, 2])),
        InputValueError,
        "hidden states are on meta",
    ),
    api(
        "loss-targets-on-another-device",
        _api_loss(lambda: torch.randn(2, 8), lambda: torch.ones(2, dtype=torch.long, device=META)),
        InputValueError,
        "targets are on meta",
        "hidden states are on cpu",
    ),
    api("loss-targets-a-list", _api_loss(lambda: torch.randn(2, 8), [1, 2]), InputTypeError, "targets", "list"),
    api(
        "loss-targets-flat-for-3d-h",
        _api_loss(lambda: torch.randn(2, 3, 8), torch.arange(6)),
        InputValueError,
        "(2, 3, 8)",
        "(6,)",
    ),
    api(
        "loss-targets-transposed",
        _api_loss(lambda: torch.randn(2, 3, 8), torch.zeros(3, 2, dtype=torch.long)),
        ValueError,
        "(3, 2)",
    ),
    api(
        "loss-complex-h",
        _api_loss(lambda: torch.randn(2, 8, dtype=torch.complex64), torch.tensor([1, 2])),
        TypeError,
        "torch.complex64",
    ),
    api(
        "loss-target-equal-to-vocab-size",
        _api_loss(lambda: torch.randn(3, 8), torch.tensor([1, 10, -1]), ignore_index=-1),
        DataError,
        "target id 10",
        "ignore_index=-1",
    ),
    api(
        "loss-negative-target-not-ignored",
        _api_loss(lambda: torch.randn(3, 8), torch.tensor([1, -1, 2])),
        DataError,
        "target id -1",
        "ignore_index=-100",
    ),
    api(
        "loss-target-too-large-recompute",
        _api_loss(lambda: torch.randn(3, 8), torch.tensor([1, 12, 2]), impl="recompute"),
        DataError,
        "target id 12",
    ),
    api(
        "loss-negative-target-chunked",
        _api_loss(lambda: torch.randn(3, 8), torch.tensor([1, -7, 2]), impl="chunked"),
        DataError,
        "target id -7",
    ),
]


@pytest.mark.parametrize(("fn", "exc", "expect"), API_BOUNDARY_CASES)
def test_python_api_boundary(fn, exc, expect, tmp_path):
    """The strategy's own inputs: a specific exception (embtie's, where a user could pass it: the command line
    prints those as one line), one line that names the input and what it should be."""
    with pytest.raises(exc) as e:
        fn(tmp_path)
    message = str(e.value)
    assert "\n" not in message and message, message
    for s in expect:
        assert s in message, f"{s!r} not in {message!r}"


# ---------------------------------------------------------------------------- the catalogue


def test_catalogue_size():
    """At least 40 bad inputs, each in a table with a unique id (the tests outside the tables come on top)."""
    tables = {
        "config": CONFIG_CASES,
        "data": DATA_CASES,
        "run directory": RUN_CASES + READ_ONLY_CASES,
        "command line": CLI_CASES,
        "python api": API_CASES + API_BOUNDARY_CASES,
        "lock": LOCK_CASES,
        "not finite": NONFINITE_CASES,
        "mismatch": MISMATCH_CASES,
        "staleness and stale locks": NOTE_CASES,
        "result names": NAME_CASES,
    }
    ids = [p.id for cases in tables.values() for p in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    assert len(ids) >= 40, {name: len(cases) for name, cases in tables.items()}
    assert all(len(cases) >= 5 for cases in tables.values()), {name: len(cases) for name, cases in tables.items()}
    reliability = LOCK_CASES + NONFINITE_CASES + MISMATCH_CASES + NOTE_CASES + NAME_CASES + API_BOUNDARY_CASES
    assert len(reliability) >= 40, len(reliability)
