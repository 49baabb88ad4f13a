"""The GPU campaign's dry run (``make gpu DRY=1``): every step runs on the CPU at tiny sizes and packs what a
lent machine would send back; the packs unpack into a repository, their benchmark sections merge into
BENCHMARKS-cuda.md, and the slice's report is drawn again from the unpacked runs, which hold no weights."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import gpu_campaign  # noqa: E402


def _names(pack: Path) -> list[str]:
    with tarfile.open(pack) as tar:
        return tar.getnames()


def _campaign(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("OUT", None)
    return subprocess.run(
        [sys.executable, "-m", "bench.gpu_campaign", *args], cwd=ROOT, env=env, capture_output=True, text=True
    )


# The tests of the full dry run (about 3 minutes on 2 cores) are marked slow and campaign: out of the
# default suite (`make test`), run by `make test-cluster` and therefore by CI (.ci/run).


@pytest.fixture(scope="module")
def dry_run(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("campaign")
    done = _campaign("run", "all", "--dry-run", "--out", str(base / "out"), "--work", str(base / "work"))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return base


@pytest.mark.slow
@pytest.mark.campaign
def test_every_step_packs_at_most_what_a_lent_machine_sends_back(dry_run):
    packs = sorted((dry_run / "out").iterdir())
    assert [p.name for p in packs] == sorted(f"gpu-{s}.tar.gz" for s in gpu_campaign.STEPS)
    for p in packs:
        assert p.stat().st_size <= gpu_campaign.PACK_LIMIT
        names = _names(p)
        step = p.name[len("gpu-") : -len(".tar.gz")]
        status = json.loads((dry_run / "work" / gpu_campaign.LOGS / step / "status.json").read_text())
        assert status["ok"] and status["dry_run"] and status["commands"]
        assert f"{gpu_campaign.LOGS}/{step}/log.txt" in names
        assert not any("checkpoints" in n for n in names)  # no weights travel back


@pytest.mark.slow
@pytest.mark.campaign
def test_slice_steps_pack_their_strategys_runs_and_the_report_all_strategies(dry_run):
    out = str(gpu_campaign.SLICE.out)
    for s in gpu_campaign.SLICE.strategies:
        names = _names(dry_run / "out" / f"gpu-mt-{s}.tar.gz")
        assert f"{out}/runs/{s}/seed0/summary.json" in names
        assert f"{out}/runs/{s}/seed0/analysis/diagnostics.json" in names
        assert not any(f"/runs/{other}/" in n for other in gpu_campaign.SLICE.strategies if other != s for n in names)
    assert f"{out}/report.md" in _names(dry_run / "out" / "gpu-report.tar.gz")
    rows = (dry_run / "work" / out / "results.csv").read_text().splitlines()
    assert sorted(r.split(",")[0] for r in rows[1:]) == sorted(gpu_campaign.SLICE.strategies)


@pytest.mark.slow
@pytest.mark.campaign
def test_unpack_merges_sections_and_the_report_redraws_from_runs_without_weights(dry_run, tmp_path):
    old = "# GPU preamble kept\n\n<!-- bench:peak -->\nold\n<!-- /bench:peak -->\n"
    (tmp_path / "BENCHMARKS-cuda.md").write_text(old)
    done = _campaign("unpack", *map(str, sorted((dry_run / "out").iterdir())), "--into", str(tmp_path))
    assert done.returncode == 0, done.stderr[-3000:]
    merged = (tmp_path / "BENCHMARKS-cuda.md").read_text()
    assert merged.startswith("# GPU preamble kept\n")
    assert "\nold\n" not in merged and "## Matrix-multiply peak" in merged and "<!-- bench:lce_anchor -->" in merged
    runs = tmp_path / gpu_campaign.SLICE.out / "runs"
    assert not list(runs.rglob("checkpoints"))
    (tmp_path / gpu_campaign.SLICE.out / "report.md").unlink()
    again = _campaign("run", "report", "--dry-run", "--out", str(tmp_path / "out2"), "--work", str(tmp_path))
    assert again.returncode == 0, again.stdout[-3000:]
    report = (tmp_path / gpu_campaign.SLICE.out / "report.md").read_text()
    assert all(f"| {s} |" in report for s in gpu_campaign.SLICE.strategies)


def test_a_step_past_its_budget_is_stopped_and_still_packs(tmp_path):
    done = _campaign("run", "mt-tied", "--dry-run", "--budget-s", "1", "--out", str(tmp_path / "out"),
                     "--work", str(tmp_path / "work"))  # fmt: skip
    assert done.returncode == 1
    logs = tmp_path / "work" / gpu_campaign.LOGS / "mt-tied"
    status = json.loads((logs / "status.json").read_text())
    assert not status["ok"] and status["commands"][0]["timed_out"]
    assert "time budget" in (logs / "log.txt").read_text()
    assert f"{gpu_campaign.LOGS}/mt-tied/status.json" in _names(tmp_path / "out" / "gpu-mt-tied.tar.gz")


def test_the_gpu_commands_are_the_campaigns(tmp_path):
    cmds = {n: s.commands(["python3"], False, tmp_path) for n, s in gpu_campaign.STEPS.items()}
    assert "cuda" in cmds["bench"][0] and "lce_anchor,loss_large" in cmds["lce"][0]
    tied = cmds["mt-tied"][0]
    assert tied[tied.index("--seeds") + 1] == "5" and "train.device=cuda" in tied
    assert not any(o.startswith(("train.max_steps", "train.epochs", "model.")) for o in tied)  # the full budget
    assert "--report-only" in cmds["report"][0]


def test_the_gpu_commands_name_real_sections_and_valid_configs(tmp_path):
    """What the dry run cannot reach: the GPU-only arguments are checked without running them."""
    from bench.__main__ import SECTIONS

    from embtie import cli, comparison
    from embtie.commands import compare

    for name in ("bench", "adaptive", "lce"):
        cmd = gpu_campaign.STEPS[name].commands(["python3"], False, tmp_path)[0]
        assert set(cmd[cmd.index("--only") + 1].split(",")) <= set(SECTIONS)
    for name in [*(f"mt-{s}" for s in gpu_campaign.SLICE.strategies), "report"]:
        cmd = gpu_campaign.STEPS[name].commands(["python3"], False, tmp_path)[0]
        args, extra = cli.build_parser().parse_known_args(cmd[cmd.index("compare") :])
        args.args.extend(extra)  # as embtie's main does with overrides after options
        spec = compare.request_of(args).to_spec()
        runs = comparison.plan(spec)
        assert {r.seed for r in runs} == set(range(gpu_campaign.SLICE.seeds))
        assert all(r.cfg.train.device == "cuda" and r.cfg.train.epochs == 5 for r in runs)
