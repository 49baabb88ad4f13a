"""The Hugging Face Trainer route (embtie.hf.trainer_comparison, what `embtie hf-compare` ran before it went
through `embtie compare`) on the same model, corpus and budget, seed 0: E copied from GPT-2's own init
(init=model, std 0.02: how hf-compare measured l2norm -45%) and E from the strategy's init (init=strategy,
std d**-0.5: what embtie's models do). Blocks of 63 predicted tokens (64 inputs: GPT-2's 64 positions).
Reads FOLDER/gpt2-64x2.json and writes FOLDER/trainer-init-{model,strategy}/results.json (bench/hf_agreement.sh
runs it)::

    python -m bench.hf_agreement_trainer [--folder results/hf-agreement] [model] [strategy]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from embtie.hf.trainer_comparison import HFCompareConfig, run_hf_compare

FOLDER = Path(__file__).resolve().parents[1] / "results" / "hf-agreement"
"""the results folder of docs/hf-agreement.md."""


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("inits", nargs="*", help="model and/or strategy (default: both)")
    p.add_argument("--folder", type=Path, default=FOLDER, help="holds gpt2-64x2.json; the runs are written there")
    a = p.parse_args(argv)
    if unknown := set(a.inits) - {"model", "strategy"}:
        p.error(f"unknown init {sorted(unknown)}: give model and/or strategy")
    for init in a.inits or ["model", "strategy"]:
        config = HFCompareConfig(model_config=str(a.folder / "gpt2-64x2.json"), strategies=["tied", "l2norm"],
                                 out=str(a.folder / f"trainer-init-{init}"), steps=300, block=63, batch_size=16,
                                 lr=3e-3, warmup_steps=30, valid_tokens=20000, device="cpu", init=init)  # fmt: skip
        run_hf_compare(config)


if __name__ == "__main__":
    main()
