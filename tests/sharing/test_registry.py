import pytest

from embtie import sharing
from embtie.errors import ConfigError


def test_every_seed_strategy_is_registered():
    for name in (*sharing.SEED_STRATEGIES, "ngpt"):
        assert name in sharing.names()


def test_unknown_strategy_and_option_are_refused():
    with pytest.raises(ConfigError, match="unknown strategy 'nope'"):
        sharing.build("nope", vocab_size=10, dim=4)
    with pytest.raises(ConfigError, match="unknown option 'colour'"):
        sharing.build("tied", vocab_size=10, dim=4, colour="red")
