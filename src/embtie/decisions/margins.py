"""Margins of practical equivalence: a difference smaller than the margin is one a user would not act
on. A relative margin is a percentage of the baseline's value (perplexity: 1%), an absolute one is in
the metric's own unit (BLEU: 0.5 points). They are the frequentist form of a region of practical
equivalence (Benavoli et al., JMLR 2017) and are printed in every report that uses them. This module is
generic: each metric's default margin is declared with the metric (``embtie.metrics``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from embtie.errors import ConfigError


@dataclass(frozen=True)
class Margin:
    """± ``value`` around no difference: percent of the baseline when ``relative``, else metric units."""

    value: float
    relative: bool = False

    def __post_init__(self) -> None:
        if not self.value > 0:
            raise ConfigError(f"a margin must be > 0, got {self.value}")

    def text(self) -> str:
        """For a report: ``±1%`` or ``±0.5``."""
        return f"±{self.spec()}"

    def spec(self) -> str:
        """As ``--margin`` takes it: ``1%`` or ``0.5``."""
        return f"{self.value:g}%" if self.relative else f"{self.value:g}"


_ITEM = re.compile(r"^(?P<key>[a-z_0-9]+)=(?P<value>[0-9.eE+-]+)(?P<pct>%?)$")


def parse_margins(text: str | None, defaults: dict[str, Margin]) -> dict[str, Margin]:
    """``"valid_ppl=2%,bleu=0.3"`` -> ``defaults`` (metric key -> margin; ``embtie.metrics.DEFAULT_MARGINS``)
    with those margins replaced (None: the defaults)."""
    out = dict(defaults)
    if not text:
        return out
    for item in (i.strip() for i in text.split(",")):
        m = _ITEM.match(item)
        if not m:
            raise ConfigError(
                f"--margin {item!r} is not METRIC=VALUE or METRIC=VALUE%; e.g. --margin valid_ppl=1%,bleu=0.5"
            )
        if m["key"] not in out:
            raise ConfigError(f"--margin {m['key']!r}: no such tested metric; choose from {', '.join(out)}")
        try:
            value = float(m["value"])
        except ValueError:
            raise ConfigError(f"--margin {item!r}: {m['value']!r} is not a number") from None
        out[m["key"]] = Margin(value, relative=bool(m["pct"]))
    return out
