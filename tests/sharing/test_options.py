"""Nonsense options are refused with one-line errors that name the problem."""

import pytest

from embtie import sharing
from embtie.errors import ConfigError

BAD = [
    ("tied", {"colour": "red"}, "unknown option 'colour'"),
    ("nope", {}, "unknown strategy 'nope'"),
    ("fixed", {"target_dim": 0}, "target_dim"),
    ("hadamard", {"target_dim": -3}, "target_dim"),
    ("fixed", {"target_init": "gaussian"}, "target_init"),
    ("fixed", {"target_range": 0}, "target_range"),
    ("tied-shuffle", {}, "must be even"),
    ("tied", {"init_std": "huge"}, "init_std"),
    ("tied", {"init_std": -1.0}, "init_std"),
    ("tied", {"init_std": 0.1, "init_range": 0.1}, "exclude each other"),
    ("tied", {"logit_scale": "big"}, "logit_scale"),
    ("tied", {"embed_scale": "sqrt"}, "embed_scale"),
    ("tied", {"softcap": 0}, "softcap"),
    ("tied", {"bias": "yes"}, "bias"),
    ("tied-proj", {"proj_reg": -0.1}, "proj_reg"),
    ("tied-proj", {"proj_init": "zeros"}, "proj_init"),
    ("tied-bert", {"activation": "swish"}, "activation"),
    ("tied-bert", {"norm": "batchnorm"}, "norm"),
    ("ngpt", {"target_dim": 4}, "unknown option 'target_dim'"),
]


@pytest.mark.parametrize(("name", "options", "message"), BAD)
def test_bad_options_are_refused(name, options, message):
    dim = 7 if name == "tied-shuffle" else 8
    with pytest.raises(ConfigError, match=message) as err:
        sharing.build(name, vocab_size=10, dim=dim, **options)
    assert "\n" not in str(err.value)


def test_groups_must_divide_width():
    with pytest.raises(ConfigError, match="divides dim=8"):
        sharing.build("tied-shuffle", vocab_size=10, dim=8, groups=3)


def test_sizes_are_validated():
    with pytest.raises(ConfigError, match="vocab_size"):
        sharing.build("tied", vocab_size=1, dim=8)
    with pytest.raises(ConfigError, match="dim"):
        sharing.build("tied", vocab_size=10, dim=0)
