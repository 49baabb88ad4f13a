"""The interval a per-strategy figure draws: Student-t over seeds, on the logarithms for a log axis."""

from __future__ import annotations

import math

import pytest
import scipy.stats as sps

from embtie.reporting.plots import mean_interval


def test_linear_interval_is_the_seed_t_interval():
    centre, low, high = mean_interval([10.0, 12.0, 14.0])
    half = sps.t.ppf(0.975, 2) * 2.0 / math.sqrt(3)  # sd of (10, 12, 14) is 2
    assert centre == pytest.approx(12.0)
    assert (low, high) == pytest.approx((12.0 - half, 12.0 + half))


def test_log_interval_is_the_geometric_one_and_stays_above_zero():
    values = [100.0, 400.0]  # two seeds far apart: the linear interval reaches far below zero
    assert mean_interval(values)[1] < 0
    centre, low, high = mean_interval(values, log=True)
    half = sps.t.ppf(0.975, 1) * (math.log(400) - math.log(100)) / math.sqrt(2) / math.sqrt(2)
    assert centre == pytest.approx(200.0)  # sqrt(100 * 400)
    assert (low, high) == pytest.approx((200.0 * math.exp(-half), 200.0 * math.exp(half)))
    assert 0 < low < centre < high
    assert math.log(centre) - math.log(low) == pytest.approx(math.log(high) - math.log(centre))


def test_one_seed_has_no_interval_and_non_positive_values_fall_back_to_linear():
    assert mean_interval([7.0], log=True) == pytest.approx((7.0, 7.0, 7.0))
    assert mean_interval([-1.0, 1.0], log=True)[0] == pytest.approx(0.0)
