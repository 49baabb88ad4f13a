"""Named model sizes for ``--ladder size=xs,s,m,l``: one name sets depth, width and heads together.

Only the GPT body has them (``models.gpt``, where the width is the embedding width d): a size is
(d, layers, heads) with heads of width 16 up to d = 128 and of width 32-64 above (rotary positions need an
even head width). Each size has about 2-4x the body (non-embedding) parameters of the one before,
12 L d^2 at mlp_ratio 4: from 12 k (xs) through the preset ptb-gpt-tiny's order (2xl, 0.6 M) to GPT-2
small's body (6xl, 85 M) and beyond, so one list spans what a CPU reaches and what only a GPU does.
"""

from __future__ import annotations

from dataclasses import dataclass

from embtie.errors import ConfigError


@dataclass(frozen=True)
class Size:
    dim: int
    n_layers: int
    n_heads: int

    def overrides(self) -> list[str]:
        """The config overrides that give a GPT this size."""
        return [f"model.dim={self.dim}", f"model.n_layers={self.n_layers}", f"model.n_heads={self.n_heads}"]


SIZES: dict[str, Size] = {
    "xs": Size(32, 1, 2),
    "s": Size(48, 1, 3),
    "m": Size(64, 1, 4),
    "l": Size(64, 2, 4),
    "xl": Size(96, 2, 6),
    "2xl": Size(128, 3, 8),
    "3xl": Size(192, 4, 6),
    "4xl": Size(256, 6, 4),
    "5xl": Size(512, 8, 8),
    "6xl": Size(768, 12, 12),
    "7xl": Size(1024, 24, 16),
    "8xl": Size(2048, 24, 16),
}
"""name -> GPT shape, smallest first."""

SIZED_MODELS = ("gpt",)
"""the models whose shape a size name sets (the keys of ``Size.overrides``)."""


def size(name: str, flag: str = "--ladder") -> Size:
    """The size called ``name`` (a ConfigError naming ``flag``, the option that gave it, and listing the names)."""
    if name not in SIZES:
        raise ConfigError(f"{flag} size={name!r} is not a size; the sizes are {', '.join(SIZES)}")
    return SIZES[name]
