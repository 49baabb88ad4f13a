"""The Hugging Face Trainer route (embtie.hf.trainer_comparison, what `embtie hf-compare` ran before it went
through `embtie compare`) on the same model, corpus and budget, seed 0: E copied from GPT-2's own init
(init=model, std 0.02: how hf-compare measured l2norm -45%) and E from the strategy's init (init=strategy,
std d**-0.5: what embtie's models do). Blocks of 63 predicted tokens (64 inputs: GPT-2's 64 positions).
Writes trainer-init-{model,strategy}/results.json here."""

import sys
from pathlib import Path

from embtie.hf.trainer_comparison import HFCompareConfig, run_hf_compare

HERE = Path(__file__).resolve().parent

for init in sys.argv[1:] or ["model", "strategy"]:
    run_hf_compare(
        HFCompareConfig(model_config=str(HERE / "gpt2-64x2.json"), strategies=["tied", "l2norm"],
                        out=str(HERE / f"trainer-init-{init}"), steps=300, block=63, batch_size=16, lr=3e-3,
                        warmup_steps=30, valid_tokens=20000, device="cpu", init=init)  # fmt: skip
    )
