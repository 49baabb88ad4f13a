"""Steps to reach a validation loss and the report's convergence table."""

from __future__ import annotations

import numpy as np
import pytest

import comparison_records as cr
from embtie.analysis.convergence import mean_curve, steps_to_reach, targets_from_baseline
from embtie.comparison.records import RunRecord
from embtie.reporting.sections.convergence import steps_to_targets


def test_crossing_is_interpolated_between_validations():
    steps, loss = [100, 200, 300], [6.0, 5.0, 4.0]
    assert steps_to_reach(steps, loss, 5.5) == pytest.approx(150.0)
    assert steps_to_reach(steps, loss, 5.0) == pytest.approx(200.0)
    assert steps_to_reach(steps, loss, 7.0) == 100.0  # reached at the first validation
    assert steps_to_reach(steps, loss, 3.9) is None
    # the FIRST crossing counts, even if the loss goes up again afterwards
    assert steps_to_reach([1, 2, 3, 4], [5.0, 3.0, 6.0, 2.0], 4.0) == pytest.approx(1.5)


def test_mean_curve_uses_shared_steps_and_targets_pick_fractions():
    s, m = mean_curve([([0, 10, 20], [3.0, 2.0, 1.0]), ([0, 10, 20, 30], [5.0, 4.0, 3.0, 0.0])])
    assert s.tolist() == [0, 10, 20] and m.tolist() == [4.0, 3.0, 2.0]
    assert targets_from_baseline(np.array([0, 10, 20, 30, 40]), np.array([5, 4, 3, 2, 1.0]), (0.25, 0.5, 1.0)) == [
        4.0,
        3.0,
        1.0,
    ]


def _run(name: str, seed: int, losses: list[float]) -> RunRecord:
    steps = [50 * (i + 1) for i in range(len(losses))]
    return cr.run(name, seed, loss_curves=cr.curves(steps, losses))


def test_table_reports_slower_strategies_and_unreached_targets():
    per_run = [
        _run("tied", 0, [6.0, 5.0, 4.5, 4.0]),
        _run("tied", 1, [6.0, 5.0, 4.5, 4.0]),
        _run("slow", 0, [7.0, 6.0, 5.0, 4.5]),
        _run("slow", 1, [7.0, 6.0, 5.0, 4.4]),
    ]
    heading, table = steps_to_targets(cr.context(cr.comparison(per_run)))
    assert heading.text == "Convergence speed"
    tied, slow = table.rows
    # targets: tied's loss at steps 50 (25% of 200 -> nearest 50), 100 and 200: 6.0, 5.0, 4.0
    assert tied[1].startswith("50 ") and tied[2].startswith("100 ") and tied[3].startswith("200 ")
    assert slow[1].startswith("100 ") and slow[2].startswith("150 ")  # one validation later
    assert slow[3] == "not reached"


def test_too_few_validations_leave_the_section_out():
    per_run = [_run("tied", 0, [6.0, 5.0])]
    assert steps_to_targets(cr.context(cr.comparison(per_run))) == []
