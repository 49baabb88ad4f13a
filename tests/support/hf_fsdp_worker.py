"""The multi-process side of tests/hf/test_hf_fsdp.py, run under ``torchrun --nproc_per_node=2`` (gloo):

    hf_fsdp_worker.py OUT

1. asks accelerate for FSDP2 on these 2 CPU processes and records the distributed type it picks
   (OUT/accelerate.txt);
2. trains an ``embtie.hf.apply``-ed tiny GPT-2 (tied) with torch's FSDP2 directly: each GPT2Block
   ``fully_shard``-ed, then the root (which holds the sharing object, so the tie is one sharded tensor and
   the loss is computed inside the root's forward), 3 SGD steps on half of a global batch each (SGD:
   Adam would turn the float noise of gradients that are zero in exact arithmetic, e.g. the key bias,
   into full-size updates);
3. gathers the whole state dict to rank 0 (full_state_dict, cpu_offload), ``save_pretrained``s it to
   OUT/model, and saves the logits that the sharded model gives for fixed ids (OUT/logits.pt).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.fsdp import fully_shard

import embtie.hf as eh
from embtie.hf.tiny import tiny_model
from embtie.runtime import exit_process

V = 80
NO_DROPOUT = {"resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}
"""dropout draws differ between processes: off, so that 2 processes can match 1."""


def accelerate_type() -> str:
    """The distributed type accelerate picks for an FSDP2 plugin on these CPU processes."""
    from accelerate import Accelerator
    from accelerate.utils import FullyShardedDataParallelPlugin

    plugin = FullyShardedDataParallelPlugin(fsdp_version=2, state_dict_type="FULL_STATE_DICT")
    return str(Accelerator(cpu=True, fsdp_plugin=plugin).distributed_type)


def main() -> None:
    out = Path(sys.argv[1])
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    picked = accelerate_type()
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V, **NO_DROPOUT), "tied").train()
    for block in model.transformer.h:
        fully_shard(block)
    fully_shard(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.randint(3, V, (4, 12), generator=torch.Generator().manual_seed(1))
    mine = ids[2 * rank : 2 * rank + 2]
    for _ in range(3):
        model(input_ids=mine, labels=mine).loss.backward()
        opt.step()
        opt.zero_grad()
    model.eval()
    with torch.no_grad():
        logits = model(input_ids=ids).logits
    sd = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if rank == 0:
        (out / "accelerate.txt").write_text(picked)
        model.save_pretrained(out / "model", state_dict=sd)
        torch.save({"ids": ids, "logits": logits}, out / "logits.pt")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
    exit_process(0)  # skip the interpreter shutdown that can abort in gloo's threads (see there)
