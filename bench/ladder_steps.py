"""CPU step time of the ladder's GPT sizes against their FLOPs per token: the per-step overhead of
``planning.hardware.CPU_CORE`` (issue 42).

Single-threaded training steps (forward, the strategy's loss, backward, AdamW) of 16 x 64 tokens for
ptb-gpt-tiny and the sizes xs, s, m, l, xl, interleaved round after round in one process (so that a busy
machine slows every size alike), the fastest round of each kept; then the line t = a + b x FLOPs/token
through them. a / t(ptb-gpt-tiny) is the share of a step that its arithmetic does not explain.

    python -m bench.ladder_steps [--rounds 2] [--steps 12]   (needs EMBTIE_DATA)
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from embtie.config import load_config
from embtie.ladder import sizes
from embtie.ladder.budget import TaskCache
from embtie.planning import estimate, model_shape
from embtie.tasks.model_building import build_model

SHAPES = {"ptb-gpt-tiny": [], **{n: sizes.SIZES[n].overrides() for n in ("xs", "s", "m", "l", "xl")}}


def step_time(overrides: list[str], steps: int, cache: TaskCache) -> tuple[float, float]:
    """(seconds per step, FLOPs per token) of one shape."""
    cfg = load_config("ptb-gpt-tiny", overrides)
    task = cache.get(cfg)
    model = build_model(cfg, task.output_vocab_size(), task.model_arguments)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    ids = torch.randint(0, task.output_vocab_size(), (16, 65))

    def one() -> None:
        loss = model.sharing.loss(model(ids[:, :-1]), ids[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()

    for _ in range(3):
        one()
    t0 = time.perf_counter()
    for _ in range(steps):
        one()
    return (time.perf_counter() - t0) / steps, estimate.flops_per_token(model_shape.measure(cfg, task), 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    torch.set_num_threads(1)
    cache = TaskCache()
    best: dict[str, tuple[float, float]] = {}
    for _ in range(args.rounds):
        for name, overrides in SHAPES.items():
            t, flops = step_time(overrides, args.steps, cache)
            best[name] = (min(t, best.get(name, (t, 0))[0]), flops)
    x = np.array([f for _, f in best.values()])
    y = np.array([t for t, _ in best.values()])
    b, a = np.polyfit(x, y, 1)
    for name, (t, f) in best.items():
        print(f"{name:14s} {f / 1e6:6.1f} MFLOP/token  {1e3 * t:7.1f} ms/step  line {1e3 * (a + b * f):7.1f} ms")
    print(f"overhead a = {1e3 * a:.1f} ms = {a / best['ptb-gpt-tiny'][0]:.1%} of ptb-gpt-tiny's step")


if __name__ == "__main__":
    main()
