"""Reports redrawn from saved run directories are byte-identical to the ones made when the runs were
trained: the path run -> comparison -> report keeps its output through refactors.

The run directories (an LM, a translation and a captioning comparison, a few steps each) were made by
``tests/fixtures/report_regen/make_fixtures.py`` on the commit before the house-issue refactor; their
checkpoints are deleted, so the reports are drawn from the saved summaries, metrics and analyses
alone. Their results.json files were rewritten once since, when the old bootstrap + Welch verdicts left
results.json (issue 51: the bootstraps moved under ``bootstrap``, with the same values; the reports stayed
byte-identical), and the reference reports and results.json were redrawn once more when a comparison's tests
became one family with the choice among the strategies (issue 50/52: only the verdicts, their intervals and
captions, the choice and status lines and the sign-flip column changed). Figures are compared byte for byte
when matplotlib and Pillow are the versions that drew them
(``versions.json``), else only their presence (PNG bytes depend on those libraries' versions)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from embtie import cli

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "report_regen"
COMPARISONS = ["lm", "translation", "captioning"]
TABLES = ("report.md", "results.csv", "results.json")


def _same_library_versions() -> bool:
    import matplotlib
    import PIL

    saved = json.loads((FIXTURES / "versions.json").read_text(encoding="utf-8"))
    return saved == {"matplotlib": matplotlib.__version__, "pillow": PIL.__version__}


def _without_images(html: str) -> str:
    return re.sub(r"data:image/(png|jpeg);base64,[A-Za-z0-9+/=]+", "data:image", html)


@pytest.fixture(scope="module")
def redrawn(tmp_path_factory) -> Path:
    """A copy of the fixtures with every report deleted and redrawn by ``embtie compare --report-only``."""
    pytest.importorskip("pycocoevalcap")
    import captioning_data  # noqa: F401  (registers the captioning runs' stand-in encoder "tiny-test")

    work = tmp_path_factory.mktemp("regen") / "report_regen"
    shutil.copytree(FIXTURES, work)
    for name in COMPARISONS:
        for f in (work / name).iterdir():
            if (f.is_file() and f.suffix in (".md", ".html", ".csv", ".png")) or f.name == "results.json":
                f.unlink()
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(work)
        for name in COMPARISONS:
            command = json.loads((FIXTURES / name / "results.json").read_text(encoding="utf-8"))["command"]
            argv = shlex.split(command)[1:]  # drop "embtie"
            assert cli.main([*argv, "--report-only", "--no-progress"]) == 0
    return work


@pytest.mark.parametrize("name", COMPARISONS)
def test_tables_and_markdown_report_are_byte_identical(redrawn: Path, name: str):
    for table in TABLES:
        want = (FIXTURES / name / table).read_bytes()
        got = (redrawn / name / table).read_bytes()
        assert got == want, f"{name}/{table} differs from the reference"


@pytest.mark.parametrize("name", COMPARISONS)
def test_html_report_and_figures_are_identical(redrawn: Path, name: str):
    want_pngs = sorted(p.name for p in (FIXTURES / name).glob("*.png"))
    assert sorted(p.name for p in (redrawn / name).glob("*.png")) == want_pngs
    want = (FIXTURES / name / "report.html").read_text(encoding="utf-8")
    got = (redrawn / name / "report.html").read_text(encoding="utf-8")
    if _same_library_versions():
        assert got == want
        for png in want_pngs:
            assert (redrawn / name / png).read_bytes() == (FIXTURES / name / png).read_bytes(), png
    else:
        assert _without_images(got) == _without_images(want)
