"""``embtie compare --launcher slurm`` on a real single-node Slurm (tests/support/slurm_cluster.py): a grid
whose one job is requeued mid-run (``scontrol requeue``, then killed) and another preempted through
submitit's signal (it requeues itself) ends with exactly the results of the same grid trained locally;
--dry-run submits nothing; --no-wait submits once, a second call while the jobs run submits nothing
more, and a call after they end collects the report; a run that fails on the cluster is named with its
log, and the same command submits it again."""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from embtie import cli
from embtie.rundir import checkpoints

pytestmark = [pytest.mark.slow, pytest.mark.slurm]

OVER = [
    "model.dim=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.max_len=16",
    "data.bptt=16",
    "data.batch_size=4",
    "data.train_tokens=20000",
    "data.valid_tokens=2000",
    "train.max_steps=200",
    "train.eval_every=100",
    "train.checkpoint_every=20",
    "train.log_every=10",
    "train.threads=1",
]
"""a 16-wide, 1-layer GPT for 200 steps (a few seconds), checkpointed every 20 steps so that a requeued job
has something to resume from."""
GRID = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--no-progress"]
NOT_COMPARED = {"tokens_per_s", "train_time_s", "elapsed_s", "seconds", "command", "run_dir"}
"""timing fields and paths: everything else of results.csv, results.json and summary.json must be equal
(results.json's floats to 1e-9 relative, ``_assert_same``)."""


def _without_timing(x):
    if isinstance(x, dict):
        return {k: _without_timing(v) for k, v in x.items() if k not in NOT_COMPARED}
    if isinstance(x, list):
        return [_without_timing(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return "nan"
    return x


def _assert_same(a, b, where: str = "results.json") -> None:
    """``a == b``, floats to 1e-9 relative: the comparison-level statistics of results.json (the Procrustes
    similarities of update_dynamics) are computed by the collecting process, whose torch thread count
    moves their last bits; the per-run numbers (results.csv, summary.json) are compared exactly."""
    if isinstance(a, float) and isinstance(b, float):
        assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12), (where, a, b)
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), (where, sorted(a.keys() ^ b.keys()))
        for k in a:
            _assert_same(a[k], b[k], f"{where}.{k}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{where}[{i}]")
    else:
        assert a == b, (where, a, b)


def _rows(out: Path) -> dict[tuple[str, str], dict[str, str]]:
    rows = csv.DictReader((out / "results.csv").read_text(encoding="utf-8").splitlines())
    return {(r["strategy"], r["seed"]): {k: v for k, v in r.items() if k not in NOT_COMPARED} for r in rows}


def _summaries(out: Path) -> dict[str, dict]:
    return {str(p.parent.relative_to(out)): _without_timing(json.loads(p.read_text(encoding="utf-8")))
            for p in sorted((out / "runs").glob("*/seed*/summary.json"))}  # fmt: skip


def _jobs(out: Path) -> dict[tuple[str, int], str]:
    raw = json.loads((out / "slurm-jobs.json").read_text(encoding="utf-8"))
    return {(j["strategy"], j["seed"]): j["job_id"] for j in raw["jobs"]}


def _wait_for(what: str, cond, timeout: float = 300.0, every: float = 0.2):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if found := cond():
            return found
        time.sleep(every)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


@pytest.fixture(scope="module")
def local_grid(tmp_path_factory) -> Path:
    """The reference: tied,untied x seeds 0-1 trained here (--launcher local)."""
    out = tmp_path_factory.mktemp("local") / "grid"
    assert cli.main([*GRID, "--seeds", "2", "--out", str(out), *OVER]) == 0
    return out


def _requeue_mid_run(cluster, out: Path, run: tuple[str, int]) -> str:
    """Requeue the job of ``run`` once it has a checkpoint and has not finished, and release it at once
    (Slurm holds a requeued job back for about two minutes). Returns the job id.

    Slurm sends the job SIGTERM, which submitit's jobs ignore, and SIGKILL some seconds later (here about
    5 s; KillWait on a cluster); the test sends that SIGKILL itself right after the requeue, so that the
    few seconds of a tiny run cannot finish it in between."""
    run_dir = out / "runs" / run[0] / f"seed{run[1]}"
    _wait_for(f"a checkpoint of {run_dir}", lambda: checkpoints.latest(run_dir) is not None, every=0.05)
    job = _jobs(out)[run]
    pids = cluster.task_pids(job)
    assert pids, f"no process of job {job} found"
    cluster.run("scontrol", "requeue", job)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not (run_dir / "summary.json").is_file(), "the run finished before it was stopped; make it longer"
    queued = ["squeue", "--noheader", "--array", "--jobs", job, "--format=%T"]
    _wait_for(f"job {job} back in the queue", lambda: cluster.run(*queued, check=False).strip() == "PENDING")
    cluster.release_requeued(job)
    return job


def _preempt_mid_run(cluster, out: Path, run: tuple[str, int]) -> str:
    """Send the job of ``run`` submitit's signal (SIGUSR2: what Slurm sends, through ``--signal``, 90 s
    before a time limit) once the run has a checkpoint: the job calls ``TrainJob.checkpoint``, requeues
    itself and exits; released at once. Returns the job id."""
    run_dir = out / "runs" / run[0] / f"seed{run[1]}"
    _wait_for(f"a checkpoint of {run_dir}", lambda: checkpoints.latest(run_dir) is not None, every=0.05)
    job = _jobs(out)[run]
    pids = cluster.task_pids(job)
    assert pids, f"no process of job {job} found"
    for pid in pids:  # as slurmstepd delivers it (`scancel --signal=USR2` retries while the job requeues itself)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGUSR2)
    queued = ["squeue", "--noheader", "--array", "--jobs", job, "--format=%T"]
    _wait_for(f"job {job} back in the queue", lambda: cluster.run(*queued, check=False).strip() == "PENDING")
    assert not (run_dir / "summary.json").is_file(), "the run finished before it was stopped; make it longer"
    cluster.release_requeued(job)
    return job


def test_a_grid_with_a_requeued_job_equals_the_same_grid_trained_locally(slurm_cluster, local_grid, tmp_path):
    out = tmp_path / "grid"
    cmd = [sys.executable, "-m", "embtie", *GRID, "--seeds", "2", "--out", str(out), *OVER,
           "--launcher", "slurm", "--time", "10", "--poll", "1"]  # fmt: skip
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, env=slurm_cluster.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        _wait_for("the jobs file", lambda: (out / "slurm-jobs.json").is_file())
        preempted = _preempt_mid_run(slurm_cluster, out, ("tied", 0))  # first wave
        job = _requeue_mid_run(slurm_cluster, out, ("untied", 1))  # last wave
        output, _ = proc.communicate(timeout=600)
    finally:
        proc.kill()
    print(f"slurm grid (4 runs, one requeued, one preempted): {time.monotonic() - t0:.0f} s")
    assert proc.returncode == 0, output[-3000:]
    assert "submitted 4 runs to Slurm as array job" in output and "report:" in output
    assert "Restarts=1" in slurm_cluster.run("scontrol", "show", "job", job)
    jobs = json.loads((out / "slurm-jobs.json").read_text())["jobs"]
    log = next(Path(j["stderr"]) for j in jobs if j["job_id"] == job)
    assert "took over the stale lock" in log.read_text(), log.read_text()[-2000:]  # the second start resumed
    assert "Restarts=1" in slurm_cluster.run("scontrol", "show", "job", preempted)
    said = Path(next(j["stdout"] for j in jobs if j["job_id"] == preempted)).read_text()
    assert f"Requeued job {preempted}" in said and said.count("Starting with JobEnvironment") == 2, said[-2000:]
    assert _rows(out) == _rows(local_grid)
    assert _summaries(out) == _summaries(local_grid) and len(_summaries(out)) == 4
    ours, theirs = (json.loads((d / "results.json").read_text()) for d in (out, local_grid))
    _assert_same(_without_timing(ours), _without_timing(theirs))


def test_dry_run_prints_one_line_per_run_and_submits_nothing(slurm_cluster, tmp_path, capsys):
    out = tmp_path / "grid"
    before = slurm_cluster.run("squeue", "--noheader", "--states=all", "--format=%i")
    argv = [*GRID, "--seeds", "2", "--out", str(out), *OVER, "--launcher", "slurm", "--dry-run",
            "--slurm-partition", "debug", "--mem", "1G", "--time", "1:00:00", "--slurm-arg", "qos=normal"]  # fmt: skip
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("plan: 4 runs with --launcher slurm; nothing is trained or submitted")
    assert [ln.split("\t")[:3] for ln in lines[1:]] == [
        [s, f"seed {k}", str(out / "runs" / s / f"seed{k}")] for s in ("tied", "untied") for k in (0, 1)
    ]
    assert all("partition debug, 1 CPU, 0 GPUs, time 60 min, mem 1G, --qos=normal\ttrain" in ln for ln in lines[1:])
    assert not out.exists()
    assert slurm_cluster.run("squeue", "--noheader", "--states=all", "--format=%i") == before


def _all_ended(cluster, out: Path) -> bool:
    jobs = ",".join(sorted({j.split("_")[0] for j in _jobs(out).values()}))
    states = cluster.run("squeue", "--noheader", "--array", "--jobs", jobs, "--format=%T", check=False).split()
    return not any(s in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for s in states)


def test_no_wait_submits_once_and_the_same_command_collects(slurm_cluster, local_grid, tmp_path, capsys):
    out = tmp_path / "grid"
    argv = [*GRID, "--seeds", "1", "--out", str(out), *OVER, "--launcher", "slurm", "--no-wait"]
    assert cli.main(argv) == 0
    first = capsys.readouterr().out
    assert "submitted 2 runs to Slurm as array job" in first and "2 still queued or running" in first
    jobs = _jobs(out)
    assert cli.main(argv) == 0  # at once again: the jobs are in flight, nothing is submitted twice
    second = capsys.readouterr().out
    assert "submitted" not in second and _jobs(out) == jobs
    _wait_for("the jobs to end", lambda: _all_ended(slurm_cluster, out), every=1)
    assert cli.main(argv) == 0
    third = capsys.readouterr().out
    assert "submitted" not in third and "report:" in third and _jobs(out) == jobs
    local = _rows(local_grid)
    assert _rows(out) == {k: local[k] for k in (("tied", "0"), ("untied", "0"))}


def test_a_run_that_fails_on_the_cluster_is_named_with_its_log_and_submitted_again(slurm_cluster, tmp_path, capsys):
    out = tmp_path / "grid"
    argv = [*GRID, "--seeds", "1", "--out", str(out), *OVER, "--launcher", "slurm", "--poll", "1"]
    assert cli.main([*argv, "--no-wait", "--slurm-arg", "hold"]) == 0  # held: nothing starts yet
    blocked = out / "runs" / "untied" / "seed0"
    blocked.parent.mkdir(parents=True)
    blocked.write_text("not a folder")  # the job cannot make its run directory
    slurm_cluster.run("scontrol", "release", ",".join(_jobs(out).values()))
    capsys.readouterr()
    assert cli.main(argv) == 1
    captured = capsys.readouterr()
    job = _jobs(out)[("untied", 0)]
    log = out / "slurm" / f"{job}_0_log.err"
    failure = f"untied seed 0 failed on the cluster (job {job}: FileExistsError"
    assert f"embtie compare: error: {failure}" in captured.err and f"log: {log}" in captured.err, captured.err
    assert "Traceback" in log.read_text()
    assert "1 of 2 runs finished; 1 failed" in captured.out and "report:" in captured.out
    assert set(_rows(out)) == {("tied", "0")}  # the report covers what finished
    blocked.unlink()
    assert cli.main(argv) == 0
    again = capsys.readouterr().out
    assert f"embtie: note: {failure}" in again and "submitting it again" in again
    assert "submitted 1 run to Slurm as job" in again and _jobs(out)[("untied", 0)] != job
    assert set(_rows(out)) == {("tied", "0"), ("untied", "0")}
