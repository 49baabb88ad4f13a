"""Report rendering: figures from saved data, Markdown + self-contained HTML, and the HTML drawn by a
real headless Chromium (skipped, with the reason, when no chromium is installed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.image as mpimg
import numpy as np
import pytest

from embtie.analysis.norms import norm_histogram
from embtie.analysis.records import NormHistograms
from embtie.comparison.records import LossCurves
from embtie.reporting import curve_plot, document, plots
from headless_chromium import MISSING, chromium, render_screenshot


def _fake_figures(tmp: Path) -> list[document.Figure]:
    rng = np.random.default_rng(0)
    curves = {
        name: [
            LossCurves(
                train_steps=list(range(0, 100, 10)),
                train=list(start * np.exp(-np.arange(10) / 3) + 5 + 0.1 * s),
                valid_steps=[50, 99],
                valid=[6.0 + 0.1 * s, 5.5 + 0.1 * s],
            )
            for s in range(2)
        ]
        for name, start in (("tied", 20.0), ("untied", 4.0))
    }
    counts = np.sort(rng.zipf(1.5, 500))[::-1]
    p1 = curve_plot.learning_curves(curves, tmp / "curves.png", ln_v=np.log(500))
    hists = {"input": norm_histogram(rng.gamma(4, 1, 500)), "output": norm_histogram(rng.gamma(5, 1, 500))}
    p2 = plots.norm_histograms({"tied": NormHistograms.from_json(hists)}, tmp / "norms.png")
    p3 = plots.norm_vs_frequency(
        {"tied": plots.FrequencyScatter(counts=counts, norms=1 / np.sqrt(counts), rho=-1.0)}, tmp / "nf.png"
    )
    return [
        document.Figure(p1, "Learning curves.", "embtie compare x"),
        document.Figure(p2, "Norms.", "embtie analyze RUN"),
        document.Figure(p3, "Norm vs frequency.", "embtie analyze RUN"),
    ]


def _report(tmp: Path) -> document.Report:
    r = document.Report("Test report")
    r.add(document.Heading("Numbers"), document.Text("Plain `code` & <escaped>."))
    r.add(document.Table(["strategy", "ppl", "params"], [["tied", document.fmt(123.456), document.fmt(12345)]]))
    r.add(*_fake_figures(tmp))
    return r


def test_markdown_and_html_are_written_with_figures(tmp_path):
    md, page = document.write(_report(tmp_path), tmp_path)
    text = md.read_text()
    assert "| tied | 123.46 | 12,345 |" in text
    assert "![Learning curves.](curves.png)" in text and "Regenerate: `embtie compare x`" in text
    h = page.read_text()
    assert h.count("data:image/png;base64,") == 3 and "&lt;escaped&gt;" in h and "<code>code</code>" in h
    assert 'src="curves.png"' not in h  # self-contained
    for f in ("curves.png", "norms.png", "nf.png"):
        img = mpimg.imread(tmp_path / f)
        assert img.shape[0] > 200 and img.shape[1] > 200 and img[..., :3].std() > 0.01


@pytest.mark.skipif(chromium() is None, reason=MISSING)
def test_html_report_renders_in_headless_chromium(tmp_path):
    _, page = document.write(_report(tmp_path), tmp_path)
    shot = tmp_path / "shot.png"
    render_screenshot(page, shot)
    img = mpimg.imread(shot)[..., :3]
    assert img.shape[:2] == (2400, 1200)
    # not blank: the inlined plots put colour and dark text on the white page
    assert img.std() > 0.05
    assert (img.min(axis=2) < 0.3).mean() > 0.002  # dark pixels (text, axes)
    colourful = (img.max(axis=2) - img.min(axis=2)) > 0.3
    assert colourful.mean() > 0.002  # the plots' coloured lines and bars were drawn
