"""The GPU campaign is a queue that resumes where the last lending stopped: a step is done when its
status.json is in the repository, ok and not from a dry run; ``first`` comes first."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import gpu_campaign  # noqa: E402


def _status(root: Path, step: str, ok: bool, dry: bool, version: int | None = None) -> None:
    d = root / gpu_campaign.LOGS / step
    d.mkdir(parents=True, exist_ok=True)
    version = gpu_campaign.STEPS[step].version if version is None else version
    (d / "status.json").write_text(json.dumps({"step": step, "ok": ok, "dry_run": dry, "version": version}))


def test_the_queue_starts_with_the_first_step_and_skips_what_a_lending_finished(tmp_path):
    steps = list(gpu_campaign.STEPS)
    assert steps[0] == "first" and gpu_campaign.queue(tmp_path) == steps
    _status(tmp_path, "first", ok=True, dry=False)
    _status(tmp_path, "tests", ok=False, dry=False)  # failed: still to do
    _status(tmp_path, "bench", ok=True, dry=True)  # a dry run does not count
    assert gpu_campaign.queue(tmp_path) == steps[1:]
    _status(tmp_path, "lce", ok=True, dry=False)
    assert gpu_campaign.queue(tmp_path) == [s for s in steps if s not in ("first", "lce")]


def test_a_step_measured_by_an_older_version_runs_again(tmp_path):
    """The first step measures the tiled loss and bf16 training since version 2: the committed status of
    version 1 (2026-11-27, no version field) leaves it in the queue, first."""
    assert gpu_campaign.STEPS["first"].version == 2
    _status(tmp_path, "first", ok=True, dry=False, version=1)
    assert gpu_campaign.queue(tmp_path)[0] == "first"
    _status(tmp_path, "first", ok=True, dry=False)
    assert "first" not in gpu_campaign.queue(tmp_path)
    assert not {"first", "train"} & set(gpu_campaign.queue(ROOT))  # this repository: both measured 2026-11-28


def test_the_first_step_is_one_command_within_eight_minutes_and_names_what_it_measures():
    from bench.__main__ import SECTIONS

    from embtie import sharing

    step = gpu_campaign.STEPS["first"]
    assert step.budget_s <= 8 * 60
    (cmd,) = step.commands(["python3"], False, Path("w"))
    sections = cmd[cmd.index("--only") + 1].split(",")
    assert sections == ["tiled_loss", "train_bf16"] and set(sections) <= set(SECTIONS)
    assert cmd[cmd.index("--device") + 1] == "cuda" and cmd[cmd.index("--train-batch") + 1] == "32"
    trained = cmd[cmd.index("--train-strategies") + 1].split(",")
    assert trained == ["tied", "untied", "l2norm"]
    budgets = float(cmd[cmd.index("--tiled-budget-s") + 1]) + float(cmd[cmd.index("--train-budget-s") + 1])
    assert budgets < step.budget_s - 120  # room for the last case, the last model's steps and the start
    rest = gpu_campaign.STEPS["compile-rest"].commands(["python3"], False, Path("w"))[0]
    others = rest[rest.index("--compile-strategies") + 1].split(",")
    # compiled vs eager: version 1 of the first step measured these, compile-rest the others
    assert sorted([*gpu_campaign.FIRST_STRATEGIES, *others]) == sorted(sharing.names())  # every strategy, once
    (dry,) = step.commands(["python3"], True, Path("w"))
    assert dry[dry.index("--device") + 1] == "cpu" and "--tiny" in dry


def test_every_step_carries_its_data_within_the_64_mib_a_lent_machine_receives():
    """The lent machine receives the tracked tree plus the carried paths, at most 64 MiB: on 2026-11-27
    the documented carry of every dataset (.gpu/data, 12 MiB) with the wheels was refused. Each step
    carries only the data its commands read, sized here from ../shared/data (what `make gpu-data` copies)."""
    import subprocess

    from embtie.data.files import data_root

    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    tree = sum((ROOT / f).stat().st_size for f in tracked.decode().split("\0") if f and (ROOT / f).is_file())
    pins = next(line for line in (ROOT / "Makefile").read_text().splitlines() if line.startswith("GPU_WHEELS :="))
    named = {f".gpu/wheels/{p.split('==')[0].replace('-', '_')}-{p.split('==')[1]}-py3-none-any.whl"
             for p in pins.split(":=")[1].split()}  # fmt: skip
    carried = {p for s in gpu_campaign.STEPS.values() for p in s.carry if p.startswith(".gpu/wheels/")}
    assert carried == named  # every pinned wheel is carried by some step, and no other file
    # the pinned wheels' sizes (`make gpu-wheels` on 2026-11-27; checked against the files where they are here)
    wheel_bytes = {"sacremoses": 867_756, "platformdirs": 94_267, "liger_kernel": 910_117, "cut_cross_entropy": 22_672}

    def size(path: str) -> int:
        if path.startswith(".gpu/wheels/"):
            n = wheel_bytes[Path(path).name.split("-")[0]]
            assert not (ROOT / path).is_file() or (ROOT / path).stat().st_size == n, path
            return n
        folder = data_root() / path.removeprefix(".gpu/data/")
        return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file())

    data = {path for step in gpu_campaign.STEPS.values() for path in step.carry if path.startswith(".gpu/data/")}
    assert data == {".gpu/data/ptb", ".gpu/data/multi30k/raw", ".gpu/data/wikitext-2"}
    for name, step in gpu_campaign.STEPS.items():
        assert tree + sum(size(p) for p in step.carry) < 63 * 2**20, name  # 1 MiB spare for untracked files
