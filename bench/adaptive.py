"""Training-step time of adaptive input + adaptive softmax vs the flat tied softmax, same GPT body,
WikiText-2 (V = 33,278), side by side.

Each body is a preset's GPT: ``wikitext2-gpt-flat`` (the CPU-budget comparison preset, d = 128) and
``wikitext2-gpt-small`` (d = 256, 6 layers, 32 x 128 tokens). The batches are real WikiText-2 training
windows (the adaptive softmax's cost depends on how many targets fall in each tail cluster, so random
ids would not do). One step = forward, loss, backward, gradient clipping and fused AdamW, as
``embtie train`` does; the two strategies run alternately, round after round.

    python -m bench.adaptive [--repeats 5] [--device cpu|cuda] [--large]   (needs EMBTIE_DATA)
"""

from __future__ import annotations

import torch

from bench.common import Section, fmt, interleaved, md_table, pick_device, section_parser
from embtie.config import load_config
from embtie.tasks.lm import LMTask
from embtie.training.optim import build_optimizer

BODIES = ("wikitext2-gpt-flat", "wikitext2-gpt-small")
ADAPTIVE = {"cutoffs": [2000, 10000], "div_factor": 4}
TARGET = 0.6


class Trainer:
    """One model + optimizer on real training windows; ``step()`` is one training step."""

    def __init__(self, preset: str, strategy: str, options: dict, device: torch.device, n_batches: int = 4):
        cfg = load_config(preset, [f"sharing.name={strategy}", "model.dropout=0.0"])
        cfg = cfg.replace({"sharing.options": dict(options)})
        torch.manual_seed(0)
        self.task = LMTask(cfg)
        self.model = self.task.build_model().to(device)
        self.opt = build_optimizer(self.model, cfg.train)
        self.clip = cfg.train.grad_clip
        self.batches = [self.task.train_batch(0, i, 0, 1, device) for i in range(n_batches)]
        self.i = 0

    def step(self) -> None:
        b = self.batches[self.i % len(self.batches)]
        self.i += 1
        h = self.model(b.inputs)
        loss = self.model.sharing.loss(h, b.targets) + self.model.sharing.regularization()
        loss.backward()
        if self.clip:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.clip)
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)


def run(large: bool = False, device_name: str = "auto", repeats: int = 5) -> Section:
    """The side-by-side table (``large`` is accepted for the common command line; both bodies always run)."""
    device = pick_device(device_name)
    rows, figures = [], {}
    for preset in BODIES:
        print(f"[adaptive] body {preset}", flush=True)
        pair = {
            "flat (tied)": Trainer(preset, "tied", {}, device),
            "adaptive": Trainer(preset, "adaptive", ADAPTIVE, device),
        }
        tim = interleaved({k: t.step for k, t in pair.items()}, repeats=repeats, warmup=1, device=device)
        med = tim.ratio_median("adaptive", "flat (tied)")
        best = tim.ratio("adaptive", "flat (tied)")
        cfg = pair["adaptive"].task.cfg
        tokens = cfg.data.batch_size * cfg.data.bptt
        rows.append(
            [
                f"{preset} (d={cfg.model.dim}, {cfg.model.n_layers} layers, {tokens} tokens/step)",
                fmt(1e3 * tim.median("flat (tied)"), 0),
                fmt(1e3 * tim.median("adaptive"), 0),
                fmt(med),
                fmt(best),
                "yes" if med <= TARGET else "no",
            ]
        )
        figures[f"median_ratio[{preset}]"] = med
        del pair
    headers = [
        "body",
        "flat ms/step (median)",
        "adaptive ms/step (median)",
        "ratio (median)",
        "ratio (best)",
        "<= 0.6x",
    ]
    body = (
        f"V = 33,278, adaptive cutoffs {ADAPTIVE['cutoffs']}, div_factor {ADAPTIVE['div_factor']} (widths d, d/4, "
        f"d/16; tied tables), fp32, {repeats} alternated rounds after a warm-up step, real WikiText-2 windows. "
        "Ratio (median) = median over rounds of adaptive / flat in the same round; ratio (best) = fastest "
        "adaptive step / fastest flat step.\n\n" + md_table(headers, rows)
    )
    return Section("Adaptive input + softmax vs flat softmax (WikiText-2 step time)", body, figures)


def main() -> None:
    p = section_parser(__doc__, "(no effect: both bodies always run)", 5)
    args = p.parse_args()
    print(run(args.large, args.device, args.repeats).body)


if __name__ == "__main__":
    main()
