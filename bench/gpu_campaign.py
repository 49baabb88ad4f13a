"""The GPU campaign (issue 29): the CUDA tests, the benchmarks on CUDA and one reproduction slice the CPU
cannot reach, as steps that each finish within one 10-minute command and pack what they made.

    python -m bench.gpu_campaign run STEP|all|queue [--dry-run] [--out DIR] [--work DIR]
    python -m bench.gpu_campaign unpack DIR/gpu-*.tar.gz [--into .]      (here, after the GPU machine)
    python -m bench.gpu_campaign steps                                   (the steps and their commands)

``make gpu STEP=...`` runs one step, ``make gpu`` the queue: the steps whose results are not yet in the
repository (``results/campaign-gpu/STEP/status.json``, ok, not a dry run), in order, starting with
``first``, so each lending resumes where the last one stopped (commit what ``unpack`` lands). Neither
needs the project's virtual environment: the machine's own python3 and torch run them, with ``src`` and
the repository root on PYTHONPATH. What the machine lacks travels as wheels (``make gpu-wheels``:
``.gpu/wheels``) and is installed, without an index, into WORK/site; the data travels in ``.gpu/data``
(``make gpu-data``) and EMBTIE_DATA points there when it is present.

Each step writes under WORK (default ``.gpu/work``) the paths it will have in the repository —
``results/campaign-gpu/STEP/`` (log.txt, status.json, the step's BENCHMARKS-cuda.md sections or pytest
report) and, for the slice, ``results/multi30k-transformer-gpu/`` — and packs them, checkpoints left out,
into OUT/gpu-STEP.tar.gz ($OUT on a lent machine, else ``gpu-out``). A step stops its commands at its
time budget (9 minutes) and packs what they finished. ``unpack`` extracts the packs into the repository
and merges their benchmark sections into BENCHMARKS-cuda.md, keeping its preamble and other sections.

``--dry-run`` runs every step on the CPU at tiny sizes (seconds to a minute each): the same commands with
small arguments, so that a test can run the whole campaign where no GPU is lent.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import signal
import subprocess
import sys
import tarfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOGS = Path("results/campaign-gpu")
"""where each step's log, status and benchmark sections land in the repository."""
PACK_LIMIT = 16 * 2**20
"""the largest file a lent machine sends back."""


@dataclass(frozen=True)
class Slice:
    """The reproduction slice: a comparison at its preset's full budget, one step per strategy, then a report."""

    preset: str = "multi30k-transformer-small"
    strategies: tuple[str, ...] = ("tied", "l2norm", "cosine")
    seeds: int = 5
    out: Path = Path("results/multi30k-transformer-gpu")
    full: tuple[str, ...] = ("train.device=cuda", "train.threads=2")
    """on the GPU: the preset as it is (5 epochs), seeds 0..4 with the seeding scheme every comparison uses."""
    tiny: tuple[str, ...] = (
        "train.device=cpu", "train.threads=1", "data.vocab_size=200", "data.train_pairs=600", "data.valid_pairs=24",
        "data.max_tokens=1200", "data.beam=2", "model.dim=32", "model.enc_layers=1", "model.dec_layers=1",
        "model.heads=2", "model.ffn_dim=64", "train.epochs=null", "train.max_steps=8", "train.warmup_steps=2",
        "train.log_every=4",
    )  # fmt: skip
    tiny_seeds: int = 1

    def compare(self, py: list[str], strategies: list[str], dry: bool, work: Path, *extra: str) -> list[str]:
        seeds = self.tiny_seeds if dry else self.seeds
        return [*py, "-m", "embtie", "--quiet", "compare", self.preset, "--strategies", ",".join(strategies),
                "--seeds", str(seeds), "--jobs", str(seeds), "--out", str(work / self.out),
                *(self.tiny if dry else self.full), *extra]  # fmt: skip


SLICE = Slice()


BASE_WHEELS = (".gpu/wheels/sacremoses-0.2.0-py3-none-any.whl", ".gpu/wheels/platformdirs-4.14.8-py3-none-any.whl")
"""what embtie itself needs there and the machine lacks (the Makefile's GPU_WHEELS pins them)."""
FUSED_WHEELS = (
    ".gpu/wheels/liger_kernel-0.8.5-py3-none-any.whl",
    ".gpu/wheels/cut_cross_entropy-25.1.1-py3-none-any.whl",
)
"""the fused losses the `first` and `lce` steps compare with: carried only there (each MiB counts)."""


@dataclass(frozen=True)
class Step:
    name: str
    about: str
    commands: Callable[[list[str], bool, Path], list[list[str]]]
    """(python, dry run, work dir) -> the commands, run in the repository root in order."""
    packs: Callable[[Path], list[Path]] = lambda work: []
    """work dir -> the files (beyond the step's log folder) that go into its pack."""
    budget_s: float = 540.0
    version: int = 1
    """raised when a step measures something new: a committed status.json of an older version does not count
    as done (``done``), so the queue runs the step again."""
    carry: tuple[str, ...] = BASE_WHEELS
    """what the lent machine's call names in ``carry``: with the tracked tree (about 55 MiB, growing with the
    committed results) it must stay under the 64 MiB a call sends, so each step carries only the wheels and the
    data its commands read."""


def _bench(py: list[str], dry: bool, work: Path, step: str, full: list[str], tiny: list[str]) -> list[list[str]]:
    out = str(work / LOGS / step / "BENCHMARKS-cuda.md")
    return [[*py, "-m", "bench", *(tiny if dry else full), "--out", out]]


def _tests(py: list[str], dry: bool, work: Path) -> list[list[str]]:
    files = ["tests/test_cuda.py"] if dry else ["tests/test_cuda.py", "tests/sharing/test_lce_anchor.py"]
    xml = str(work / LOGS / "tests" / "pytest.xml")
    return [[*py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *files, "--junitxml", xml]]


def _slice_runs(strategy: str) -> Callable[[Path], list[Path]]:
    def files(work: Path) -> list[Path]:
        root = work / SLICE.out / "runs" / strategy
        # the weights and TensorBoard's copy of the metrics stay behind (results/.gitignore leaves them out too)
        left_out = {"checkpoints", "tb"}
        return [p for p in sorted(root.rglob("*")) if p.is_file() and not left_out & set(p.relative_to(root).parts)]

    return files


def _report_files(work: Path) -> list[Path]:
    return [p for p in sorted((work / SLICE.out).glob("*")) if p.is_file()]


GPU_BENCH = ["--device", "cuda", "--threads", "4"]
FIRST_STRATEGIES = ("tied", "untied", "l2norm", "cosine")
"""the strategies the first step's version 1 measured compiled and eager at GPT-2 small (the rest: step
compile-rest)."""
TRAIN_STRATEGIES = ("tied", "untied", "l2norm")
"""the strategies the first step trains in bf16, compiled, beside the nanoGPT-style reference."""


def _rest() -> str:
    from embtie import sharing

    return ",".join(n for n in sharing.names() if n not in FIRST_STRATEGIES)


def _compile_args(strategies: str, budget_s: int) -> list[str]:
    return ["--compile-shapes", "gpt2", "--compile-strategies", strategies, "--compile-budget-s", str(budget_s)]


FIRST_SECTIONS = ["--only", "tiled_loss,train_bf16"]
FIRST_GPU = [*GPU_BENCH, "--repeats", "3", *FIRST_SECTIONS, "--tiled-budget-s", "170", "--train-batch", "32",
             "--train-strategies", ",".join(TRAIN_STRATEGIES), "--train-budget-s", "150"]  # fmt: skip
"""the first step on the GPU: the loss grid starts no case after 170 s, the training no model after 150 s of
its own, so that both end within the step's 8 minutes with the machine's python and CUDA start."""
TRAIN_GPU = [*GPU_BENCH, "--repeats", "5", "--only", "train_bf16", "--train-batch", "32", "--train-strategies",
             "tied,tied@chunked,untied,l2norm", "--train-budget-s", "170"]  # fmt: skip
"""the train step: the first step's training table again after ``auto`` stopped picking the tiled loss on CUDA,
with tied's plain and chunked losses side by side (no new model after 170 s). Version 1 (2026-11-28) also ran
tied@tiled (0.309x the reference) and measured the chunked loss before its operator kept bf16 autocast."""
FIRST_DRY = ["--device", "cpu", "--repeats", "1", *FIRST_SECTIONS, "--tiny", "--train-strategies", "tied"]
TINY_COMPILE = ["--device", "cpu", "--repeats", "1", "--compile-shapes", "tiny", "--compile-strategies", "tied"]
STEPS: dict[str, Step] = {
    "first": Step(
        "first",
        "what matters most, in one command of at most 8 minutes: the tiled loss against plain, chunked, "
        "Liger-Kernel and Cut Cross-Entropy on a grid of N and V (time, extra memory; fp32 and bf16), then "
        "bf16 compiled training of GPT-2 small at 32 x 1024 tokens, embtie's "
        f"{', '.join(TRAIN_STRATEGIES)} against a nanoGPT-style model (tokens/s, MFU). Version 1 (2026-11-27) "
        f"measured compiled vs eager fp32 at 8 x 256 with {', '.join(FIRST_STRATEGIES)} and the fused-loss anchor",
        lambda py, dry, work: _bench(
            py,
            dry,
            work,
            "first",
            FIRST_GPU,
            FIRST_DRY,
        ),
        budget_s=480.0,
        version=2,
        carry=(*BASE_WHEELS, *FUSED_WHEELS),
    ),
    "train": Step(
        "train",
        "bf16 compiled training of GPT-2 small at 32 x 1024 tokens again, after `auto` stopped picking the tiled "
        "loss on CUDA (the first step measured it at 2.2-5.4x plain's time): embtie's tied with its default "
        "(plain) and chunked losses, untied and l2norm against the nanoGPT-style model. Version 2: the chunked "
        "loss's operator keeps the caller's bf16 autocast under torch.compile (version 1 measured it in float32)",
        lambda py, dry, work: _bench(
            py,
            dry,
            work,
            "train",
            TRAIN_GPU,
            [
                "--device",
                "cpu",
                "--repeats",
                "1",
                "--only",
                "train_bf16",
                "--tiny",
                "--train-strategies",
                "tied,tied@chunked",
            ],
        ),
        budget_s=300.0,
        version=2,
    ),
    "tests": Step(
        "tests",
        "the CUDA tests (tests/test_cuda.py, the fused-loss anchor's tests)",
        _tests,
        carry=(*BASE_WHEELS, ".gpu/data/ptb"),
    ),
    "bench": Step(
        "bench",
        "python -m bench --device cuda: every default section but the fused-loss anchor",
        lambda py, dry, work: _bench(
            py,
            dry,
            work,
            "bench",
            [*GPU_BENCH, "--only", "peak,loss,hadamard,overhead,hf_gpt2,beam,conv_mt"],
            ["--device", "cpu", "--only", "peak"],
        ),
        carry=(*BASE_WHEELS, ".gpu/data/multi30k/raw"),
    ),
    "adaptive": Step(
        "adaptive",
        "python -m bench --device cuda --only adaptive (its own step: WikiText-2 and Multi30k together would "
        "pass the 64 MiB a call sends)",
        lambda py, dry, work: _bench(
            py, dry, work, "adaptive", [*GPU_BENCH, "--only", "adaptive"], ["--device", "cpu", "--only", "peak"]
        ),
        carry=(*BASE_WHEELS, ".gpu/data/wikitext-2"),
    ),
    "lce": Step(
        "lce",
        "the fused-loss anchor on CUDA (embtie vs torch, Liger-Kernel, Cut Cross-Entropy) and the large loss",
        lambda py, dry, work: _bench(
            py,
            dry,
            work,
            "lce",
            [*GPU_BENCH, "--only", "lce_anchor,loss_large", "--large"],
            ["--device", "cpu", "--only", "lce_anchor", "--tiny"],
        ),
        carry=(*BASE_WHEELS, *FUSED_WHEELS),
    ),
    "compile-rest": Step(
        "compile-rest",
        "compiled vs eager at GPT-2 small for the strategies the first step left out",
        lambda py, dry, work: _bench(
            py,
            dry,
            work,
            "compile-rest",
            [*GPU_BENCH, "--repeats", "3", "--only", "compile", *_compile_args(_rest(), 420)],
            [*TINY_COMPILE, "--only", "compile"],
        ),
    ),
    **{
        f"mt-{s}": Step(
            f"mt-{s}",
            f"the slice's {s} runs: {SLICE.preset}, seeds 0-{SLICE.seeds - 1}, full budget, on CUDA",
            lambda py, dry, work, s=s: [SLICE.compare(py, [s], dry, work)],
            _slice_runs(s),
            carry=(*BASE_WHEELS, ".gpu/data/multi30k/raw"),
        )
        for s in SLICE.strategies
    },
    "report": Step(
        "report",
        "the slice's report over every strategy's runs (--report-only: trains nothing; runs here after unpack too)",
        lambda py, dry, work: [SLICE.compare(py, list(SLICE.strategies), dry, work, "--report-only")],
        _report_files,
        carry=(*BASE_WHEELS, ".gpu/data/multi30k/raw"),
    ),
}


@dataclass
class Outcome:
    step: str
    dry_run: bool
    commands: list[dict] = field(default_factory=list)
    machine: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(c["returncode"] == 0 for c in self.commands)


PROBE = (
    "import json, platform, torch; print(json.dumps({'python': platform.python_version(), 'torch': "
    "torch.__version__, 'gpu': torch.cuda.get_device_name() if torch.cuda.is_available() else 'none'}))"
)


def machine(py: list[str], env: dict[str, str]) -> dict[str, str]:
    """What the step ran on: python, torch, the GPU, the date (asked in this process when it is that python)."""
    if py == [sys.executable]:
        import torch

        gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "none"
        info = {"python": platform.python_version(), "torch": torch.__version__, "gpu": gpu}
    else:
        out = subprocess.run([*py, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)
        info = json.loads(out.stdout) if out.returncode == 0 else {"torch": f"not importable: {out.stderr[-200:]}"}
    info["date"] = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    info["host"] = f"{platform.node()}, {os.cpu_count()} cores"
    return info


def install_wheels(py: list[str], work: Path) -> Path | None:
    """Install ``.gpu/wheels/*.whl`` (no index, no dependencies) into WORK/site; None when there are none."""
    wheels = sorted((ROOT / ".gpu" / "wheels").glob("*.whl"))
    if not wheels:
        return None
    site = work / "site"
    marker, names = site / ".wheels", "\n".join(w.name for w in wheels)
    if marker.is_file() and marker.read_text() == names:  # installed by an earlier step
        return site
    cmd = [*py, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile", "--no-cache-dir",
           "--upgrade", "--target", str(site), *map(str, wheels)]  # fmt: skip
    subprocess.run(cmd, check=True)
    marker.write_text(names)
    return site


def step_env(work: Path, site: Path | None) -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    paths = [str(ROOT / "src"), str(ROOT), *([str(site)] if site else []), env.get("PYTHONPATH", "")]
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    if (ROOT / ".gpu" / "data").is_dir():
        env["EMBTIE_DATA"] = str(ROOT / ".gpu" / "data")
    return env


def _run_command(cmd: list[str], env: dict[str, str], deadline: float, log) -> dict:
    """Run ``cmd`` (its own process group: worker processes included), echoing and logging its output; at
    ``deadline`` the whole group is killed."""
    t0 = time.monotonic()
    log.write(f"$ {' '.join(cmd)}\n")
    log.flush()
    proc = subprocess.Popen(
        cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True
    )
    stopped = threading.Event()

    def stop() -> None:
        stopped.set()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    timer = threading.Timer(max(deadline - time.monotonic(), 0.0), stop)
    timer.start()
    assert proc.stdout is not None
    for line in proc.stdout:  # until the command ends or is killed
        sys.stdout.write(line)
        log.write(line)
    proc.wait()
    timer.cancel()
    if stopped.is_set():
        log.write("[campaign] stopped at the step's time budget; what it finished is packed\n")
    return {"command": cmd, "returncode": proc.returncode, "seconds": round(time.monotonic() - t0, 1),
            "timed_out": stopped.is_set()}  # fmt: skip


def pack(step: Step, work: Path, out: Path) -> Path:
    """WORK's files of ``step`` (its log folder and ``step.packs``) as OUT/gpu-STEP.tar.gz, repository paths."""
    files = sorted({*(p for p in (work / LOGS / step.name).rglob("*") if p.is_file()), *step.packs(work)})
    out.mkdir(parents=True, exist_ok=True)
    target = out / f"gpu-{step.name}.tar.gz"
    with tarfile.open(target, "w:gz") as tar:
        for f in files:
            tar.add(f, arcname=str(f.relative_to(work)))
    if target.stat().st_size > PACK_LIMIT:
        print(f"[campaign] warning: {target} is {target.stat().st_size / 2**20:.1f} MiB, over the 16 MiB a lent "
              "machine sends back", flush=True)  # fmt: skip
    return target


def run_step(name: str, dry: bool, work: Path, out: Path, python: str, budget_s: float | None = None) -> Outcome:
    """Run one step's commands within its time budget, write its status and pack it."""
    step = STEPS[name]
    deadline = time.monotonic() + (step.budget_s if budget_s is None else budget_s)
    py = [python]
    logs = work / LOGS / name
    logs.mkdir(parents=True, exist_ok=True)
    site = install_wheels(py, work)
    env = step_env(work, site)
    result = Outcome(name, dry, machine=machine(py, env))
    print(f"[campaign] step {name}: {step.about}{' (dry run)' if dry else ''}", flush=True)
    with open(logs / "log.txt", "w") as log:
        for cmd in step.commands(py, dry, work):
            if time.monotonic() < deadline:
                result.commands.append(_run_command(cmd, env, deadline, log))
            else:  # the budget is spent: recorded as not run
                log.write(f"[campaign] not run, the step's time budget is spent: {' '.join(cmd)}\n")
                result.commands.append({"command": cmd, "returncode": None, "seconds": 0.0, "timed_out": True})
    status = {"step": name, "version": step.version, "dry_run": dry, "ok": result.ok, "machine": result.machine,
              "commands": result.commands}  # fmt: skip
    (logs / "status.json").write_text(json.dumps(status, indent=2) + "\n")
    target = pack(step, work, out)
    print(f"[campaign] step {name}: {'ok' if result.ok else 'FAILED'}; packed {target}", flush=True)
    return result


def done(name: str, root: Path = ROOT) -> bool:
    """Whether step ``name`` has run on a GPU and its results are in the repository (its status.json there,
    ok, not a dry run, and of the step's current version: a status without one is version 1): the queue's
    memory across lendings, since every lent machine starts bare."""
    status = root / LOGS / name / "status.json"
    if not status.is_file():
        return False
    info = json.loads(status.read_text())
    current = info.get("version", 1) >= STEPS[name].version
    return bool(info.get("ok")) and not info.get("dry_run", True) and current


def queue(root: Path = ROOT) -> list[str]:
    """The steps still to run, in campaign order: where the last lending stopped."""
    return [n for n in STEPS if not done(n, root)]


def unpack(packs: list[Path], into: Path) -> list[str]:
    """Extract the packs into ``into`` and merge their benchmark sections into its BENCHMARKS-cuda.md."""
    from bench.__main__ import update_markdown

    landed: list[str] = []
    for p in packs:
        with tarfile.open(p) as tar:
            tar.extractall(into, filter="data")
            landed += tar.getnames()
    for sections in sorted((into / LOGS).glob("*/BENCHMARKS-cuda.md")):
        text = sections.read_text()
        blocks = {}
        for chunk in text.split("<!-- bench:")[1:]:
            name = chunk.split(" -->", 1)[0]
            blocks[name] = "<!-- bench:" + chunk.split(f"<!-- /bench:{name} -->", 1)[0] + f"<!-- /bench:{name} -->\n"
        if blocks:
            update_markdown(into / "BENCHMARKS-cuda.md", blocks, header=None)
    return landed


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.gpu_campaign", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="action", required=True)
    r = sub.add_parser("run", help="run a step (or all) and pack its results")
    r.add_argument("step", choices=[*STEPS, "all", "queue"], help="queue: the steps not yet done, in order")
    r.add_argument("--dry-run", action="store_true", help="on the CPU at tiny sizes (for tests)")
    r.add_argument("--out", default=os.environ.get("OUT") or "gpu-out", help="where the packs go (default $OUT)")
    r.add_argument("--work", default=str(ROOT / ".gpu" / "work"), help="where the steps write (default .gpu/work)")
    r.add_argument("--python", default=sys.executable, help="the python that runs the steps (default this one)")
    r.add_argument("--budget-s", type=float, default=None, help="seconds per step (default 540: 9 minutes)")
    u = sub.add_parser("unpack", help="extract packs into the repository and merge their benchmark sections")
    u.add_argument("packs", nargs="+")
    u.add_argument("--into", default=str(ROOT))
    sub.add_parser("steps", help="list the steps and their commands")
    args = p.parse_args(argv)
    if args.action == "steps":
        for name, step in STEPS.items():
            print(f"{name}: {step.about}\n    carry: {', '.join(step.carry)}")
            for cmd in step.commands(["python3"], False, Path(".gpu/work")):
                print("    " + " ".join(cmd))
        return 0
    if args.action == "unpack":
        landed = unpack([Path(x) for x in args.packs], Path(args.into))
        print(f"unpacked {len(landed)} files into {args.into}; BENCHMARKS-cuda.md sections merged")
        return 0
    names = {"all": list(STEPS), "queue": queue()}.get(args.step, [args.step])
    if not names:
        print("[campaign] every step is done (results/campaign-gpu/*/status.json); nothing to run")
        return 0
    work, out = Path(args.work).resolve(), Path(args.out).resolve()
    results = [run_step(n, args.dry_run, work, out, args.python, args.budget_s) for n in names]
    return 0 if all(o.ok for o in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
