"""Margins of practical equivalence: a difference smaller than the margin is one a user would not act
on. A relative margin is a percentage of the baseline's value (perplexity: 1%), an absolute one is in
the metric's own unit (BLEU: 0.5 points). They are the frequentist form of a region of practical
equivalence (Benavoli et al., JMLR 2017) and are printed in every report that uses them."""

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


DEFAULT_MARGINS: dict[str, Margin] = {
    "valid_ppl": Margin(1.0, relative=True),
    "bleu": Margin(0.5),
    "vu": Margin(5.0, relative=True),
    "valid_bpb": Margin(0.2, relative=True),
}
"""Defaults per tested metric: perplexity ±1% (about the run-to-run spread of a well-seeded LM
comparison), BLEU ±0.5 points (below what MT papers report as a gain; captioning's BLEU-4 is tested
under the same key), vocabulary usage ±5% of the baseline's distinct words, bits per byte ±0.2%: bits per
byte is proportional to the loss, and perplexity ±1% is a loss difference of 0.01 nats, 0.2% of a word
model's loss of about 5 nats (perplexity ~150). The test split's metrics use their validation margin."""

_ITEM = re.compile(r"^(?P<key>[a-z_0-9]+)=(?P<value>[0-9.eE+-]+)(?P<pct>%?)$")


def parse_margins(text: str | None, defaults: dict[str, Margin] | None = None) -> dict[str, Margin]:
    """``"valid_ppl=2%,bleu=0.3"`` -> the defaults with those margins replaced (None: the defaults)."""
    out = dict(DEFAULT_MARGINS if defaults is None else defaults)
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
