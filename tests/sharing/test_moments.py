"""tie-untie's switches read and write optimizer state where the optimizer keeps it (embtie.sharing.moments):
torch's ZeroRedundancyOptimizer keeps it in the owning rank's local optimizer, so read from its empty
``state`` a stepped E looked never stepped (a false refusal at the untie) and its moments were never copied.
One process, then two (gloo, E and O owned by different ranks: the moments cross ranks by broadcast); the
re-tie's average refuses an Adam that never stepped after step 0, as the untie does."""

from __future__ import annotations

import os
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.optim import ZeroRedundancyOptimizer

from embtie import loop, sharing
from embtie.errors import ConfigError


class Host(nn.Module):
    def __init__(self, **options: object) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.sharing = sharing.build("tie-untie", vocab_size=10, dim=4, **options)
        self.body = nn.Linear(4, 4)


def _step(host: Host, optimizer: torch.optim.Optimizer, step: int, total: int) -> None:
    loop.on_train_step(host, step, total, optimizer)
    ids = torch.arange(10).view(2, 5)
    host.sharing.logits(host.body(host.sharing.embed(ids))).square().mean().backward()
    optimizer.step()
    optimizer.zero_grad()


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def one_process():
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(_port()))
    dist.init_process_group("gloo", rank=0, world_size=1)
    yield
    dist.destroy_process_group()


def test_zero_in_one_process_copies_e_s_moments_at_the_untie(one_process):
    host = Host(untie_at=0.5)
    zero = ZeroRedundancyOptimizer(host.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    for step in range(5):
        _step(host, zero, step, 10)
    e = {k: v.clone() for k, v in zero.optim.state[host.sharing.weight].items()}
    assert not zero.state  # what a read of ZeRO's own state saw: nothing, so "never stepped"
    loop.on_train_step(host, 5, 10, zero)
    assert host.sharing.is_untied
    o = zero.optim.state[host.sharing.out_weight]
    assert set(o) == set(e) and all(torch.equal(o[k], e[k]) for k in e)
    assert o["exp_avg"].data_ptr() != zero.optim.state[host.sharing.weight]["exp_avg"].data_ptr()


def test_zero_that_never_stepped_is_refused_at_a_late_untie(one_process):
    host = Host(untie_at=0.5)
    zero = ZeroRedundancyOptimizer(host.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    with pytest.raises(ConfigError, match=r"unties at on_train_step\(step=5\) but the optimizer holds no state for E"):
        loop.on_train_step(host, 5, 10, zero)
    assert not host.sharing.is_untied


def test_fsdp1_flat_parameters_are_refused_at_the_first_step_in_one_line():
    """FSDP1 needs an accelerator; its marker (set by torch's own helper on every parameter it flattens, and on
    the FlatParameter) is what the strategy reads: E marked (use_orig_params=True), or an optimizer holding a
    marked flat tensor in place of E and O (use_orig_params=False), is refused before any switch."""
    from torch.distributed.fsdp._common_utils import _set_fsdp_flattened

    host = Host(untie_at=0.5)
    _set_fsdp_flattened(host.sharing.weight)
    optimizer = torch.optim.AdamW(host.parameters(), lr=1e-2)
    with pytest.raises(ConfigError, match=r"cannot switch between tied and untied under FSDP1") as err:
        loop.on_train_step(host, 0, 10, optimizer)
    assert "\n" not in str(err.value) and "fully_shard" in str(err.value)
    other = Host(untie_at=0.5)
    flat = nn.Parameter(torch.cat([p.detach().flatten() for p in other.parameters()]))
    _set_fsdp_flattened(flat)
    with pytest.raises(ConfigError, match="under FSDP1"):
        loop.on_train_step(other, 0, 10, torch.optim.AdamW([flat], lr=1e-2))
    assert not other.sharing.is_untied
    _step(other, torch.optim.AdamW(other.parameters(), lr=1e-2), 0, 10)  # unmarked: trains as before
    tied = nn.Module()
    tied.sharing = sharing.build("tied", vocab_size=10, dim=4)
    loop.on_train_step(tied, 0, 10, torch.optim.AdamW([flat], lr=1e-2))  # no switch: the flat optimizer is fine


def test_a_late_average_retie_with_an_optimizer_that_never_stepped_is_refused():
    host = Host(untie_at=0.2, retie_at=0.6, retie_to="average")
    optimizer = torch.optim.AdamW(host.parameters(), lr=1e-2)
    host.sharing.untie()  # as a checkpoint restored after the untie would leave it, with a fresh optimizer
    with pytest.raises(ConfigError, match=r"re-ties at on_train_step\(step=6\) but the optimizer holds no state "
                                          r"for E and O yet .*the re-tied E would not average their Adam"):  # fmt: skip
        loop.on_train_step(host, 6, 10, optimizer)
    assert not host.sharing.is_retied
    loop.on_train_step(host, 6, 10, torch.optim.SGD(host.parameters(), lr=0.1))  # no moments to average
    assert host.sharing.is_retied


def test_an_average_retie_averages_the_moments_it_was_given():
    host = Host(untie_at=0.2, retie_at=0.6, retie_to="average")
    optimizer = torch.optim.AdamW(host.parameters(), lr=1e-2)
    for step in range(6):
        _step(host, optimizer, step, 10)
    e, o = (dict(optimizer.state[p]) for p in (host.sharing.weight, host.sharing.out_weight))
    want = (e["exp_avg"] + o["exp_avg"]) * 0.5
    loop.on_train_step(host, 6, 10, optimizer)
    assert host.sharing.is_retied
    assert torch.allclose(optimizer.state[host.sharing.weight]["exp_avg"], want)
    assert torch.equal(optimizer.state[host.sharing.weight]["step"], e["step"])


def _two_ranks(rank: int, port: int, out: dict) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=2)
    torch.set_num_threads(1)
    host = Host(untie_at=0.5)
    zero = ZeroRedundancyOptimizer(host.parameters(), optimizer_class=torch.optim.AdamW, lr=1e-2)
    e_owner, o_owner = (zero._param_to_rank[p] for p in (host.sharing.weight, host.sharing.out_weight))
    for step in range(5):
        _step(host, zero, step, 10)
    loop.on_train_step(host, 5, 10, zero)  # the untie, on both ranks at once
    e = {k: torch.zeros(10, 4) for k in ("exp_avg", "exp_avg_sq")}
    if rank == e_owner:
        e = {k: zero.optim.state[host.sharing.weight][k].clone() for k in e}
    for v in e.values():
        dist.broadcast(v, src=e_owner)
    o = zero.optim.state.get(host.sharing.out_weight)
    out[rank] = {"e_owner": e_owner, "o_owner": o_owner, "untied": host.sharing.is_untied,
                 "o_is_e": None if rank != o_owner else bool(o and all(torch.equal(o[k], e[k]) for k in e)),
                 "e_stepped": bool(e["exp_avg_sq"].abs().sum() > 0)}  # fmt: skip
    dist.destroy_process_group()


@pytest.mark.slow
@pytest.mark.distributed
def test_zero_over_two_ranks_sends_e_s_moments_to_o_s_owner():
    """ZeRO puts the two equal-sized tables on different ranks; the untie at step 5 broadcasts E's moments
    from its owner, and O's owner holds exactly them."""
    out = mp.Manager().dict()
    mp.spawn(_two_ranks, args=(_port(), out), nprocs=2, join=True)
    ranks = dict(out)
    assert ranks[0]["e_owner"] != ranks[0]["o_owner"]  # the case a local copy cannot do
    assert ranks[0]["untied"] and ranks[1]["untied"] and ranks[0]["e_stepped"]
    assert ranks[ranks[0]["o_owner"]]["o_is_e"] is True


def test_after_its_untie_a_call_from_another_training_is_refused():
    """Once this process has untied at step 5 of 10: another total_steps, a step before 5, or a fresh Adam that
    holds nothing for O are one-line refusals; the same step again, later steps, a fresh optimizer given O's
    state, and a model loaded from the weights (fine-tuned from step 0) are not."""
    host = Host(untie_at=0.5)
    optimizer = torch.optim.AdamW(host.parameters(), lr=1e-2)
    for step in range(7):
        _step(host, optimizer, step, 10)
    assert host.sharing.is_untied
    cases = [
        ((7, 20, optimizer), r"on_train_step\(total_steps=20\) after its untie at step 5 of 10: .*pass 10 throughout"),
        ((2, 10, optimizer), r"on_train_step\(step=2\) goes back before its untie at step 5 of 10"),
        (
            (7, 10, torch.optim.AdamW(host.parameters(), lr=1e-2)),
            r"on_train_step\(step=7\) got another optimizer than at its untie at step 5, and it holds no state for O: "
            r"the Adam moments",
        ),
        (
            (7, 10, torch.optim.SGD(host.parameters(), lr=0.1, momentum=0.9)),
            r"on_train_step\(step=7\) .*no state for O: the momentum learned so far would restart",
        ),
    ]
    for (step, total, given), message in cases:
        with pytest.raises(ConfigError, match=rf"^strategy 'tie-untie': {message}") as err:
            loop.on_train_step(host, step, total, given)
        assert "\n" not in str(err.value)
    _step(host, optimizer, 7, 10)
    loop.on_train_step(host, 7, 10, optimizer)  # the same step again (a loop that calls it per micro-batch)
    restored = torch.optim.AdamW(host.parameters(), lr=1e-2)
    restored.load_state_dict(optimizer.state_dict())
    _step(host, restored, 8, 10)  # a fresh optimizer holding the state: accepted
    _step(host, torch.optim.SGD(host.parameters(), lr=0.1), 9, 10)  # plain SGD keeps nothing to lose
    loaded = Host(untie_at=0.5)
    loaded.load_state_dict(host.state_dict())
    assert loaded.sharing.is_untied
    _step(loaded, torch.optim.AdamW(loaded.parameters(), lr=1e-2), 0, 4)  # a new training of the trained model


def test_a_momentum_sgd_refusal_names_momentum_not_adam():
    host = Host(untie_at=0.5)
    with pytest.raises(ConfigError, match=r"so O would start without E's momentum: ") as err:
        loop.on_train_step(host, 5, 10, torch.optim.SGD(host.parameters(), lr=0.1, momentum=0.9))
    assert "Adam" not in str(err.value)
