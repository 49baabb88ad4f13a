"""``--launcher slurm``: one Slurm job per run (the runs of one submission form a job array), submitted
through submitit.

A launch looks at the jobs file (``slurm_jobs``) and at ``squeue``: runs that are finished are left
alone, runs whose job is still pending or running are not submitted again, and every other unfinished
run is submitted (again: a run whose earlier job failed is named with that job's log, and resumes from
its checkpoints). Then, by default, it waits, printing each run as it finishes or fails; with
``wait=False`` (``--no-wait``) it returns at once and the same command collects the runs later. Each job
resumes its run from the run's own checkpoints (``slurm_task.TrainJob``), so a preempted or requeued job
continues where it stopped. Logs and submitit's files are in ``DIR/slurm``."""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections import Counter
from pathlib import Path
from types import ModuleType

from embtie.comparison.grid import CompareSpec, PlannedRun, plan
from embtie.comparison.launchers import slurm_jobs, slurm_queue
from embtie.comparison.launchers.base import FailedRun, Launched, Launcher, LaunchError
from embtie.comparison.launchers.slurm_jobs import SubmittedJob
from embtie.comparison.launchers.slurm_resources import MAX_TIMEOUTS, SlurmResources
from embtie.comparison.launchers.slurm_task import TrainJob
from embtie.progress import bar as progress_bar
from embtie.progress import note

SLURM_FOLDER = "slurm"
"""DIR/slurm: the jobs' logs and submitit's pickles."""
POLL_S = 30.0
"""seconds between two looks at the queue while waiting (--poll)."""

Key = tuple[str, int]


def submitit_module() -> ModuleType:
    """submitit, or a one-line ``LaunchError`` saying how to install it."""
    try:
        import submitit
    except ImportError:
        raise LaunchError(
            "--launcher slurm needs submitit, which is not installed: pip install 'embtie[slurm]'"
        ) from None
    return submitit


def _key(r: PlannedRun) -> Key:
    return r.strategy, r.seed


def _cpus(r: PlannedRun) -> int:
    return r.cfg.train.threads or 1


class SlurmLauncher(Launcher):
    """Submit the unfinished runs of a comparison as Slurm jobs, and wait for them unless ``wait`` is False."""

    name = "slurm"

    def __init__(self, resources: SlurmResources, wait: bool = True, poll_s: float = POLL_S) -> None:
        self.res, self.wait, self.poll_s = resources, wait, poll_s

    def resources(self, run: PlannedRun) -> str:
        return "Slurm job: " + self.res.describe(_cpus(run))

    def launch(self, spec: CompareSpec, progress: bool = True) -> Launched:
        submitit_module()
        slurm_queue.require_clients()
        runs = plan(spec)
        jobs = slurm_jobs.read(spec.out_dir)
        live = slurm_queue.states([j.job_id for j in jobs.values()])
        flying = {k for k, j in jobs.items() if slurm_queue.in_flight(live.get(j.job_id))}
        order = sorted(runs, key=lambda r: (r.seed, spec.strategies.index(r.strategy)))  # seed-major, as locally
        todo = [r for r in order if not r.done and _key(r) not in flying]
        for r in todo:
            if _key(r) in jobs:
                earlier = self._failure(r, jobs[_key(r)], live.get(jobs[_key(r)].job_id))
                print(f"embtie: note: {earlier.describe()}; submitting it again (it resumes from its checkpoints)")
        if todo:
            jobs.update(self._submit(todo, spec))
            slurm_jobs.write(spec.out_dir, jobs)
        if self.wait:
            self._wait(runs, jobs, progress)
        return self._outcome(runs, jobs)

    def _submit(self, todo: list[PlannedRun], spec: CompareSpec) -> dict[Key, SubmittedJob]:
        """Submit ``todo`` as one job array (one job when alone); their records for the jobs file."""
        submitit = submitit_module()
        folder = (Path(spec.out_dir) / SLURM_FOLDER).resolve()
        executor = submitit.SlurmExecutor(folder=folder, max_num_timeout=MAX_TIMEOUTS)
        executor.update_parameters(**self.res.executor_parameters(max(map(_cpus, todo)), f"embtie-{spec.out_dir.name}"))
        chatter = io.StringIO()  # submitit prints sbatch's stderr before raising; the error below says it once
        try:
            with contextlib.redirect_stderr(chatter), executor.batch():
                submitted = [executor.submit(TrainJob(r.cfg, r.run_dir.resolve(), r.analysis)) for r in todo]
        except (submitit.core.utils.FailedJobError, submitit.core.utils.FailedSubmissionError, OSError) as e:
            lines = [ln.strip() for ln in (str(e) or chatter.getvalue()).splitlines() if ln.strip()]
            said = next((ln for ln in lines if "error" in ln.lower()), lines[-1] if lines else type(e).__name__)
            raise LaunchError(f"sbatch refused the jobs of {spec.out_dir}: {said}") from None
        now = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        records = {
            _key(r): SubmittedJob(
                strategy=r.strategy,
                seed=r.seed,
                run_dir=str(r.run_dir),
                job_id=str(j.job_id),
                stdout=str(j.paths.stdout),
                stderr=str(j.paths.stderr),
                result=str(j.paths.result_pickle),
                submitted=now,
            )
            for r, j in zip(todo, submitted)
        }
        first = submitted[0].job_id.split("_", 1)[0]
        what = f"job {first}" if len(todo) == 1 else f"array job {first} ({len(todo)} tasks)"
        print(f"submitted {len(todo)} run{'s' if len(todo) != 1 else ''} to Slurm as {what}; logs in {folder}")
        return records

    def _wait(self, runs: list[PlannedRun], jobs: dict[Key, SubmittedJob], progress: bool) -> None:
        """Until no run of ``runs`` has a job in flight: report each run as it finishes or fails."""
        waiting = {_key(r): r for r in runs if not r.done and _key(r) in jobs}
        bar = progress_bar(total=len(runs), initial=len(runs) - len(waiting), desc="slurm", unit="run", leave=True,
                           enabled=progress)  # fmt: skip
        running: set[Key] = set()
        try:
            while waiting:
                live = slurm_queue.states([jobs[k].job_id for k in waiting])  # before the files: no race
                for k, r in list(waiting.items()):
                    state = live.get(jobs[k].job_id)
                    if r.done:
                        del waiting[k]
                        if progress:
                            bar.write(f"    {r.strategy} seed {r.seed}: {_result_line(r)} (job {jobs[k].job_id})")
                        bar.update(1)
                    elif not slurm_queue.in_flight(state):
                        del waiting[k]  # named again at the end (``Launched.failed``)
                        if progress:
                            note(bar, f"embtie: {self._failure(r, jobs[k], state).describe()}")
                    elif state == "RUNNING" and k not in running and progress:
                        running.add(k)
                        bar.write(f"running {r.strategy} seed {r.seed} (job {jobs[k].job_id}) -> {r.run_dir}")
                counts = Counter((live.get(jobs[k].job_id) or "?").lower() for k in waiting)
                bar.set_postfix_str(", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
                if waiting:
                    time.sleep(self.poll_s)
        except KeyboardInterrupt:
            note(bar, "embtie: stopped waiting; the jobs go on on the cluster: run the same command again to collect")
            raise
        finally:
            bar.close()

    def _outcome(self, runs: list[PlannedRun], jobs: dict[Key, SubmittedJob]) -> Launched:
        live = slurm_queue.states([jobs[_key(r)].job_id for r in runs if not r.done and _key(r) in jobs])
        out = Launched(runs=runs)
        for r in runs:
            job = jobs.get(_key(r))
            if r.done or job is None:
                continue
            state = live.get(job.job_id)
            if slurm_queue.in_flight(state):
                out.in_flight.append(r)
            else:
                out.failed.append(self._failure(r, job, state))
        return out

    @staticmethod
    def _failure(r: PlannedRun, job: SubmittedJob, state: str | None) -> FailedRun:
        """Why ``job`` ended without finishing ``r``: the exception it raised (submitit's result file), or
        the state squeue last showed."""
        why = f"ended {state}" if state else "ended without a result (cancelled, out of time or memory, node failure)"
        result = Path(job.result)
        if result.is_file():
            submitit = submitit_module()
            with contextlib.suppress(Exception):  # a result file cut short: the state says enough
                status, value = submitit.core.utils.pickle_load(result)
                if status == "error":
                    lines = [ln for ln in str(value).splitlines() if ln.strip()]
                    why = lines[-1].strip() if lines else "it raised an error"
                elif status == "success":
                    why = "it returned but the run is not finished (were its files removed?)"
        return FailedRun(run=r, job_id=job.job_id, why=why, log=Path(job.stderr))


def _result_line(r: PlannedRun) -> str:
    """valid perplexity and step-0 loss of a finished run, from its summary.json."""
    try:
        s = json.loads((r.run_dir / "summary.json").read_text(encoding="utf-8"))
        return f"valid ppl {s['valid_ppl']:.1f}, step-0 loss {s['step0_loss']:.2f}"
    except (OSError, ValueError, KeyError, TypeError):
        return "finished"
