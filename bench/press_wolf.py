"""Press & Wolf (2016) Table 6 on PTB: Zaremba's small LSTM (2 x 200, no dropout) untied, tied, and
tied with projection regularisation (tied-proj), trained one model at a time.

    python bench/press_wolf.py [--epochs 13] [--models untied,tied,tied-proj] [--out runs/press_wolf]

Each model is an ordinary run directory (``embtie train ptb-lstm-small sharing.name=...``), so
running the script again resumes an interrupted model and skips finished ones. The paper reports
TEST perplexity (114.5 / 112.4 / 100.9); the test split is not shipped here, so this prints VALID
perplexity after each epoch and the final one next to the paper's test figure (Zaremba's small
model has valid ppl about 3-4 points above its test ppl, so the gap is only indicative).
About an hour per model on 2 idle cores for the full 13 epochs.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from embtie.config import load_config
from embtie.training import train
from embtie.training.metrics_log import read_metrics

PAPER_TEST_PPL = {"untied": 114.5, "tied": 112.4, "tied-proj": 100.9}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=float, default=13.0, help="epochs per model (the paper: 13)")
    ap.add_argument("--models", default="untied,tied,tied-proj")
    ap.add_argument("--out", default="runs/press_wolf", help="where the runs go (default runs/press_wolf)")
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.models.split(","):
        overrides = [f"sharing.name={name}", f"train.epochs={args.epochs}", "train.progress=false"]
        if args.threads:
            overrides.append(f"train.threads={args.threads}")
        cfg = load_config("ptb-lstm-small", overrides)
        t0 = time.time()
        print(f"== {name}: {args.epochs} epochs -> {out / name}", flush=True)
        summary = train(cfg, out / name)
        per_epoch = [
            (round(r["step"] / (summary["steps"] / summary["epochs"]), 2), round(r["ppl"], 2))
            for r in read_metrics(out / name)
            if r["split"] == "valid"
        ]
        results[name] = {
            "epochs": summary["epochs"],
            "valid_ppl": summary["valid_ppl"],
            "best_valid_ppl": summary["best_valid_ppl"],
            "valid_ppl_per_epoch": per_epoch,
            "paper_test_ppl": PAPER_TEST_PPL.get(name),
            "tokens_per_s": summary["tokens_per_s"],
            "wall_s_this_call": round(time.time() - t0, 1),
        }
        print(f"   {name}: valid ppl per epoch {per_epoch}", flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    print("\nmodel      epochs  valid ppl  paper test ppl  gap")
    for name, r in results.items():
        paper = r["paper_test_ppl"]
        gap = f"{r['valid_ppl'] - paper:+.1f}" if paper else "-"
        print(f"{name:<10} {r['epochs']:>6.2f}  {r['valid_ppl']:>9.2f}  {paper or '-':>14}  {gap}")


if __name__ == "__main__":
    main()
