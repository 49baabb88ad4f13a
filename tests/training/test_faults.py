"""Faults during training: non-finite losses stop (or skip) cleanly, an unreadable newest checkpoint
falls back to the previous one, a failed checkpoint write leaves the previous one intact, and a
process killed at any point of a checkpoint write resumes to bitwise the same weights."""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtie.cli import main
from embtie.config import load_config
from embtie.rundir import checkpoints
from embtie.rundir.checkpoints import CheckpointError
from embtie.training import objective, train
from embtie.training.nonfinite import NonFiniteError
from tiny_runs import TINY_GPT_BODY, overridden

DATA = os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
TINY = [
    *TINY_GPT_BODY,
    "train.eval_every=0",
    "train.checkpoint_every=5",
    "train.keep_checkpoints=3",
    "train.max_steps=20",
]


def _cfg(*extra: str):
    return load_config("ptb-gpt-tiny", [*TINY, *extra])


def _poison(monkeypatch, steps: set[int]) -> None:
    """Make the training objective NaN at the given steps (counted from 0 over this process's calls)."""
    forward = objective.Objective.forward
    calls = {"n": 0}

    def poisoned(self, batch, carry):
        losses, tokens, carry = forward(self, batch, carry)  # (objective, ce) stacked
        n, calls["n"] = calls["n"], calls["n"] + 1
        poison = losses.new_tensor([float("nan") if n in steps else 1.0, 1.0])
        return losses * poison, tokens, carry

    monkeypatch.setattr(objective.Objective, "forward", poisoned)


def _finite(ckpt: Path) -> bool:
    return all(bool(torch.isfinite(t).all()) for t in load_file(str(ckpt / "model.safetensors")).values())


def _tree_hash(d: Path) -> dict[str, str]:
    files = (p for p in sorted(d.rglob("*")) if p.is_file())
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def test_nan_at_step_k_stops_at_k_and_keeps_the_last_finite_checkpoint(monkeypatch, tmp_path):
    _poison(monkeypatch, {12})
    with pytest.raises(NonFiniteError, match=r"^step 12: loss nan is not finite") as e:
        train(_cfg(), tmp_path)
    assert "step-00000010" in str(e.value) and "\n" not in str(e.value)
    newest = checkpoints.latest(tmp_path)
    assert newest is not None and newest.name == "step-00000010" and _finite(newest)
    assert not (tmp_path / "summary.json").exists()


def test_huge_learning_rate_stops_with_one_line_and_finite_checkpoints(tmp_path, capsys):
    huge = overridden(TINY, "train.optimizer=sgd", "train.lr=100", "train.checkpoint_every=1", "train.grad_clip=null")
    argv = ["train", "ptb-gpt-tiny", *huge, "--out", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not finite" in err[0] and "train.lr=100," in err[0], err
    ckpts = sorted((tmp_path / "checkpoints").glob("step-*"))
    assert all(_finite(c) for c in ckpts)
    step = int(err[0].split("step ")[1].split(":")[0])
    assert step < 20 and checkpoints.latest(tmp_path).name <= f"step-{step:08d}"


def test_skip_nonfinite_skips_up_to_n_steps_then_stops(monkeypatch, tmp_path):
    _poison(monkeypatch, {3, 7})
    summary = train(_cfg("train.skip_nonfinite=2"), tmp_path / "two")
    assert summary["nonfinite_skipped"] == 2 and summary["valid_ppl"] < float("inf")
    _poison(monkeypatch, {3, 7})
    with pytest.raises(NonFiniteError, match=r"^step 7: "):
        train(_cfg("train.skip_nonfinite=1"), tmp_path / "one")


def test_unreadable_newest_checkpoint_falls_back_to_the_previous_one(tmp_path, capsys):
    ref = tmp_path / "ref"
    train(_cfg(), ref)
    final = load_file(str(ref / "checkpoints/step-00000020/model.safetensors"))
    run = tmp_path / "run"
    shutil.copytree(ref, run)
    (run / "summary.json").unlink()
    newest = run / "checkpoints/step-00000020/model.safetensors"
    newest.write_bytes(newest.read_bytes()[:100])  # truncated
    summary = train(_cfg(), run)
    assert "model.safetensors" in capsys.readouterr().err and summary["steps"] == 20
    again = load_file(str(run / "checkpoints/step-00000020/model.safetensors"))
    assert all(torch.equal(final[k], again[k]) for k in final)


def test_no_readable_checkpoint_is_an_error_and_changes_nothing(tmp_path, capsys):
    run = tmp_path / "run"
    train(_cfg("train.keep_checkpoints=1"), run)
    (run / "summary.json").unlink()
    (run / "checkpoints/step-00000020/state.json").write_text("{garbage", encoding="utf-8")
    before = _tree_hash(run)
    argv = ["train", "ptb-gpt-tiny", *overridden(TINY, "train.keep_checkpoints=1"), "--out", str(run)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no readable checkpoint" in err[0] and "state.json" in err[0], err
    assert _tree_hash(run) == before


def test_failed_checkpoint_write_leaves_the_previous_checkpoint(monkeypatch, tmp_path):
    save_tensors = checkpoints.save_tensors
    calls = {"n": 0}

    def full_disk(tensors, path, *a, **k):
        if "optim" in str(path):
            calls["n"] += 1
            if calls["n"] == 2:
                raise OSError(28, "No space left on device")
        return save_tensors(tensors, path, *a, **k)

    monkeypatch.setattr(checkpoints, "save_tensors", full_disk)
    with pytest.raises(CheckpointError, match=r"No space left on device.*step-00000005, is intact"):
        train(_cfg(), tmp_path)
    newest = checkpoints.latest(tmp_path)
    assert newest.name == "step-00000005"
    assert checkpoints.unreadable(newest, ("model.safetensors", "state.json")) is None
    assert not any(p.name.startswith(".tmp") for p in (tmp_path / "checkpoints").iterdir())


KILLER = textwrap.dedent(
    """
    import os, signal, sys
    from embtie.rundir import checkpoints
    point = sys.argv[1]
    begun = {"n": 0}

    def die():
        os.kill(os.getpid(), signal.SIGKILL)

    def around(name, before):
        real = getattr(checkpoints, name)
        def wrapped(*a, **k):
            if before and begun["n"] == 2:
                die()
            out = real(*a, **k)
            if not before and begun["n"] == 2:
                die()
            return out
        setattr(checkpoints, name, wrapped)

    real_begin = checkpoints.begin
    def begin(*a, **k):
        begun["n"] += 1
        return real_begin(*a, **k)
    checkpoints.begin = begin
    class Os:  # checkpoint's view of os: the rename of the finished folder into place can be killed
        def __getattr__(self, name):
            return getattr(os, name)

        def replace(self, src, dst):
            if point == "before_rename" and begun["n"] == 2 and ".tmp-step" in str(src):
                die()
            return os.replace(src, dst)

    checkpoints.os = Os()
    {"after_begin": lambda: around("begin", False), "after_rank": lambda: around("save_tensors", False),
     "after_model": lambda: around("save_model", False), "before_rename": lambda: None,
     "after_rename": lambda: around("write_atomic", True), "after_latest": lambda: around("cleanup", True)}[point]()
    from embtie.cli import main
    sys.exit(main(sys.argv[2:]))
    """
)


POINTS = ["after_begin", "after_rank", "after_model", "before_rename", "after_rename", "after_latest"]


def _env() -> dict[str, str]:
    return {**os.environ, "EMBTIE_DATA": DATA, "OMP_NUM_THREADS": "1"}


@pytest.fixture(scope="module")
def reference_weights(tmp_path_factory) -> dict[str, torch.Tensor]:
    """The final weights of an uninterrupted run, launched like the killed ones (a fresh process)."""
    ref = tmp_path_factory.mktemp("ref")
    subprocess.run([sys.executable, "-m", "embtie", "train", "ptb-gpt-tiny", *TINY, "--out", str(ref)], env=_env(),
                   check=True, timeout=300, capture_output=True)  # fmt: skip
    return load_file(str(ref / "checkpoints/step-00000020/model.safetensors"))


@pytest.mark.parametrize("point", POINTS)
def test_sigkill_during_a_checkpoint_write_then_resume_is_bitwise_identical(point, tmp_path, reference_weights):
    script = tmp_path / "killer.py"
    script.write_text(KILLER, encoding="utf-8")
    run = tmp_path / "run"
    argv = ["train", "ptb-gpt-tiny", *TINY, "--out", str(run)]
    killed = subprocess.run([sys.executable, str(script), point, *argv], env=_env(), capture_output=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr.decode()[-2000:]
    assert not (run / "summary.json").exists()
    subprocess.run([sys.executable, "-m", "embtie", *argv], env=_env(), check=True, timeout=300, capture_output=True)
    a, b = reference_weights, load_file(str(run / "checkpoints/step-00000020/model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert not any(p.name.startswith(".tmp") for p in (run / "checkpoints").iterdir())


def test_weights_that_turn_non_finite_are_never_checkpointed_and_said_once(monkeypatch, tmp_path):
    """The first checkpoint (step 5) finds weights that are not finite: nothing is written, and the line
    says so once, naming the step, the learning rate and that no checkpoint exists yet."""
    from embtie.training import nonfinite

    monkeypatch.setattr(nonfinite, "weights_are_finite", lambda model: False)
    with pytest.raises(NonFiniteError) as e:
        train(_cfg(), tmp_path)
    text = str(e.value)
    assert text.startswith("step 5: the weights are no longer finite, so this step's checkpoint was not written")
    assert (
        "train.lr=0.003" in text
        and text.count("no checkpoint was written") == 1
        and "no checkpoint was written yet" in text
    )
    assert "\n" not in text and checkpoints.latest(tmp_path) is None


def test_a_non_finite_first_step_blames_the_initialisation_not_the_learning_rate(monkeypatch, tmp_path):
    _poison(monkeypatch, {0})
    with pytest.raises(NonFiniteError) as e:
        train(_cfg(), tmp_path)
    text = str(e.value)
    assert text.startswith("step 0: loss nan is not finite") and "\n" not in text
    assert "likely cause: the initialisation, not the learning rate: no update was applied yet" in text
    assert "init_std" in text and text.count("no checkpoint was written") == 1


def test_a_run_that_diverges_without_a_non_finite_step_says_so(tmp_path, capsys):
    """AdamW at lr 100 keeps every step finite (its update is bounded by the lr) but ends thousands of nats
    above a uniform guess: the run finishes, and one line says its perplexity is no model's."""
    argv = ["train", "ptb-gpt-tiny", *TINY, "train.lr=100", "train.grad_clip=null", "--out", str(tmp_path)]
    assert main(argv) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: the final")]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["valid_ppl"] == math.inf and summary["valid_loss"] > 709
    assert len(err) == 1 and "training diverged" in err[0] and "train.lr=100," in err[0], err


def test_a_run_whose_first_loss_is_already_huge_blames_the_initialisation(tmp_path, capsys):
    """init_std=1e9 keeps every step finite but the first batch's loss, before any update, is billions of nats
    (a uniform guess scores ln 10000 = 9.21): the note names the initialisation, not the learning rate."""
    argv = ["train", "ptb-gpt-tiny", *TINY, "sharing.options.init_std=1e9", "--out", str(tmp_path)]
    assert main(argv) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("note: the final")]
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["step0_loss"] > 10 * math.log(10000) and summary["valid_ppl"] == math.inf
    assert len(err) == 1 and "likely cause: the initialisation, not the learning rate" in err[0], err
    assert f"was already {summary['step0_loss']:.4g} nats per token" in err[0] and "ln V = 9.21" in err[0]
    assert "lower train.lr" not in err[0]


def test_a_run_that_converges_prints_no_divergence_note(tmp_path, capsys):
    assert main(["train", "ptb-gpt-tiny", *TINY, "--out", str(tmp_path)]) == 0
    assert "training diverged" not in capsys.readouterr().err
