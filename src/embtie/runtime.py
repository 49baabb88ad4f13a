"""Device, precision and process-group plumbing shared by training and evaluation.

Multi-process runs are started by ``torchrun`` (which sets RANK, WORLD_SIZE, LOCAL_RANK,
MASTER_ADDR, MASTER_PORT); ``setup`` then joins the process group: gloo on CPU, nccl on GPU.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field

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


def teardown(rt: Runtime, finished: bool = True) -> None:
    """Leave the process group ``setup`` joined. After a finished run every process meets at a barrier
    first, so none destroys the group while a peer is still in a collective (pytorch/pytorch#75097).
    After a failure nothing collective is attempted (the peers may be inside a collective that will never
    complete; destroying the group then can deadlock): the process exits and torchrun stops the others."""
    if not (rt.owns_group and dist.is_initialized()):
        return
    if finished:
        dist.barrier()
        dist.destroy_process_group()


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
