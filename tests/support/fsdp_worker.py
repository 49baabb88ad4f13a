"""The multi-process side of tests/training/test_fsdp.py, run under ``torchrun --nproc_per_node=2``: one process
group for several FSDP runs (process start-up is most of a tiny run's time).

    fsdp_worker.py OUT STRATEGY [STRATEGY ...]

trains ``OVERRIDES`` + ``train.parallel=fsdp`` with each strategy into OUT/STRATEGY; then, for the first
strategy: trains it with ``train.accumulate=2`` (OUT/STRATEGY-acc2); copies its run without the last
checkpoint and resumes that from the one before (OUT/STRATEGY-resumed); and probes the resumed model:
how the sharing unit's parameters are sharded and the whole gradient of one step (OUT/probe.pt, rank 0).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.tensor import DTensor

from embtie import files
from embtie.config import load_config
from embtie.rundir import checkpoints
from embtie.runtime import exit_process, setup
from embtie.training import train
from embtie.training.objective import split
from embtie.training.trainer import Trainer

OVERRIDES = [
    "model.dim=32",
    "model.n_layers=2",
    "model.n_heads=2",
    "model.max_len=16",
    "model.dropout=0.0",
    "data.bptt=16",
    "data.batch_size=8",
    "data.eval_batch_size=4",
    "data.train_tokens=20000",
    "data.valid_tokens=2000",
    "train.max_steps=12",
    "train.warmup_steps=3",
    "train.log_every=1",
    "train.eval_every=6",
    "train.checkpoint_every=6",
    "train.keep_checkpoints=2",
    "train.progress=false",
    "train.threads=1",
]
"""a 2-block, 32-wide GPT for 12 steps: checkpoints at steps 6 and 12 (both kept), validations at 6 and 12."""


def config(strategy: str, parallel: str = "fsdp", accumulate: int = 1):
    over = [f"sharing.name={strategy}", f"train.parallel={parallel}", f"train.accumulate={accumulate}"]
    return load_config("ptb-gpt-tiny", [*OVERRIDES, *over])


def rewind(run: Path, rank: int) -> Path:
    """A copy of finished run ``run`` whose newest checkpoint is step 6 (as if killed before step 12)."""
    resumed = run.with_name(run.name + "-resumed")
    if rank == 0:
        shutil.copytree(run, resumed)
        shutil.rmtree(resumed / checkpoints.CKPT / "step-00000012")
        (resumed / "summary.json").unlink()
        files.write_atomic(resumed / checkpoints.CKPT / checkpoints.LATEST, "step-00000006")
    dist.barrier()
    return resumed


def probe(run: Path, strategy: str, out: Path) -> None:
    """Restore the newest checkpoint of ``run`` into a sharded model and record its sharing unit and the
    whole gradient of one training step (rank 0 writes ``out``)."""
    rt = setup("cpu")
    trainer = Trainer(config(strategy), run, rt)
    trainer.setup()
    model = trainer.model
    shards = {}
    for name, p in model.sharing.named_parameters():
        assert isinstance(p, DTensor), name
        shards[name] = (tuple(p.shape), tuple(p.to_local().shape), str(p.placements))
    batch = trainer.task.train_batch(0, 0, rt.rank, rt.world_size, rt.device)
    obj, _ = split(trainer.objective(batch, None)[0])
    obj.backward()
    grads = {n: p.grad.full_tensor() for n, p in model.named_parameters()}
    weights = {n: p.full_tensor().detach() for n, p in model.named_parameters()}
    if rt.is_main:
        torch.save({"shards": shards, "grads": grads, "weights": weights}, out)
    dist.barrier()


def main() -> None:
    out, strategies = Path(sys.argv[1]), sys.argv[2:]
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    try:
        for s in strategies:
            train(config(s), out / s)
        train(config(strategies[0], accumulate=2), out / f"{strategies[0]}-acc2")
        resumed = rewind(out / strategies[0], rank)
        train(config(strategies[0]), resumed)
        probe(resumed, strategies[0], out / "probe.pt")
    finally:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
    exit_process(0)  # skip the interpreter shutdown that can abort in gloo's threads (see there)
