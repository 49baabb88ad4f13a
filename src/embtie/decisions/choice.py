"""Which strategy to use: the answer a comparison ends with, decided over all the strategies compared.

Every pair of strategies is compared on its paired seeds (with common random numbers seed s of any two
strategies shares its data order and evaluation sample), and the differences and equivalences of all
the pairs are **one family** (``verdict.decide_all``: one step-down procedure at level a, Shaffer's
bound), so the probability that any pair's verdict is wrong is at most a. The choice is read off the
pair verdicts:

- a strategy is **ruled out** when another is decided better than it;
- the choice is **decided** when a set C of strategies is better than every strategy outside it and its
  members are pairwise equivalent within the margin: one strategy ("use untied") or several
  ("untied and l2norm are equivalent within ±1%; both better than tied");
- otherwise it is **undecided**: the strategies not ruled out remain, with the pairs still open.

A decided choice is wrong only if some pair verdict is wrong (if every printed verdict is true, every
member of C is truly better than every non-member and truly within the margin of the others), so a
wrong choice has probability at most a as well; tests/decisions/test_choice.py simulates it under no
difference and at the margin. This is "all pairs with one step-down family" rather than Hsu's multiple
comparisons with the best (1984): it needs no one-sided direction fixed in advance, gives the
equivalence statements a set of equals needs, and the pairs against the baseline are the "vs baseline"
verdicts of the same family.

When C has several members the cost breaks the tie, and the sentence says so (fewer parameters first).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

from embtie.decisions.margins import Margin
from embtie.decisions.paired import PairedDifference, paired_difference
from embtie.decisions.sequential import SequentialDesign, with_seeds_needed
from embtie.decisions.verdict import Decision, decide_all

Pair = tuple[str, str]
"""(a, b): the decision is about a - b (a percent of b for a relative margin)."""


def pairs_of(strategies: Sequence[str]) -> list[Pair]:
    """Every pair once, the later strategy first: with the baseline first in ``strategies`` its pairs
    read "strategy - baseline", as the vs-baseline verdicts do."""
    return [(b, a) for a, b in combinations(strategies, 2)]


def _name(pair: Pair) -> str:
    return f"{pair[0]} vs {pair[1]}"


@dataclass(frozen=True)
class Choice:
    """The decided answer (``use``) or the strategies still in the running (``candidates``)."""

    strategies: tuple[str, ...]
    pairs: dict[Pair, Decision]
    use: tuple[str, ...]
    """the decided set, best first by cost when costs were given; empty while undecided."""
    candidates: tuple[str, ...]
    """the strategies no other is decided better than."""
    higher_is_better: bool
    costs: Mapping[str, float] | None = None
    """each strategy's cost (e.g. parameters learned), the tie-break that orders ``use``; None: not known."""

    @property
    def decided(self) -> bool:
        return bool(self.use)

    @property
    def n(self) -> int:
        """The most paired seeds any pair verdict rests on."""
        return max((d.n for d in self.pairs.values()), default=0)

    def verdict(self, a: str, b: str) -> str:
        """The verdict of a against b ('better' means a is the better one), 'undecided' when not tested."""
        if (a, b) in self.pairs:
            return self.pairs[(a, b)].verdict
        flip = {"better": "worse", "worse": "better"}
        v = self.pairs[(b, a)].verdict if (b, a) in self.pairs else "undecided"
        return flip.get(v, v)

    def open_pairs(self) -> list[Pair]:
        """The undecided pairs between strategies still in the running (what more seeds could settle)."""
        return [p for p, d in self.pairs.items()
                if d.verdict == "undecided" and p[0] in self.candidates and p[1] in self.candidates]  # fmt: skip

    def against(self, baseline: str) -> dict[str, Decision]:
        """The decisions of every other strategy against ``baseline`` (strategy - baseline), as stored
        when the baseline came first (``pairs_of``)."""
        return {a: d for (a, b), d in self.pairs.items() if b == baseline}


def choose(
    strategies: Sequence[str],
    pairs: Mapping[Pair, Decision],
    higher_is_better: bool,
    costs: Mapping[str, float] | None = None,
) -> Choice:
    """The choice that the pair decisions support (module docstring); ``costs`` (e.g. parameters)
    order a decided set of equals, cheapest first."""
    draft = Choice(tuple(strategies), dict(pairs), (), (), higher_is_better)
    beaten = {s for s in strategies for t in strategies if s != t and draft.verdict(t, s) == "better"}
    candidates = tuple(s for s in strategies if s not in beaten)
    outside = [s for s in strategies if s not in candidates]
    decided = bool(candidates) and all(
        draft.verdict(c, s) == "better" for c in candidates for s in outside
    ) and all(draft.verdict(a, b) == "equivalent" for a, b in combinations(candidates, 2))
    use = candidates if decided else ()
    if costs is not None:
        use = tuple(sorted(use, key=lambda s: (costs.get(s, float("inf")), strategies.index(s))))
    return replace(draft, use=use, candidates=candidates, costs=costs)


def pair_differences(
    values: Mapping[str, Sequence[float]], margin: Margin, n: int | None = None
) -> dict[Pair, PairedDifference]:
    """The paired differences of every pair over their first ``n`` seeds (all they share when None)."""
    out = {}
    for a, b in pairs_of(list(values)):
        k = min(len(values[a]), len(values[b])) if n is None else n
        out[(a, b)] = paired_difference(values[a][:k], values[b][:k], margin)
    return out


def decide_choice(
    values: Mapping[str, Sequence[float]],
    margin: Margin,
    higher_is_better: bool,
    level: float = 0.05,
    costs: Mapping[str, float] | None = None,
    with_power: bool = True,
) -> Choice:
    """One look: every pair decided in one family at ``level``, and the choice they support
    (``with_power`` False leaves the undecided pairs' seeds to decide unset)."""
    diffs = pair_differences(values, margin)
    decided = decide_all({_name(p): d for p, d in diffs.items()}, higher_is_better, level, with_power)
    return choose(list(values), {p: decided[_name(p)] for p in diffs}, higher_is_better, costs)


def replay_choice(
    design: SequentialDesign,
    values: Mapping[str, Sequence[float]],
    margin: Margin,
    higher_is_better: bool,
    costs: Mapping[str, float] | None = None,
    with_power: bool = True,
) -> Choice:
    """The choice under a sequential ``design`` from every strategy's per-seed values: at each look the
    pairs still undecided whose two strategies have that many seeds are one family at the look's level;
    a decided pair is final; the replay stops at the first look whose verdicts decide the choice. The
    pairs left undecided get the seeds that would decide them unless ``with_power`` is False."""
    strategies = list(values)
    final: dict[Pair, Decision] = {}
    spread: dict[Pair, float] = {}
    for n in design.looks:
        ready = {p: d for p, d in pair_differences(values, margin, n).items()
                 if (p not in final or final[p].verdict == "undecided")
                 and len(values[p[0]]) >= n and len(values[p[1]]) >= n}  # fmt: skip
        if ready:
            decided = decide_all({_name(p): d for p, d in ready.items()}, higher_is_better, design.alpha_per_look,
                                 with_power=False)  # fmt: skip
            final.update({p: decided[_name(p)] for p in ready})
            spread.update({p: d.sd for p, d in ready.items()})
        if choose(strategies, final, higher_is_better).decided:
            break
    if with_power:
        final = {p: with_seeds_needed(d, spread[p]) for p, d in final.items()}
    return choose(strategies, final, higher_is_better, costs)


def seeds_wanted_for_choice(design: SequentialDesign, choice: Choice, have: Mapping[str, int]) -> dict[str, int]:
    """Seeds each strategy should have after the next round: none more once the choice is decided;
    else a strategy in an undecided pair (or in no pair yet) moves to the next look above what it has."""
    if choice.decided:
        return dict(have)
    waiting = {s for p, d in choice.pairs.items() if d.verdict == "undecided" for s in p}
    untested = {s for s in have if not any(s in p for p in choice.pairs)}
    return {s: next((look for look in design.looks if look > n), n) if s in waiting | untested else n
            for s, n in have.items()}  # fmt: skip


def _join(names: Sequence[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    return quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " and " + quoted[-1]


def sentence(choice: Choice, metric: str, margin: Margin, cost_name: str = "parameters") -> str:
    """The answer in words: what to use, on which metric, decided at how many paired seeds; or what is
    still open, with the pairs of the remaining strategies already decided equivalent (a set of equals
    in the making: what the family has shown so far is said, not only what it has not)."""
    if choice.decided:
        rest = [s for s in choice.strategies if s not in choice.use]
        if len(choice.use) == 1:
            than = f": better than {_join(rest)} on {metric}" if rest else ""
            return f"use {_join(choice.use)}{than}, decided at {choice.n} paired seeds."
        said = f"{_join(choice.use)} are equivalent within {margin.text()} on {metric}"
        if rest:
            said += f"; {'both' if len(choice.use) == 2 else 'all'} better than {_join(rest)}"
        if choice.costs is not None:
            said += f"; by {cost_name}, the cheapest of them is `{choice.use[0]}`"
        return f"{said}, decided at {choice.n} paired seeds."
    open_pairs = choice.open_pairs()
    still = f"{_join(choice.candidates)} remain" if choice.candidates else "no strategy is unbeaten"
    equals = [p for p, d in choice.pairs.items()
              if d.verdict == "equivalent" and p[0] in choice.candidates and p[1] in choice.candidates]  # fmt: skip
    detail = "; ".join([f"`{a}` vs `{b}` undecided" for a, b in open_pairs]
                       + [f"`{a}` and `{b}` equivalent within {margin.text()}" for a, b in equals])  # fmt: skip
    return f"no choice yet on {metric}: {still}{' (' + detail + ')' if detail else ''}, at {choice.n} paired seeds."
