"""Which strategy to use (decisions.choice): a clear best is chosen, a set of equals is named with the
cost that breaks the tie, and a wrong choice is printed at most at the level under no difference and
at the margin (simulated, one look and sequential)."""

from __future__ import annotations

from functools import cache
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest

from embtie.decisions import Margin, SequentialDesign
from embtie.decisions.choice import (
    choose,
    decide_choice,
    pairs_of,
    replay_choice,
    seeds_wanted_for_choice,
    sentence,
)

MARGIN = Margin(0.5)
LEVEL = 0.05


def _values(means: dict[str, float], n: int, rng: np.random.Generator, sd: float = 0.4, shared: float = 1.0):
    """Per-seed values with common random numbers: a seed effect every strategy shares, plus its own noise."""
    seed_effect = rng.normal(0.0, shared, n)
    return {k: list(seed_effect + mu + rng.normal(0.0, sd, n)) for k, mu in means.items()}


def test_pairs_read_strategy_minus_the_first_strategy():
    assert pairs_of(["tied", "untied", "l2norm"]) == [("untied", "tied"), ("l2norm", "tied"), ("l2norm", "untied")]


def test_a_clear_best_is_the_choice_and_the_sentence_says_so():
    rng = np.random.default_rng(0)
    values = _values({"tied": 10.0, "untied": 7.0, "l2norm": 10.1}, 6, rng, sd=0.1)
    choice = decide_choice(values, MARGIN, higher_is_better=False)
    assert choice.decided and choice.use == ("untied",)
    assert choice.verdict("untied", "tied") == "better" and choice.verdict("tied", "untied") == "worse"
    assert sentence(choice, "perplexity", MARGIN) == (
        "use `untied`: better than `tied` and `l2norm` on perplexity, decided at 6 paired seeds.")
    assert set(choice.against("tied")) == {"untied", "l2norm"}


def test_equals_are_named_together_and_the_cost_breaks_the_tie():
    rng = np.random.default_rng(1)
    values = _values({"tied": 10.0, "untied": 7.0, "l2norm": 7.0}, 6, rng, sd=0.05)
    costs = {"tied": 1.0, "untied": 2.0, "l2norm": 1.0}
    choice = decide_choice(values, MARGIN, higher_is_better=False, costs=costs)
    assert choice.decided and choice.use == ("l2norm", "untied")
    text = sentence(choice, "perplexity", MARGIN)  # the costs the choice was ordered by
    assert text.startswith("`l2norm` and `untied` are equivalent within ±0.5 on perplexity; both better than `tied`")
    assert "the cheapest of them is `l2norm`" in text


def test_an_undecided_choice_names_what_remains_and_asks_seeds_for_the_open_pairs():
    rng = np.random.default_rng(2)
    values = _values({"tied": 10.0, "untied": 7.0, "l2norm": 7.3}, 4, rng, sd=0.6)
    choice = decide_choice(values, MARGIN, higher_is_better=False)
    assert not choice.decided and "tied" not in choice.candidates
    assert ("l2norm", "untied") in choice.open_pairs()
    said = sentence(choice, "perplexity", MARGIN)
    assert said.startswith("no choice yet on perplexity: `untied` and `l2norm` remain")
    design = SequentialDesign(first=4, step=2, max_seeds=10)
    assert seeds_wanted_for_choice(design, choice, {"tied": 4, "untied": 4, "l2norm": 4}) == {
        "tied": 4, "untied": 6, "l2norm": 6}


def test_a_cycle_of_wins_decides_nothing():
    from embtie.decisions.verdict import Decision

    def d(v: str) -> Decision:
        return Decision(v, 4, 1.0, (0.5, 1.5), (0.6, 1.4), 0.01, 0.9, 0.01, 0.9, 0.05, 0.5, False, None, "t")

    pairs = {("b", "a"): d("better"), ("c", "b"): d("better"), ("c", "a"): d("worse")}
    choice = choose(["a", "b", "c"], pairs, higher_is_better=True)
    assert not choice.decided and choice.candidates == ()


def test_an_undecided_choice_also_names_the_equals_already_shown():
    """su-alike's shape: b and c are decided equivalent, neither is yet told from a, so nothing is chosen,
    but the sentence says what the family has shown besides what is open."""
    from embtie.decisions.verdict import Decision

    def d(v: str) -> Decision:
        return Decision(v, 4, 1.0, (0.5, 1.5), (0.6, 1.4), 0.01, 0.9, 0.01, 0.9, 0.05, 0.5, False, None, "t")

    pairs = {("b", "a"): d("undecided"), ("c", "a"): d("undecided"), ("c", "b"): d("equivalent")}
    choice = choose(["a", "b", "c"], pairs, higher_is_better=False)
    assert not choice.decided and choice.candidates == ("a", "b", "c")
    assert sentence(choice, "perplexity", Margin(2.0, relative=True)) == (
        "no choice yet on perplexity: `a`, `b` and `c` remain (`b` vs `a` undecided; `c` vs `a` undecided; "
        "`c` and `b` equivalent within ±2%), at 4 paired seeds.")


def _wrong(choice, means: dict[str, float], higher_is_better: bool) -> bool:
    """A decided choice the truth contradicts: a member not truly better than a non-member, or two
    members truly at or beyond the margin from each other."""
    if not choice.decided:
        return False
    sign = 1 if higher_is_better else -1
    outside = [s for s in choice.strategies if s not in choice.use]
    beats = all(sign * (means[c] - means[s]) > 0 for c in choice.use for s in outside)
    equal = all(abs(means[a] - means[b]) < MARGIN.value for a, b in combinations(choice.use, 2))
    return not (beats and equal)


TRUTHS = {
    "no difference": {"tied": 10.0, "untied": 10.0, "l2norm": 10.0},
    "at the margin": {"tied": 10.0, "untied": 9.5, "l2norm": 9.0},
}


ONE_LOOK_REPS, SEQUENTIAL_REPS = 1500, 600


@cache
def _one_look_rate(truth: str) -> float:
    means, n = TRUTHS[truth], 6
    rng = np.random.default_rng(21)
    return sum(_wrong(decide_choice(_values(means, n, rng, sd=0.5), MARGIN, False, LEVEL, with_power=False),
                      means, False) for _ in range(ONE_LOOK_REPS)) / ONE_LOOK_REPS  # fmt: skip


@cache
def _sequential_rate() -> float:
    design = SequentialDesign(first=4, step=2, max_seeds=10, alpha=LEVEL)
    rng = np.random.default_rng(22)
    means = TRUTHS["at the margin"]
    return sum(_wrong(replay_choice(design, _values(means, 10, rng, sd=0.5), MARGIN, False, with_power=False),
                      means, False) for _ in range(SEQUENTIAL_REPS)) / SEQUENTIAL_REPS  # fmt: skip


@pytest.mark.parametrize("truth", list(TRUTHS))
def test_a_wrong_choice_is_printed_at_most_at_the_level(truth):
    assert _one_look_rate(truth) <= LEVEL + 3 * np.sqrt(LEVEL * (1 - LEVEL) / ONE_LOOK_REPS)


def test_a_sequential_choice_is_wrong_at_most_at_the_level_and_usually_decides_a_clear_best():
    design = SequentialDesign(first=4, step=2, max_seeds=10, alpha=LEVEL)
    assert _sequential_rate() <= LEVEL + 3 * np.sqrt(LEVEL * (1 - LEVEL) / SEQUENTIAL_REPS)
    rng = np.random.default_rng(23)
    clear = {"tied": 10.0, "untied": 8.0, "l2norm": 10.0}
    picks = [replay_choice(design, _values(clear, 10, rng, sd=0.3), MARGIN, False, with_power=False).use
             for _ in range(100)]
    assert sum(p == ("untied",) for p in picks) >= 90


def test_docs_quote_the_simulated_rates():
    text = " ".join((Path(__file__).parents[2] / "docs" / "decisions.md").read_text(encoding="utf-8").split())
    rates = [100 * _one_look_rate("no difference"), 100 * _one_look_rate("at the margin"), 100 * _sequential_rate()]
    assert (f"a wrong choice {rates[0]:.2f}% of the time when no strategy differs, {rates[1]:.2f}% when they "
            f"differ by exactly the margin, and {rates[2]:.2f}% in a sequential design at the margin") in text
