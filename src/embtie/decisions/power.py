"""How many seeds an undecided comparison would need, at its observed mean difference and spread, to be
decided with 80% probability: by the paired t-test when the observed difference is outside the margin,
by the equivalence test (TOST) when it is inside. Noncentral-t power (Student's test with n - 1 degrees
of freedom), searched over n."""

from __future__ import annotations

import math

from scipy import stats as st

MAX_SEEDS = 200


def power_difference(delta: float, sd: float, n: int, alpha: float) -> float:
    """Power of the two-sided paired t-test at level ``alpha`` with n seeds, true mean ``delta``."""
    if n < 2:
        return 0.0
    df, nc = n - 1, delta / (sd / math.sqrt(n))
    crit = st.t.ppf(1 - alpha / 2, df)
    return float(st.nct.sf(crit, df, nc) + st.nct.cdf(-crit, df, nc))


def power_equivalence(delta: float, sd: float, n: int, alpha: float, margin: float) -> float:
    """A lower bound of TOST's power at level ``alpha`` (both one-sided tests must reject; the bound
    subtracts the two failure probabilities), true mean ``delta`` inside ± ``margin``."""
    if n < 2:
        return 0.0
    df, se = n - 1, sd / math.sqrt(n)
    crit = st.t.ppf(1 - alpha, df)
    fail_low = st.nct.cdf(crit, df, (delta + margin) / se)  # (d + m)/se must exceed crit
    fail_high = st.nct.sf(-crit, df, (delta - margin) / se)  # (d - m)/se must fall below -crit
    return max(0.0, 1.0 - float(fail_low) - float(fail_high))


def seeds_to_decide(delta: float, sd: float, margin: float, alpha: float, power: float = 0.8) -> int | None:
    """Seeds (pairs) that would decide a comparison with probability ``power`` if the observed mean
    difference and spread were the true ones; None when the spread is unknown or more than MAX_SEEDS
    would be needed (the difference sits at the margin)."""
    if not (math.isfinite(delta) and math.isfinite(sd)) or sd <= 0:
        return None
    inside = abs(delta) < margin

    def enough(n: int) -> bool:
        p = power_equivalence(delta, sd, n, alpha, margin) if inside else power_difference(delta, sd, n, alpha)
        return p >= power

    if not enough(MAX_SEEDS):
        return None
    lo, hi = 1, MAX_SEEDS  # power grows with n: bisect for the smallest n that reaches it
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if enough(mid) else (mid, hi)
    return hi
