"""How a run's seed becomes its random numbers: one stream per source of variance, so that two
strategies trained with the same seed differ only in their sharing object (common random numbers).

Scheme 2 (the current one) draws the sharing object's initial weights from the stream ``sharing`` and
everything else the model holds (the body, a separate source embedding) from the stream ``body``;
both are derived from the seed alone, so the body starts from the same weights whatever the strategy.
The training data order (``seed * 1_000_003 + epoch``) and the dropout stream (``seed * 7919 + 1 +
rank``) are functions of the seed alone too, and evaluation samples are fixed. Scheme 1 (runs
whose summary has no ``seeding`` entry) built the sharing object and then the body from one stream
seeded with ``seed``: the body's weights then depended on how many random numbers the strategy drew
(untied draws a second matrix), and a comparison's seeds were not paired.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import TypeVar

import torch

SCHEME = 2
"""the seeding scheme of runs trained by this version (recorded in every summary)."""

LEGACY_SCHEME = 1
"""the scheme of runs whose summary does not record one."""

M = TypeVar("M")
S = TypeVar("S")


def stream_seed(seed: int, stream: str) -> int:
    """A 63-bit seed for ``stream`` of run seed ``seed`` (a hash: streams do not overlap by construction)."""
    digest = hashlib.sha256(f"embtie/{seed}/{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & (2**63 - 1)


def build_with_streams(seed: int, build_sharing: Callable[[], S], build_body: Callable[[S], M]) -> M:
    """``build_body(build_sharing())``, the sharing object drawn from the stream ``sharing`` and the rest
    from the stream ``body``; the caller's random state is left as it was."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(stream_seed(seed, "sharing"))
        shared = build_sharing()
        torch.manual_seed(stream_seed(seed, "body"))
        return build_body(shared)
