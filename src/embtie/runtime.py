"""Device, precision and process-group plumbing shared by training and evaluation.

Multi-process runs are started by ``torchrun`` (which sets RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT); ``setup`` then joins the process group: gloo on CPU, nccl on GPU.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from dataclasses import dataclass, field
from datetime import timedelta

import torch
import torch.distributed as dist

from embtie.errors import ConfigError
from embtie.shutdown import exit_process as exit_process  # re-exported: workers end through runtime


@dataclass
class Runtime:
    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    device: torch.device = field(default_factory=lambda: torch.device("cpu"))
    owns_group: bool = False
    """True when ``setup`` created the process group (and ``teardown`` should destroy it)."""

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1


def pick_device(name: str, local_rank: int = 0) -> torch.device:
    """``auto`` -> cuda:local_rank when available else cpu; otherwise the named device."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise ConfigError(f"train.device={name} but CUDA is not available; use train.device=cpu")
        if name == "cuda":
            name = f"cuda:{local_rank}"
    return torch.device(name)


def setup(device: str = "auto") -> Runtime:
    """Join the torchrun process group when WORLD_SIZE > 1; pick this process's device."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    dev = pick_device(device, local)
    owns = False
    if world > 1 and not dist.is_initialized():
        if dev.type == "cuda":
            torch.cuda.set_device(dev)
        dist.init_process_group(backend="nccl" if dev.type == "cuda" else "gloo")
        owns = True
    return Runtime(rank=rank, world_size=world, local_rank=local, device=dev, owns_group=owns)


TEARDOWN_TIMEOUT_S = 120.0
"""How long a finished process waits at the exit barrier, and then for the process group to be destroyed."""


def teardown(rt: Runtime, finished: bool = True, timeout_s: float = TEARDOWN_TIMEOUT_S) -> None:
    """Leave the process group ``setup`` joined, never waiting longer than ``timeout_s`` for each step.

    After a finished run every process meets at a barrier kept in the rendezvous store (torchrun's agent
    holds it, so a peer that already exited does not break it), so none destroys the group while a peer is
    still in a collective (pytorch/pytorch#75097). The group is then destroyed on a helper thread that is
    given ``timeout_s``, so that no native wait can hold a finished process (the hang once seen on CI was in
    the destructors that ``keep_until_exit`` now avoids). A wait that runs out leaves a one-line note on
    stderr and the process goes on to exit; every file of the run is already closed.
    After a failure nothing collective is attempted (the peers may be inside a collective that will never
    complete; destroying the group then can deadlock): the process exits and torchrun stops the others."""
    if not (finished and rt.owns_group and dist.is_initialized()):
        return
    if not _store_barrier(rt, "embtie/teardown", timeout_s):
        _note(f"not every process reached the end of the run within {timeout_s:.0f} s; leaving without them")
    worker = threading.Thread(target=dist.destroy_process_group, name="embtie-teardown", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        _note(f"the process group was not destroyed within {timeout_s:.0f} s (gloo teardown); exiting without it")


def _store_barrier(rt: Runtime, key: str, timeout_s: float) -> bool:
    """Every process of the group adds itself under ``key`` in the rendezvous store; True once all
    ``rt.world_size`` have, False when ``timeout_s`` passes first or the store is gone."""
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    key = f"{key}/{attempt}"
    try:
        store = dist.distributed_c10d._get_default_store()
        if store.add(key, 1) == rt.world_size:
            store.set(f"{key}/all", "1")
        store.wait([f"{key}/all"], timedelta(seconds=timeout_s))
        return True
    except RuntimeError:  # DistStoreError on a timeout, DistNetworkError when the store is gone
        return False


def _note(message: str) -> None:
    print(f"embtie: note: {message}", file=sys.stderr, flush=True)


_KEPT: list[object] = []


def keep_until_exit(obj: object) -> None:
    """Keep ``obj`` (a finished multi-process run's trainer: its DDP/FSDP model, optimizer, data) alive until
    the process exits. Freeing it runs native destructors (DDP's reducer, gloo's process group and its
    threads) that once never returned on CI: rank 1 of a finished 2-process run hung with no Python frame
    below the ``train(...)`` call, i.e. while that call's locals were freed (torch 2.13 CPU). A torchrun
    worker ends through ``exit_process`` (``os._exit``), which runs none of them; a script of the user's own
    keeps these objects until it exits."""
    _KEPT.append(obj)


def barrier(rt: Runtime) -> None:
    if rt.distributed:
        dist.barrier()


def autocast(device: torch.device | str, precision: str):
    """bf16 autocast on ``device`` (cpu or cuda) when precision == "bf16", else a no-op context."""
    if precision != "bf16":
        return contextlib.nullcontext()
    dev_type = torch.device(device).type
    return torch.autocast(device_type=dev_type, dtype=torch.bfloat16)


def all_reduce_sum(values: list[float], rt: Runtime) -> list[float]:
    """Sum a few floats over all processes (identity in a single process)."""
    if not rt.distributed:
        return values
    dev = rt.device if rt.device.type == "cuda" else torch.device("cpu")
    t = torch.tensor(values, dtype=torch.float64, device=dev)
    dist.all_reduce(t)
    return t.tolist()
