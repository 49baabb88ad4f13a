"""Common random numbers: with the same seed, two strategies start from the same body weights."""

from __future__ import annotations

import torch

from embtie import seeding
from embtie.config import load_config
from embtie.tasks.lm import LMTask
from tiny_runs import TINY_GPT_BODY


def _body(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v for k, v in model.state_dict().items() if not k.startswith("sharing.")}


def _model(strategy: str, seed: int) -> torch.nn.Module:
    cfg = load_config("ptb-gpt-tiny", [*TINY_GPT_BODY, f"sharing.name={strategy}", f"seed={seed}"])
    return LMTask(cfg).build_model()


def test_streams_are_distinct_and_depend_on_the_seed_only():
    assert seeding.stream_seed(0, "body") == seeding.stream_seed(0, "body")
    assert len({seeding.stream_seed(s, n) for s in (0, 1) for n in ("body", "sharing")}) == 4
    assert all(0 <= seeding.stream_seed(s, "body") < 2**63 for s in range(5))


def test_same_seed_same_body_whatever_the_strategy():
    tied, untied, fixed = (_model(n, 3) for n in ("tied", "untied", "fixed"))
    for other in (untied, fixed):  # untied and fixed draw more random numbers for their heads than tied
        a, b = _body(tied), _body(other)
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    # the shared input matrix is the same draw too, where two strategies have the same one
    assert torch.equal(tied.sharing.weight, untied.sharing.weight)
    other_seed = _body(_model("tied", 4))
    assert not all(torch.equal(v, other_seed[k]) for k, v in _body(tied).items() if v.numel() > 1)


def test_building_leaves_the_callers_random_state_alone():
    torch.manual_seed(123)
    before = torch.random.get_rng_state()
    _model("tied", 0)
    assert torch.equal(torch.random.get_rng_state(), before)
