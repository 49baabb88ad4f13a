"""Every strategy's learning curve is visible where the curves overlap (issue 52): l2norm 0.005 nats over
tied hid tied's line. Checked in the PNG the report inlines and in report.html as headless Chromium draws
it: each strategy's colour is among the pixels of the train-loss panel, where the overlap is."""

from __future__ import annotations

import matplotlib.image as mpimg
import numpy as np
import pytest

from embtie.comparison.records import LossCurves
from embtie.reporting import curve_plot, document
from embtie.reporting.plots import strategy_colors
from headless_chromium import MISSING, chromium, render_screenshot

NAMES = ("tied", "untied", "l2norm")
OFFSET = {"tied": 0.0, "untied": -0.08, "l2norm": 0.005}
"""each strategy's loss minus tied's: l2norm lies on tied's line."""


def _curves() -> dict[str, list[LossCurves]]:
    steps = list(range(0, 300, 10))
    base = 4.0 + 6.0 * np.exp(-np.arange(len(steps)) / 4)

    def run(name: str, seed: int) -> LossCurves:
        off = OFFSET[name] + 0.002 * seed
        return LossCurves(train_steps=steps, train=list(base + off), valid_steps=[100, 200, 290],
                          valid=[5.0 + off, 4.6 + off, 4.4 + off])  # fmt: skip

    return {n: [run(n, s) for s in range(3)] for n in NAMES}


def _pixels_of(img: np.ndarray, color: tuple[float, ...], tol: float = 0.1) -> int:
    """How many pixels of the (H, W, 3) image are ``color`` (each channel within ``tol``)."""
    return int((np.abs(img[..., :3] - np.asarray(color[:3])) <= tol).all(axis=2).sum())


def _train_panel(img: np.ndarray) -> np.ndarray:
    """The top-left part of the figure (the train-loss panel, no legend there): the bounding box of the
    coloured pixels, its upper 45% and left half."""
    rgb = img[..., :3]
    ys, xs = np.nonzero(rgb.max(axis=2) - rgb.min(axis=2) > 0.3)
    top, bottom, left, right = ys.min(), ys.max(), xs.min(), xs.max()
    return rgb[top : top + int(0.45 * (bottom - top)), left : left + (right - left) // 2]


def test_each_strategy_has_its_own_line_style_and_the_baseline_is_drawn_under_the_others():
    styles = curve_plot.strategy_styles(NAMES, "tied")
    assert len({(str(s.linestyle), s.marker) for s in styles.values()}) == 3
    assert styles["tied"].linestyle == "-" and styles["tied"].zorder < min(styles[n].zorder for n in NAMES[1:])
    assert styles["tied"].linewidth > styles["l2norm"].linewidth  # the solid line shows around the dashes


def test_overlapping_curves_all_show_in_the_figure(tmp_path):
    img = mpimg.imread(curve_plot.learning_curves(_curves(), tmp_path / "c.png", ln_v=np.log(4000)))
    panel = _train_panel(img)
    for name, color in strategy_colors(list(NAMES)).items():
        assert _pixels_of(panel, color) > 150, f"{name}'s curve is not visible in the train-loss panel"


def test_without_a_baseline_there_is_no_difference_panel(tmp_path):
    one = curve_plot.learning_curves({"untied": _curves()["untied"]}, tmp_path / "one.png", ln_v=np.log(4000))
    two = curve_plot.learning_curves(_curves(), tmp_path / "two.png", ln_v=np.log(4000))
    h_one, h_two = mpimg.imread(one).shape[0], mpimg.imread(two).shape[0]
    assert h_two > 1.4 * h_one  # the row of "minus tied's loss" panels


@pytest.mark.skipif(chromium() is None, reason=MISSING)
def test_report_html_draws_every_strategys_curve_in_chromium(tmp_path):
    figure = curve_plot.learning_curves(_curves(), tmp_path / "learning_curves.png", ln_v=np.log(4000))
    report = document.Report("Curves")
    report.add(document.Figure(figure, "Learning curves.", "embtie compare x"))
    _, page = document.write(report, tmp_path)
    shot = tmp_path / "shot.png"
    render_screenshot(page, shot, width=1200, height=1200)
    panel = _train_panel(mpimg.imread(shot))
    counts = {n: _pixels_of(panel, c) for n, c in strategy_colors(list(NAMES)).items()}
    assert all(v > 100 for v in counts.values()), counts
