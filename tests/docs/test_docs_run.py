"""Documentation that runs (issue 28): every shell, transcript and Python block of README.md and docs/*.md,
and every example of ``embtie CMD --help``, is executed here, so a documented command that stops working
fails CI. They are marked ``docs_run`` (and slow): ``make test-docs`` runs them, on two workers, and CI
runs it right after ``make test``, which they would take past its 10 minutes on 2 cores.

**The one override: ``EMBTIE_CHEAP=1``** (``embtie.cheap``, listed in ``embtie --help``). Blocks run as
written, in a subprocess whose environment sets it: every run trains 3 steps on slices of the data,
``compare`` at most 2 seeds, ``hf-compare`` 2 steps, ``theory`` a small sample. No command line is
rewritten. ``embtie`` on the PATH is this checkout's (``python -m embtie`` with ``src/`` first on
PYTHONPATH).

**Order.** The blocks of one file run in order in one folder (a later block may use a run an earlier one
made, as a reader's would); running one block alone first runs the blocks above it in its file.

**Annotated blocks.** A block that cannot run on a 2-core CPU CI machine as written carries the visible
line ``*Not run by the tests: REASON.*`` directly above its fence. Each one is a test of its own: it runs
its stand-in where ``STAND_INS`` has one (generated input files, or the command ``make run`` runs) and is
skipped with its reason otherwise. ``EXPECTED_ANNOTATED`` lists them all, so a new annotation (or a lost
one) fails ``test_the_annotated_blocks_are_the_expected_ones`` until it is added here: nothing is skipped
silently.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from doc_blocks import REPO, Block, console_commands, help_examples, misplaced_annotations, runnable_blocks
from embtie.cli import COMMANDS

BLOCK_TIMEOUT = 600
BLOCKS = runnable_blocks()
DATA = Path(os.environ["EMBTIE_DATA"])


def _ptb_test_txt(d: Path) -> None:
    lines = (DATA / "ptb" / "ptb.valid.txt").read_text().splitlines()[:40]
    (d / "ptb.test.txt").write_text("\n".join(lines) + "\n")


def _my_yaml(d: Path) -> None:
    from embtie.config import presets_dir

    shutil.copy(presets_dir() / "ptb-gpt-tiny.yaml", d / "my.yaml")


def _all_txt(d: Path) -> None:
    """all.txt of docs/your-corpus.md: 1,200 lines of Multi30k's English training side (cased, punctuated)."""
    with gzip.open(DATA / "multi30k" / "raw" / "train.en.gz", "rt", encoding="utf-8") as f:
        (d / "all.txt").write_text("".join(next(f) for _ in range(1200)), encoding="utf-8")


def _multi30k_files(d: Path) -> None:
    for lang in ("de", "en"):
        with gzip.open(DATA / "multi30k" / "raw" / f"val.{lang}.gz", "rt", encoding="utf-8") as f:
            lines = [next(f) for _ in range(4)]
        (d / f"test.{lang}").write_text("".join(lines), encoding="utf-8")
    shutil.copy(d / "test.de", d / "src.de")


# annotated block (file, first line) -> what its stand-in needs: a function that writes the user's files
# into the block's folder (the block then runs as written), or the code to run instead of the block
STAND_INS: dict[tuple[str, str], Callable[[Path], object] | str] = {
    # what `make run` runs (the Makefile's `run` target), after setting up .venv
    ("README.md", "make run"): "embtie compare\n",
    ("docs/reference.md", "embtie train my.yaml sharing.options.bias=true --out runs/mine"): (
        lambda d: (_my_yaml(d), _ptb_test_txt(d))
    ),
    ("docs/reference.md", "embtie eval runs/tf --src-file test.de --ref-file test.en"): _multi30k_files,
    ("docs/your-corpus.md", "mkdir -p my-corpus"): _all_txt,
}

# every annotated block: (file, first line) -> runs a stand-in (True) or is skipped with its reason (False)
EXPECTED_ANNOTATED: dict[tuple[str, str], bool] = {
    ('README.md', 'make run'): True,
    ('README.md', 'pip install torch --index-url https://download.pytorch.org/whl/cpu'): False,
    ('README.md', 'python -m venv .venv && . .venv/bin/activate'): False,
    ('docs/captioning.md', "pip install -e '.[caption]'"): False,
    ('docs/captioning.md', 'embtie data get mscoco'): False,
    ('docs/cluster.md', "pip install 'embtie[slurm]'"): False,
    ('docs/cluster.md', 'embtie compare wikitext2-gpt-small --strategies tied,untied,l2norm --seeds 2 '
     '--out runs/grid \\'): False,
    ('docs/cluster.md', 'embtie compare ptb-gpt-tiny --strategies tied,untied --seeds 5 --out runs/grid '
     '--launcher slurm --no-wait'): False,
    ('docs/cluster.md', 'PORT=29500'): False,
    ('docs/cluster.md', '#!/bin/bash'): False,
    ('docs/gpu.md', 'make gpu-wheels gpu-data'): False,
    ('docs/gpu.md', 'PYTHONPATH=src:. python3 -m bench.gpu_campaign run tests'): False,
    ('docs/gpu.md', 'PYTHONPATH=src:. python3 -m bench.gpu_campaign run bench'): False,
    ('docs/gpu.md', 'PYTHONPATH=src:. python3 -m bench.gpu_campaign run lce'): False,
    ('docs/gpu.md', 'PYTHONPATH=src:. python3 -m bench.gpu_campaign run mt-tied'): False,
    ('docs/gpu.md', 'PYTHONPATH=src:. python3 -m bench.gpu_campaign run report'): False,
    ('docs/gpu.md', 'python -m bench.gpu_campaign unpack gpu-out/gpu-*.tar.gz'): False,
    ('docs/gpu.md', 'make gpu DRY=1 STEP=tests'): False,
    ('docs/liu-protocol.md', 'embtie train wmt16-transformer-big-paper sharing.name=l2norm \\'): False,
    ('docs/reference.md', 'embtie train my.yaml sharing.options.bias=true --out runs/mine'): True,
    ('docs/reference.md', 'embtie eval runs/tf --src-file test.de --ref-file test.en'): True,
    ('docs/reference.md', 'make test'): False,
    ('docs/your-corpus.md', 'mkdir -p my-corpus'): True,
}

# the order in which the --help examples run (one folder: eval and average use the runs train made; export
# the models hf-compare saved); commands without examples, and why
HELP_ORDER = ["strategies", "theory", "config", "data", "plan", "train", "eval", "average", "analyze", "compare",
              "confirm", "translate", "hf-compare", "export", "hf-audit"]  # fmt: skip
NO_EXAMPLES = {
    "caption": "needs a captioning run, whose features need the 8,091 Flickr8k images (docs/captioning.md)",
    "prepare-captions": "needs the 8,091 Flickr8k images and the EfficientNet-Lite0 weights (docs/captioning.md)",
}


@pytest.fixture(scope="session")
def doc_env(tmp_path_factory) -> dict[str, str]:
    """The environment of every documented command: EMBTIE_CHEAP=1, this checkout's embtie first on PATH."""
    bin_dir = tmp_path_factory.mktemp("bin")
    shim = bin_dir / "embtie"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m embtie "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    env.update(
        EMBTIE_CHEAP="1",
        EMBTIE_QUIET="1",
        EMBTIE_CACHE=str(tmp_path_factory.mktemp("cache")),
        MPLBACKEND="Agg",
        OMP_NUM_THREADS="1",
        PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")]),
        PYTHONPATH=os.pathsep.join(p for p in [str(REPO / "src"), env.get("PYTHONPATH", "")] if p),
    )
    env.pop("PYTEST_CURRENT_TEST", None)
    return env


class _Workspaces:
    """One folder per documentation file (or the --help examples); remembers which blocks ran there."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.done: dict[str, set[int]] = {}

    def folder(self, name: str) -> Path:
        d = self.root / name.replace("/", "_")
        d.mkdir(exist_ok=True)
        return d


@pytest.fixture(scope="session")
def workspaces(tmp_path_factory) -> _Workspaces:
    return _Workspaces(tmp_path_factory.mktemp("docs-run"))


def _run_shell(code: str, cwd: Path, env: dict[str, str], what: str) -> str:
    r = subprocess.run(
        ["bash", "-c", "set -euo pipefail\n" + code],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT,
    )
    tail = f"--- stdout\n{r.stdout[-3000:]}\n--- stderr\n{r.stderr[-3000:]}"
    assert r.returncode == 0, f"{what} failed (exit {r.returncode}):\n{code}\n{tail}"
    return r.stdout + r.stderr


def _run_python(code: str, cwd: Path, env: dict[str, str], what: str) -> None:
    script = cwd / "_doc_block.py"
    script.write_text(code, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, script.name], cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
    )
    assert r.returncode == 0, f"{what} failed:\n{code}\n--- stderr\n{r.stderr[-3000:]}"


def _run_console(code: str, cwd: Path, env: dict[str, str], what: str) -> None:
    """A transcript: each ``$`` command runs, and the output shown after it must appear in what it prints
    (an error transcript's command may fail: its shown output says so)."""
    for command, shown in console_commands(code):
        r = subprocess.run(
            ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT
        )
        printed = r.stdout + r.stderr
        if r.returncode != 0:
            assert any("error:" in s for s in shown), f"{what}: `{command}` failed:\n{printed[-3000:]}"
        for s in shown:
            assert s in printed, f"{what}: `{command}` no longer prints {s!r}; it printed:\n{printed[-3000:]}"


def _execute(block: Block, code: str, cwd: Path, env: dict[str, str]) -> None:
    what = f"{block.path}:{block.line} ({block.lang})"
    if block.lang == "python":
        _run_python(code, cwd, env, what)
    elif block.lang == "console":
        _run_console(code, cwd, env, what)
    else:
        _run_shell(code, cwd, env, what)


def _run_block(block: Block, ws: _Workspaces, env: dict[str, str]) -> None:
    """Run ``block`` (its stand-in when annotated) in its file's folder, after the blocks above it."""
    cwd = ws.folder(block.path)
    done = ws.done.setdefault(block.path, set())
    same_file = [b for b in BLOCKS if b.path == block.path]
    for earlier in same_file[: same_file.index(block)]:
        if earlier.line not in done and (earlier.reason is None or earlier.key in STAND_INS):
            _run_block(earlier, ws, env)
    if block.reason is not None:
        stand_in = STAND_INS.get(block.key)
        if stand_in is None:
            done.add(block.line)
            pytest.skip(f"{block.path}:{block.line}: not run by the tests: {block.reason}")
        code = stand_in if isinstance(stand_in, str) else block.code
        if not isinstance(stand_in, str):
            stand_in(cwd)
        _execute(block, code, cwd, env)
    else:
        _execute(block, block.code, cwd, env)
    done.add(block.line)


def _block_id(b: Block) -> str:
    n = [x for x in BLOCKS if x.path == b.path].index(b)
    return f"{b.path}#{n}{'-annotated' if b.reason else ''}"


@pytest.mark.slow
@pytest.mark.docs_run
@pytest.mark.parametrize("block", BLOCKS, ids=[_block_id(b) for b in BLOCKS])
def test_documented_block_runs(block: Block, workspaces: _Workspaces, doc_env: dict[str, str]):
    _run_block(block, workspaces, doc_env)


def test_the_annotated_blocks_are_the_expected_ones():
    annotated = {b.key: b.key in STAND_INS for b in BLOCKS if b.reason is not None}
    assert annotated == EXPECTED_ANNOTATED
    assert set(STAND_INS) <= set(annotated), "a stand-in for a block that is not annotated (or no longer exists)"


def test_annotations_sit_directly_above_a_runnable_block():
    assert misplaced_annotations() == []


def test_there_are_blocks_to_run():
    """The parser finds the documentation's blocks (an empty list would pass every test above)."""
    assert len([b for b in BLOCKS if b.reason is None]) >= 15
    assert {b.lang for b in BLOCKS} >= {"bash", "python", "console"}


def test_every_command_with_examples_is_ordered_and_every_other_says_why():
    with_examples = {c for c in COMMANDS if help_examples(c)}
    assert with_examples == set(HELP_ORDER)
    assert set(COMMANDS) - with_examples == set(NO_EXAMPLES)


@pytest.mark.slow
@pytest.mark.docs_run
@pytest.mark.parametrize("command", HELP_ORDER)
def test_help_examples_run(command: str, workspaces: _Workspaces, doc_env: dict[str, str]):
    cwd = workspaces.folder("help-examples")
    done = workspaces.done.setdefault("help-examples", set())
    for i, c in enumerate(HELP_ORDER[: HELP_ORDER.index(command) + 1]):
        if i in done:
            continue
        examples = help_examples(c)
        assert examples, f"`embtie {c} --help` shows no examples"
        _run_shell("\n".join(examples) + "\n", cwd, doc_env, f"the examples of `embtie {c} --help`")
        done.add(i)
