"""Convolutional translators against the transformer at the same width: training-step time and beam-5
decoding speed of the Multi30k presets (multi30k-{transformer,lightconv,dynamicconv,convs2s}-small).

Training: the same real Multi30k batches (the presets' shared data section, so the same subwords and
batches), one optimizer step per batch, the candidates alternating in one process. Decoding: the first
``sentences`` validation sentences, beam 5, from freshly initialised models with an output bias of -1e4
on EOS, so that every model decodes to the length limit (the same number of steps for each). Ratios are
to the transformer; Liu et al.'s target for dynamicconv is a step within 1.3x of the transformer's.

    python -m bench.conv_mt [--repeats 3] [--batches 3] [--sentences 64]
"""

from __future__ import annotations

import argparse

import torch

from bench.common import Section, fmt, interleaved, md_table
from embtie import tasks
from embtie.config import load_config
from embtie.data.subwords import EOS
from embtie.runtime import autocast

PRESETS = ("transformer", "lightconv", "dynamicconv", "convs2s")
HEADER = ["preset", "params", "train tokens/s", "step time / transformer", "beam-5 sent/s", "decode time / transformer"]


def _setup(name: str) -> tuple[object, torch.nn.Module]:
    cfg = load_config(f"multi30k-{name}-small", ["train.threads=1", "sharing.options.bias=true"])
    task = tasks.get("translation")(cfg)
    torch.manual_seed(0)
    model = task.build_model()
    with torch.no_grad():
        model.sharing.bias[EOS] = -1e4  # every model decodes to its length limit: the same number of steps
    return task, model


def run(repeats: int, batches: int, sentences: int) -> Section:
    torch.set_num_threads(1)
    built = {n: _setup(n) for n in PRESETS}
    cpu = torch.device("cpu")
    task0 = built["transformer"][0]
    data = [task0.train_batch(0, i, 0, 1, cpu) for i in range(batches)]
    tokens = sum(b.num_target_tokens for b in data)
    src = task0.texts("valid").src[:sentences]

    def train_step(task, model):
        opt = torch.optim.Adam(model.parameters(), lr=1e-4, betas=(0.9, 0.98))

        def step() -> None:
            model.train()
            for b in data:
                with autocast("cpu", "fp32"):
                    out, _ = task.loss(model, b, None)
                out.objective.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)

        return step

    def decode(task, model):
        return lambda: task.translate(model, src, beam=5)

    train_t = interleaved({n: train_step(*built[n]) for n in PRESETS}, repeats=repeats)
    decode_t = interleaved({n: decode(*built[n]) for n in PRESETS}, repeats=repeats)
    params = {n: sum(p.numel() for p in built[n][1].parameters()) for n in PRESETS}
    rows = [
        [n, f"{params[n] / 1e6:.1f}M", fmt(tokens / train_t.best(n), 0), fmt(train_t.ratio(n, "transformer"), 2),
         fmt(sentences / decode_t.best(n), 1), fmt(decode_t.ratio(n, "transformer"), 2)]
        for n in PRESETS
    ]  # fmt: skip
    body = (
        f"{batches} real batches ({tokens} target tokens) per training call; beam 5 over {sentences} validation "
        f"sentences per decoding call; {repeats} alternating rounds after a warm-up, one thread, fastest call.\n\n"
        + md_table(HEADER, rows)
    )
    figures = {f"step_ratio[{n}]": train_t.ratio(n, "transformer") for n in PRESETS}
    figures.update({f"decode_ratio[{n}]": decode_t.ratio(n, "transformer") for n in PRESETS})
    return Section("Convolutional translators vs the transformer (Multi30k presets)", body, figures)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--batches", type=int, default=3)
    p.add_argument("--sentences", type=int, default=64)
    args = p.parse_args()
    print(run(args.repeats, args.batches, args.sentences).body)


if __name__ == "__main__":
    main()
