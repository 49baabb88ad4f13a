"""The strategy catalogue: every way of sharing (or not) the input embedding with the output layer.

from embtie import sharing
sharing.names()
s = sharing.build("l2norm", vocab_size=V, dim=d, bias=True)
s.embed(ids); s.logits(h); s.loss(h, targets)
"""

# Import order is registration order, which is the order of sharing.names().
from embtie.sharing import tied  # noqa: F401, I001
from embtie.sharing import normalized, fixed, transformed, ngpt  # noqa: F401  (registers strategies)
from embtie.sharing import tie_untie, grad_scale  # noqa: F401  (registers strategies)
from embtie.sharing import adaptive  # noqa: F401  (registers strategies)
from embtie.sharing.base import LogitMoments, SharingStrategy
from embtie.sharing.head import Head
from embtie.sharing.registry import Option, accepted_options, build, check_options, get, names, options

SEED_STRATEGIES = (
    "untied",
    "tied",
    "l2norm",
    "sqnorm",
    "distance",
    "cosine",
    "fixed",
    "hadamard",
    "tied-proj",
    "tied-bert",
    "tied-loginit",
    "tied-shuffle",
)

__all__ = [
    "SEED_STRATEGIES",
    "Head",
    "LogitMoments",
    "Option",
    "SharingStrategy",
    "accepted_options",
    "build",
    "check_options",
    "get",
    "names",
    "options",
]
