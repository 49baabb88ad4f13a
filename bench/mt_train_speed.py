"""Training-step speed of the multi30k-transformer-small preset: fp32 vs bf16 autocast, 1 vs 2 threads.

Real Multi30k batches of the preset (2048 padded tokens), one optimizer step per call; the
candidates alternate in one process (``bench.common.interleaved``), each on its own copy of the
model so that they do the same work. Reports target tokens per second and the ratios to fp32 with
one thread. On a CPU without bf16 matrix units autocast costs time; on a CPU shared by several
jobs a second thread can cost more than it gives (threads wait for each other).

    python -m bench.mt_train_speed [--repeats 4] [--batches 3]
"""

from __future__ import annotations

import argparse
import copy

import torch

from bench.common import Section, fmt, interleaved, md_table
from embtie import tasks
from embtie.config import load_config
from embtie.runtime import autocast


def run(repeats: int, batches: int) -> Section:
    cfg = load_config("multi30k-transformer-small")
    task = tasks.get("translation")(cfg)
    torch.manual_seed(0)
    base = task.build_model()
    data = [task.train_batch(0, i, 0, 1, torch.device("cpu")) for i in range(batches)]
    tokens = sum(b.num_target_tokens for b in data)

    def make(precision: str, threads: int):
        model = copy.deepcopy(base)
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))

        def step() -> None:
            torch.set_num_threads(threads)
            for b in data:
                with autocast("cpu", precision):
                    out, _ = task.loss(model, b, None)
                out.objective.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

        return step

    cands = {"fp32, 1 thread": make("fp32", 1), "bf16, 1 thread": make("bf16", 1), "fp32, 2 threads": make("fp32", 2)}
    t = interleaved(cands, repeats=repeats)
    base_name = "fp32, 1 thread"
    rows = [
        [n, fmt(tokens / t.median(n), 0), fmt(t.ratio(n, base_name), 2), fmt(t.ratio(n, base_name, cpu=True), 2)]
        for n in cands
    ]
    body = (
        f"{batches} real batches ({tokens} target tokens) per call, {repeats} alternating rounds after a warm-up.\n\n"
        + md_table(["candidate", "target tokens/s", "time / fp32-1-thread (wall)", "(CPU time)"], rows)
    )
    figures = {f"tokens_per_s[{n}]": tokens / t.median(n) for n in cands}
    return Section("Translation training step: precision and threads", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=4)
    p.add_argument("--batches", type=int, default=3)
    args = p.parse_args()
    print(run(args.repeats, args.batches).body)


if __name__ == "__main__":
    main()
