"""embtie installs like a library.

The wheel built from this checkout ships what the docs address by name (presets, the Hugging Face model
configs, py.typed, the licence). Installed into a fresh virtual environment outside the checkout, with
its dependencies resolved against constraints/cpu.txt (so torch is the CPU build on this machine's disk,
never a multi-GB download), it runs from another folder: `embtie --version`, a preset, a comparison and
the Python API. Its metadata resolves (pip's dry run: metadata only, nothing big is downloaded) with the
oldest torch and transformers pyproject.toml admits as well as with the pinned ones.

Measured on the 2-core machine: the install-and-run test took 110 s with two training jobs beside it
(20-50 s of it installing torch from disk, up to 55 s deleting the 1.3 GB venv), 180-315 s with more
running; the two dry runs take 25-65 s (they ask PyPI for metadata only). Both ask the package registry, so
both are marked slow and registry and run by `make test-packaging`, which CI runs after make test (the dry
runs were in the default suite until 2026-12-03: 44 s of make test's 10 minutes); the wheel's contents (4 s)
stay in the default suite.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from embtie import __version__

ROOT = Path(__file__).resolve().parents[1]
CONSTRAINTS = ROOT / "constraints" / "cpu.txt"
SOURCES = ("pyproject.toml", "README.md", "LICENSE", "src")
OLDEST = {"torch": "2.6.0", "transformers": "5.0.0"}
"""the lower bounds of pyproject.toml's ranges (its comments say why)."""

TINY = [
    "model.dim=16",
    "model.n_layers=1",
    "model.n_heads=2",
    "model.max_len=16",
    "data.bptt=16",
    "data.batch_size=4",
    "data.eval_batch_size=8",
    "data.train_tokens=4000",
    "data.valid_tokens=256",
    "train.progress=false",
    "train.threads=1",
    "train.max_steps=3",
    "train.warmup_steps=0",
    "train.eval_every=0",
    "train.log_every=1",
]

API = """
import sys
from importlib import resources
from pathlib import Path
import torch
import embtie
from embtie import sharing

assert Path(embtie.__file__).resolve().is_relative_to(Path(sys.prefix).resolve()), embtie.__file__
package = resources.files("embtie")
for name in ("py.typed", "configs/ptb-gpt-tiny.yaml", "configs/hf/gpt2-tiny.json", "configs/hf/llama-tiny.json"):
    assert (package / name).is_file(), name
s = sharing.build("l2norm", vocab_size=100, dim=16)
h = torch.randn(8, 16, requires_grad=True)
loss = s.loss(h, torch.randint(0, 100, (8,)))
loss.backward()
assert torch.isfinite(loss) and s.weight.grad is not None
print("api ok", embtie.__version__, float(loss))
"""


def _pinned(name: str) -> str:
    for line in CONSTRAINTS.read_text().splitlines():
        key, sep, version = line.split("#")[0].strip().partition("==")
        if sep and key.strip() == name:
            return version.strip()
    raise AssertionError(f"{CONSTRAINTS} pins no {name}")


def _run(cmd: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: int = 600) -> str:
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, (
        f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel of this checkout, built from a copy of its sources (the checkout gets no build/ folder)."""
    work = tmp_path_factory.mktemp("wheel")
    src = work / "src"
    src.mkdir()
    for name in SOURCES:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(path, src / name)
    _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(work / "dist"), str(src)], cwd=work)
    (built,) = (work / "dist").glob("embtie-*.whl")
    return built


def _dry_run(wheel: Path, report: Path, *requirements: str, constraints: Path | None = None) -> dict[str, dict]:
    """{normalised name: install item of pip's report} for installing ``wheel`` (with ``requirements``)."""
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q", "--report", str(report)]
    if constraints is not None:
        cmd += ["-c", str(constraints)]
    _run([*cmd, f"embtie[hf] @ {wheel.as_uri()}", *requirements], cwd=report.parent)
    items = json.loads(report.read_text())["install"]
    return {i["metadata"]["name"].lower().replace("_", "-"): i for i in items}


def _version(item: dict) -> str:
    return item["metadata"]["version"].split("+")[0]


def _env(venv: Path) -> dict[str, str]:
    """The environment of a user of the installed wheel: its venv first on PATH, nothing of the checkout
    (and bytecode written, so the first command compiles what the others import)."""
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), env.get("PATH", "")])
    return env


def test_the_wheel_ships_what_the_docs_name(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    presets = sorted(p.name for p in (ROOT / "src" / "embtie" / "configs").glob("*.yaml"))
    assert presets and {f"embtie/configs/{p}" for p in presets} <= names
    assert {"embtie/configs/hf/gpt2-tiny.json", "embtie/configs/hf/llama-tiny.json", "embtie/py.typed"} <= names
    assert f"embtie-{__version__}.dist-info/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheel).read(f"embtie-{__version__}.dist-info/METADATA").decode()
    assert "Requires-Dist: torch<3,>=2.6" in metadata and "License-Expression: MIT" in metadata
    assert not any(n.startswith(("tests/", "bench/")) for n in names)


@pytest.mark.slow
@pytest.mark.registry
def test_the_wheel_resolves_with_the_oldest_and_the_pinned_torch_and_transformers(wheel, tmp_path):
    old = _dry_run(wheel, tmp_path / "oldest.json", *(f"{k}=={v}" for k, v in OLDEST.items()))
    assert {k: _version(old[k]) for k in OLDEST} == OLDEST
    pinned = _dry_run(wheel, tmp_path / "pinned.json", constraints=CONSTRAINTS)
    assert {k: _version(pinned[k]) for k in OLDEST} == {k: _pinned(k) for k in OLDEST}


@pytest.mark.slow
@pytest.mark.registry
def test_the_wheel_installs_in_a_fresh_venv_and_runs_outside_the_checkout(wheel, tmp_path):
    plan = _dry_run(wheel, tmp_path / "plan.json", constraints=CONSTRAINTS)
    torch_from = plan["torch"]["download_info"]["url"]
    if not torch_from.startswith("file:"):
        pytest.skip(f"torch {_pinned('torch')} is not on this machine's disk; installing would download {torch_from}")
    venv = tmp_path / "venv"
    try:
        env = _env(venv)
        _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path, env=env)
        python = str(venv / "bin" / "python")
        # --no-compile: the commands below compile what they import (half of torch's files are never imported).
        # The user's environment, not the tests': with this checkout's src/ on PYTHONPATH (tests/conftest.py) pip
        # saw the editable install's embtie.egg-info there, said the wheel was already satisfied and installed no
        # `embtie` script (measured 2026-12-03, the first time CI ran this test)
        install = [python, "-m", "pip", "install", "-q", "--no-compile", "-c", str(CONSTRAINTS), str(wheel)]
        _run(install, cwd=tmp_path, env=env, timeout=900)
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        embtie = str(venv / "bin" / "embtie")
        assert _run([embtie, "--version"], cwd=elsewhere, env=env).strip() == f"embtie {__version__}"
        assert _run([python, "-m", "embtie", "--version"], cwd=elsewhere, env=env).strip() == f"embtie {__version__}"
        _run([embtie, "--quiet", "train", "ptb-gpt-tiny", "--out", "run", *TINY], cwd=elsewhere, env=env)
        assert (elsewhere / "run" / "summary.json").is_file()
        compare = [embtie, "compare", "ptb-gpt-tiny", "--strategies", "tied,l2norm", "--seeds", "1", "--out", "cmp"]
        _run([*compare, "--no-progress", *TINY], cwd=elsewhere, env=env)
        assert (elsewhere / "cmp" / "report.html").is_file() and (elsewhere / "cmp" / "results.csv").is_file()
        assert _run([python, "-c", API], cwd=elsewhere, env=env).startswith(f"api ok {__version__}")
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # 1.3 GB: not left for pytest's kept temporary folders
