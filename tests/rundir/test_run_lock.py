"""One writer per run directory: two trainers racing for the same --out (exactly one trains, the other
refuses naming it), a trainer SIGKILLed while it holds the lock (the next one takes the stale lock over
and resumes), SIGTERM (the lock is released), and the stale locks the lock recognises: a dead holder on
this host, a requeued Slurm job, a Slurm job that has ended."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from embtie.rundir import checkpoints, lock
from lock_holders import NO_INFO, dead_pid, hold, record, stop
from tiny_runs import TINY_GPT_BODY

DATA = os.environ.setdefault("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
TINY = [*TINY_GPT_BODY, "train.eval_every=0", "train.checkpoint_every=5", "train.max_steps=60"]

SLOW_TRAINER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from embtie.cli import main
    from embtie.training import resume, trainer

    go, delay = Path(sys.argv[1]), float(sys.argv[2])
    step = trainer.Trainer.train_step

    def slow_step(self):  # a run that takes long enough for the others to meet its lock
        time.sleep(delay)
        return step(self)

    restore = resume.restore

    def spy(ckpt, *a, **k):
        print(f"restored from {ckpt.name}", flush=True)
        return restore(ckpt, *a, **k)

    trainer.Trainer.train_step = slow_step
    resume.restore = spy
    Path(str(go) + f".ready{__import__('os').getpid()}").touch()
    while not go.exists():
        time.sleep(0.01)
    sys.exit(main(sys.argv[3:]))
    """
)


def _env() -> dict[str, str]:
    return {**os.environ, "EMBTIE_DATA": DATA, "OMP_NUM_THREADS": "1"}


def _trainer(tmp: Path, run: Path, go: Path, delay: float) -> subprocess.Popen:
    script = tmp / "slow_trainer.py"
    script.write_text(SLOW_TRAINER, encoding="utf-8")
    argv = [sys.executable, str(script), str(go), str(delay), "train", "ptb-gpt-tiny", *TINY, "--out", str(run)]
    return subprocess.Popen(argv, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait(cond, what: str, timeout: float = 240.0) -> None:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_two_trainers_racing_for_one_run_dir_one_trains_the_other_refuses_naming_it(tmp_path):
    run, go = tmp_path / "run", tmp_path / "go"
    procs = [_trainer(tmp_path, run, go, 0.05) for _ in range(2)]
    _wait(lambda: len(list(tmp_path.glob("go.ready*"))) == 2, "both trainers to be ready")
    go.touch()  # both start at once, their imports done
    outs = [p.communicate(timeout=300) for p in procs]
    codes = [p.returncode for p in procs]
    assert sorted(codes) == [0, 2], [o[1][-2000:] for o in outs]
    winner, loser = (0, 1) if codes[0] == 0 else (1, 0)
    err = _lines(outs[loser][1])
    assert len(err) == 1 and "Traceback" not in outs[loser][1], outs[loser][1]
    assert err[0].startswith("embtie train: error:") and "in use (training)" in err[0]
    assert f"pid {procs[winner].pid} on host" in err[0] and "since" in err[0] and "delete" in err[0]
    assert outs[loser][0] == ""  # the loser trained nothing
    summary = json.loads((run / "summary.json").read_text(encoding="utf-8"))
    assert summary["steps"] == 60 and "restored from" not in outs[winner][0]
    assert not (run / lock.LOCK).exists() and not (run / lock.INFO).exists() and not (run / lock.GUARD).exists()


def test_a_trainer_sigkilled_holding_the_lock_is_taken_over_and_resumed(tmp_path):
    run, go = tmp_path / "run", tmp_path / "go"
    go.touch()
    p = _trainer(tmp_path, run, go, 0.2)
    _wait(lambda: checkpoints.latest(run) is not None and (run / lock.INFO).is_file(), "a checkpoint")
    assert json.loads((run / lock.INFO).read_text(encoding="utf-8"))["pid"] == p.pid
    p.send_signal(signal.SIGKILL)
    p.communicate(timeout=60)
    assert p.returncode == -signal.SIGKILL
    assert (run / lock.INFO).is_file()  # the killed holder could not remove its record: a stale lock
    newest = checkpoints.latest(run)
    assert newest is not None and not (run / "summary.json").exists()
    again = _trainer(tmp_path, run, go, 0.0)
    out, err = again.communicate(timeout=300)
    assert again.returncode == 0, err[-2000:]
    lines = _lines(err)
    assert len(lines) == 1 and lines[0].startswith("embtie: note: took over the stale lock"), err
    assert f"pid {p.pid} on host" in lines[0] and "ended without releasing it" in lines[0]
    assert f"restored from {newest.name}" in out  # resumed, not started over
    assert json.loads((run / "summary.json").read_text(encoding="utf-8"))["steps"] == 60
    assert not (run / lock.INFO).exists()


def test_sigterm_releases_the_lock(tmp_path):
    run, go = tmp_path / "run", tmp_path / "go"
    go.touch()
    p = _trainer(tmp_path, run, go, 0.2)
    _wait(lambda: (run / lock.INFO).is_file() and checkpoints.latest(run) is not None, "the lock")
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + signal.SIGTERM and "Traceback" not in err, err
    assert not (run / lock.LOCK).exists() and not (run / lock.INFO).exists()


# ---------------------------------------------------------------------------- stale locks, in process


def _take(folder: Path) -> str:
    """Take and release the lock of ``folder``; returns what was printed on stderr."""
    with lock.hold(folder, "training", "embtie train test"):
        info = json.loads((folder / lock.INFO).read_text(encoding="utf-8"))
        assert info["pid"] == os.getpid() and info["what"] == "training"
    assert not (folder / lock.LOCK).exists() and not (folder / lock.INFO).exists()
    return ""


def test_a_live_holder_on_this_host_is_refused(tmp_path):
    p = hold(tmp_path / "run")
    try:
        with pytest.raises(lock.LockError, match=rf"in use \(training\) by pid {p.pid} on host .*since 2030"):
            _take(tmp_path / "run")
        assert (tmp_path / "run" / lock.INFO).is_file()  # the holder's record stays
    finally:
        stop(p)


def test_a_dead_holder_whose_lock_lives_on_in_a_child_is_replaced(tmp_path, capsys):
    """The flock is still held (say, by a child that inherited the descriptor) but the recorded process is gone."""
    p = hold(tmp_path / "run", record(pid=dead_pid()))
    try:
        _take(tmp_path / "run")
    finally:
        stop(p)
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and "took over the stale lock" in err[0] and "its process is gone" in err[0]


def test_a_requeued_slurm_job_takes_over_the_lock_of_its_earlier_start(tmp_path, capsys, monkeypatch):
    p = hold(tmp_path / "run", record(host="node-17", slurm_job_id="4242"))
    monkeypatch.setenv("SLURM_JOB_ID", "4242")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")  # Slurm sets it from the first requeue on
    try:
        _take(tmp_path / "run")
    finally:
        stop(p)
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and "Slurm job 4242 was requeued" in err[0] and "host node-17" in err[0]
    assert "(restart 1)" in err[0]


def test_a_requeued_slurm_job_on_the_same_host_takes_over_even_a_live_pid(tmp_path, capsys, monkeypatch):
    """Requeued onto the node it ran on: the recorded pid may already belong to a live process (here the
    holder itself); the earlier start's restart count tells the lock is stale all the same."""
    p = hold(tmp_path / "run", record(slurm_job_id="77", slurm_restart_count="1"))
    monkeypatch.setenv("SLURM_JOB_ID", "77")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "2")
    try:
        _take(tmp_path / "run")
    finally:
        stop(p)
    err = _lines(capsys.readouterr().err)
    assert len(err) == 1 and f"pid {p.pid}" in err[0] and "Slurm job 77 was requeued" in err[0]


def test_another_task_of_the_same_slurm_job_start_is_refused(tmp_path, monkeypatch):
    p = hold(tmp_path / "run", record(host="node-2", slurm_job_id="88"))
    monkeypatch.setenv("SLURM_JOB_ID", "88")
    monkeypatch.delenv("SLURM_RESTART_COUNT", raising=False)
    try:
        with pytest.raises(lock.LockError, match=r"host node-2, Slurm job 88"):
            _take(tmp_path / "run")
    finally:
        stop(p)


@pytest.mark.parametrize(("state", "taken"), [("", True), ("RUNNING", False)])
def test_another_slurm_jobs_lock_is_taken_over_once_squeue_says_it_ended(tmp_path, capsys, monkeypatch, state, taken):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    squeue = bin_dir / "squeue"
    squeue.write_text(f"#!/bin/sh\necho '{state}'\n", encoding="utf-8")
    squeue.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    monkeypatch.setenv("SLURM_JOB_ID", "5000")
    p = hold(tmp_path / "run", record(host="node-3", slurm_job_id="4999"))
    try:
        if taken:
            _take(tmp_path / "run")
        else:
            with pytest.raises(lock.LockError, match=r"host node-3, Slurm job 4999"):
                _take(tmp_path / "run")
    finally:
        stop(p)
    err = _lines(capsys.readouterr().err)
    if taken:
        assert len(err) == 1 and "took over the stale lock" in err[0] and "Slurm job 4999 has ended" in err[0]
    else:
        assert err == []


def test_a_holder_on_another_host_without_slurm_is_never_taken_over(tmp_path):
    p = hold(tmp_path / "run", record(host="node-9", pid=1))
    try:
        with pytest.raises(lock.LockError, match=r"pid 1 on host node-9.*delete .*\.embtie-lock and run again"):
            _take(tmp_path / "run")
    finally:
        stop(p)


def test_a_lock_with_no_record_is_refused(tmp_path):
    p = hold(tmp_path / "run", NO_INFO)
    try:
        with pytest.raises(lock.LockError, match=r"left no readable record"):
            _take(tmp_path / "run")
    finally:
        stop(p)


def test_a_new_folder_that_only_held_the_lock_is_removed_again(tmp_path):
    _take(tmp_path / "a" / "b")
    assert not (tmp_path / "a").exists()


def test_the_info_file_records_host_pid_time_and_slurm_job(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "31337")
    with lock.hold(tmp_path, "comparison", "embtie compare x"):
        info = json.loads((tmp_path / lock.INFO).read_text(encoding="utf-8"))
    assert info["pid"] == os.getpid() and info["slurm_job_id"] == "31337" and info["what"] == "comparison"
    assert info["host"] and info["since"][:2] == "20" and info["command"] == "embtie compare x"
