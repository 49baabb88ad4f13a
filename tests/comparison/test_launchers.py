"""``embtie compare --launcher``, without a cluster: the Slurm options read as sbatch reads them (and as
submitit writes them into its batch script), --dry-run prints the plan and writes nothing, options that
do not fit together and a missing submitit or sbatch are one-line errors, and the bookkeeping of a launch
against a stand-in queue (fake sbatch/squeue on PATH): a job still running is not submitted twice, a run
whose job failed is named with its error and log and submitted again, and a job that ends without
finishing its run is reported (exit status 1). The real cluster: test_slurm_launcher.py."""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import pytest

from embtie import cli
from embtie.comparison.launchers import slurm_jobs
from embtie.comparison.launchers.slurm_resources import SlurmResources, parse_mem, parse_slurm_args, parse_time
from embtie.errors import ConfigError
from tiny_runs import TINY_GPT_BODY

GRID = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "1", "--no-progress", *TINY_GPT_BODY,
        "train.max_steps=2", "train.eval_every=0"]  # fmt: skip


@pytest.mark.parametrize(
    ("text", "minutes"),
    [("90", 90), ("1:30:00", 90), ("0:30", 1), ("2-00", 2880), ("1-02:03", 1563), ("1-00:00:01", 1441)],
)
def test_time_limits_are_read_as_sbatch_reads_them(text, minutes):
    assert parse_time(text) == minutes


@pytest.mark.parametrize("bad", ["1h", "", "0", "1:2:3:4"])
def test_a_bad_time_limit_is_refused(bad):
    with pytest.raises(ConfigError, match="--time"):
        parse_time(bad)


def test_memory_and_extra_flags():
    assert parse_mem("16g") == "16G" and parse_mem("8000") == "8000"
    for bad in ("16GB", "0", "lots"):
        with pytest.raises(ConfigError, match="--mem"):
            parse_mem(bad)
    flags = parse_slurm_args(["qos=high", "exclusive", "--constraint=a100", "mail_type=END"])
    assert flags == {"qos": "high", "exclusive": True, "constraint": "a100", "mail-type": "END"}
    for bad, said in (("output=x", "embtie sets --output itself"), ("time=5", "use --time"),
                      ("qos=", "has no value"), ("bad key=1", "KEY=VALUE")):  # fmt: skip
        with pytest.raises(ConfigError, match=said):
            parse_slurm_args([bad])


def test_the_resources_become_submitits_batch_script(tmp_path):
    slurm = pytest.importorskip("submitit.slurm.slurm")
    extra: dict[str, str | bool] = {"qos": "high", "exclusive": True}
    res = SlurmResources(partition="gpu", gpus_per_run=1, time_min=90, mem="16G", extra=extra)
    script = slurm._make_sbatch_string(command="true", folder=tmp_path, **res.executor_parameters(4, "embtie-x"))
    for line in ("--partition=gpu", "--gpus-per-node=1", "--time=90", "--mem=16G", "--cpus-per-task=4",
                 "--job-name=embtie-x", "--qos=high", "--exclusive\n"):  # fmt: skip
        assert f"#SBATCH {line}" in script + "\n", line
    assert res.describe(4) == "partition gpu, 4 CPUs, 1 GPU, time 90 min, mem 16G, --qos=high, --exclusive"


@pytest.mark.parametrize("launcher", ["local", "slurm"])
def test_dry_run_prints_the_plan_and_writes_nothing(tmp_path, capsys, launcher):
    out = tmp_path / "grid"
    assert cli.main([*GRID, "--out", str(out), "--launcher", launcher, "--dry-run"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"plan: 2 runs with --launcher {launcher}; nothing is trained or submitted"
    rows = [ln.split("\t") for ln in lines[1:]]
    assert [r[:3] for r in rows] == [["tied", "seed 0", str(out / "runs/tied/seed0")],
                                     ["untied", "seed 0", str(out / "runs/untied/seed0")]]  # fmt: skip
    resources = "this process, 1 thread" if launcher == "local" else "Slurm job: partition (default), 1 CPU, 0 GPUs"
    assert all(r[3].startswith(resources) and r[4] == "train" for r in rows), rows
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--slurm-partition", "gpu"], "--slurm-partition is an option of --launcher slurm"),
        (["--no-wait"], "--no-wait is an option of --launcher slurm"),
        (["--launcher", "slurm", "--jobs", "2"], "--jobs is for --launcher local"),
        (["--launcher", "slurm", "--no-wait", "--until-decided", "--seeds", "2"], "leave out --no-wait"),
        (["--launcher", "slurm", "--time", "1h"], "--time '1h' is not a Slurm time"),
        (["--launcher", "slurm", "--slurm-arg", "array=0-3"], "embtie sets --array itself"),
        (["--launcher", "slurm", "--gpus-per-run", "2"], "trains in one process, on one GPU"),
        (["--dry-run", "--report-only"], "give one of them"),
    ],
)
def test_options_that_do_not_fit_are_one_line_errors(tmp_path, capsys, extra, said):
    assert cli.main([*GRID, "--out", str(tmp_path / "grid"), *extra]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and said in err[0], err
    assert not (tmp_path / "grid").exists()


def test_without_submitit_the_error_says_how_to_install_it(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit raises ImportError
    assert cli.main([*GRID, "--out", str(tmp_path / "grid"), "--launcher", "slurm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs submitit, which is not installed: pip install 'embtie[slurm]'" in err[0]


def test_without_sbatch_on_path_the_error_says_so(tmp_path, capsys, monkeypatch):
    pytest.importorskip("submitit")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert cli.main([*GRID, "--out", str(tmp_path / "grid"), "--launcher", "slurm"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "sbatch and squeue are not on PATH" in err[0], err


# --------------------------------------------------------------------------- a stand-in queue


@pytest.fixture
def fake_queue(tmp_path, monkeypatch):
    """sbatch (answers "Submitted batch job 99" and runs nothing), srun, and squeue (prints the lines of
    the file it returns) on PATH."""
    pytest.importorskip("submitit")
    bin_dir, listing = tmp_path / "bin", tmp_path / "squeue.txt"
    bin_dir.mkdir()
    listing.write_text("")
    scripts = {"sbatch": "echo 'Submitted batch job 99'", "srun": "exit 0", "squeue": f"cat '{listing}'"}
    for name, body in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    return listing


def _record(out: Path, strategy: str, job_id: str) -> slurm_jobs.SubmittedJob:
    logs = out / "slurm"
    return slurm_jobs.SubmittedJob(
        strategy=strategy,
        seed=0,
        run_dir=str(out / "runs" / strategy / "seed0"),
        job_id=job_id,
        stdout=str(logs / f"{job_id}_0_log.out"),
        stderr=str(logs / f"{job_id}_0_log.err"),
        result=str(logs / f"{job_id}_0_result.pkl"),
        submitted="2030-01-01T09:00:00+0000",
    )


def test_a_running_job_is_left_alone_and_a_failed_one_is_named_and_submitted_again(tmp_path, capsys, fake_queue):
    out = tmp_path / "grid"
    (out / "slurm").mkdir(parents=True)
    tied, untied = _record(out, "tied", "5_0"), _record(out, "untied", "5_1")
    slurm_jobs.write(out, {tied.key: tied, untied.key: untied})
    with open(untied.result, "wb") as f:  # what submitit writes when the function raised
        pickle.dump(("error", "Traceback (most recent call last):\n  ...\nValueError: boom\n"), f)
    fake_queue.write_text("5_0|RUNNING\n99|PENDING\n")
    assert cli.main([*GRID, "--out", str(out), "--launcher", "slurm", "--no-wait"]) == 0
    said = capsys.readouterr().out
    assert (f"embtie: note: untied seed 0 failed on the cluster (job 5_1: ValueError: boom); log: {untied.stderr}; "
            "submitting it again") in said  # fmt: skip
    assert "submitted 1 run to Slurm as job 99" in said and "0 of 2 runs finished; 2 still queued or running" in said
    jobs = slurm_jobs.read(out)
    assert jobs[("tied", 0)] == tied and jobs[("untied", 0)].job_id == "99"
    script = (out / "slurm" / "99_submission.sh").read_text()
    assert all(f"#SBATCH --{flag}\n" in script for flag in ("cpus-per-task=1", "time=60", "job-name=embtie-grid"))
    assert json.loads((out / slurm_jobs.JOBS_FILE).read_text())["version"] == 1


def test_a_job_that_ends_without_finishing_its_run_is_reported_with_its_log(tmp_path, capsys, fake_queue):
    out = tmp_path / "grid"
    args = [*GRID, "--strategies", "tied", "--out", str(out), "--launcher", "slurm", "--poll", "0.01"]
    assert cli.main(args) == 1  # squeue never lists job 99: it ended at once, without a result
    captured = capsys.readouterr()
    log = out / "slurm" / "99_0_log.err"
    assert "embtie compare: error: tied seed 0 failed on the cluster (job 99: ended without a result" in captured.err
    assert f"log: {log}" in captured.err and "0 of 1 runs finished; 1 failed" in captured.out
    assert "report:" not in captured.out  # nothing finished, nothing to report


def test_a_refused_submission_is_one_line_and_records_nothing(tmp_path, capsys, fake_queue):
    sbatch = fake_queue.parent / "bin" / "sbatch"
    sbatch.write_text("#!/bin/sh\necho 'sbatch: error: invalid partition specified: gpu' >&2\nexit 1\n")
    out = tmp_path / "grid"
    assert cli.main([*GRID, "--out", str(out), "--launcher", "slurm", "--slurm-partition", "gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    said = f"error: sbatch refused the jobs of {out}: sbatch: error: invalid partition specified: gpu"
    assert len(err) == 1 and err[0].endswith(said), err
    assert not (out / slurm_jobs.JOBS_FILE).exists()
