"""``embtie hf-compare``: a shortcut onto ``embtie compare`` for a Hugging Face causal LM (``model.name=hf``).

Its arguments become the ``embtie.experiment.ComparisonRequest`` of the preset ``ptb-hf-gpt2-tiny`` with
``model.hf=MODEL_CONFIG`` and the data, batch and step overrides they name, run by ``run_comparison``, so the
runs get everything ``embtie compare`` gives (paired seeds, verdicts, the report, resume): one comparison path.
Training under transformers' own Trainer instead is the example of docs/your-loop.md.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import TYPE_CHECKING

from embtie.commands.common import number_arg, path_arg

if TYPE_CHECKING:
    from embtie.experiment import ComparisonRequest

HELP = "compare sharing strategies on a Hugging Face causal LM (a shortcut onto `embtie compare`)"
DESCRIPTION = (
    "Run `embtie compare ptb-hf-gpt2-tiny model.hf=MODEL_CONFIG ...` (MODEL_CONFIG: a packaged name, gpt2-tiny "
    "or llama-tiny, a transformers config JSON, or a save_pretrained folder with its tokenizer) on word-level "
    "PTB (or your own corpus: --train-file/--valid-file or --source hf:PATH, cut by --tokenizer): paired seeds, "
    "verdicts against tied and the report in OUT. The equivalent compare command is printed first. "
    "Needs: pip install 'embtie[hf]'."
)
EXAMPLES = (
    "embtie hf-compare gpt2-tiny --strategies tied,l2norm --steps 300 --save-models --out runs/hf",
    "embtie hf-compare llama-tiny --strategies tied,fixed --option fixed.logit_scale=learned --out runs/hf-llama",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "model_config",
        type=path_arg("MODEL_CONFIG"),
        metavar="MODEL_CONFIG",
        help="a packaged config name (gpt2-tiny, llama-tiny), a transformers config JSON with model_type, or a "
        "save_pretrained folder with its tokenizer (model.hf)",
    )
    parser.add_argument("--strategies", default="tied,l2norm,fixed", help="comma-separated (default tied,l2norm,fixed)")
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="STRATEGY.KEY=VALUE",
        help="a strategy option, e.g. fixed.logit_scale=learned (repeatable)",
    )
    parser.add_argument(
        "--steps",
        type=number_arg(int, "--steps", ge=1, most=100_000_000),
        default=300,
        help="optimizer steps per strategy (default 300)",
    )
    parser.add_argument(
        "--out", type=path_arg("--out"), default=None, help="output folder (default runs/hf-compare-<config name>)"
    )
    parser.add_argument(
        "--dataset", choices=["ptb", "wikitext-2"], default="ptb", help="ptb or wikitext-2 (default ptb)"
    )
    _add_corpus_arguments(parser)
    parser.add_argument(
        "--block",
        type=number_arg(int, "--block", ge=1, most=1_000_000),
        default=64,
        help="tokens per example (default 64)",
    )
    parser.add_argument(
        "--batch-size",
        type=number_arg(int, "--batch-size", ge=1, most=100_000),
        default=16,
        help="examples per step (default 16)",
    )
    parser.add_argument(
        "--lr",
        type=number_arg(float, "--lr", gt=0, most=10),
        default=3e-3,
        help="peak learning rate, AdamW + cosine (default 3e-3)",
    )
    parser.add_argument(
        "--warmup-steps",
        type=number_arg(int, "--warmup-steps", ge=0, most=100_000_000),
        default=30,
        help="linear warmup steps (default 30)",
    )
    parser.add_argument(
        "--seeds", type=number_arg(int, "--seeds", ge=1, most=1000), default=3, help="seeds per strategy (default 3)"
    )
    parser.add_argument("--seed", type=number_arg(int, "--seed", ge=0), default=0, help="the first seed (default 0)")
    parser.add_argument("--device", choices=["auto", "cpu"], default="auto", help="train.device (default auto)")
    parser.add_argument(
        "--train-tokens",
        type=number_arg(int, "--train-tokens", ge=2),
        default=None,
        help="use only the first N training tokens",
    )
    parser.add_argument(
        "--valid-tokens",
        type=number_arg(int, "--valid-tokens", ge=2),
        default=None,
        help="use only the first N validation tokens",
    )
    parser.add_argument(
        "--save-models",
        action="store_true",
        help="save each strategy's model of the first seed into OUT/STRATEGY/model (embtie.hf.load, embtie export)",
    )


def _add_corpus_arguments(parser: argparse.ArgumentParser) -> None:
    """Your own corpus instead of --dataset, and the tokenizer that cuts it."""
    parser.add_argument(
        "--train-file",
        type=path_arg("--train-file"),
        metavar="PATH",
        help="your own training text (one sentence a line)",
    )
    parser.add_argument(
        "--valid-file",
        type=path_arg("--valid-file"),
        metavar="PATH",
        help="your own validation text (with --train-file)",
    )
    parser.add_argument("--source", metavar="hf:PATH_OR_NAME", help="your own corpus as a datasets dataset")
    parser.add_argument("--text-column", default="text", help="the text column of --source (default text)")
    parser.add_argument(
        "--tokenizer", default="word", metavar="SPEC",
        help="word (default), sentencepiece:MODEL_FILE or hf:NAME_OR_PATH (a local Hugging Face tokenizer)",
    )  # fmt: skip


def parse_options(items: list[str]) -> dict[str, dict]:
    """["fixed.logit_scale=learned", ...] -> {"fixed": {"logit_scale": "learned"}} (values read by
    ``embtie.schema.parse_scalar``, as ``key=value`` overrides are: ``fixed.z_loss=1e-4`` is a number)."""
    from embtie.errors import ConfigError
    from embtie.schema import parse_scalar

    out: dict[str, dict] = {}
    for item in items:
        key, sep, value = item.partition("=")
        strategy, dot, option = key.partition(".")
        if not sep or not dot or not strategy or not option:
            raise ConfigError(f"--option {item!r} must look like STRATEGY.KEY=VALUE, e.g. fixed.logit_scale=learned")
        if option in out.get(strategy, {}):
            raise ConfigError(f"--option {strategy}.{option} is given twice; keep one value")
        out.setdefault(strategy, {})[option] = parse_scalar(value)
    return out


def check_choices(strategies: list[str], options: dict[str, dict], args: argparse.Namespace) -> None:
    """Nothing given that would have no effect: an empty --strategies, an --option of a strategy that is not
    compared, --text-column without --source (a ConfigError naming it and why)."""
    from embtie.errors import ConfigError

    if not strategies:
        raise ConfigError(f"--strategies {args.strategies!r} lists no strategy; give e.g. --strategies tied,untied")
    for name in options:
        if name not in strategies:
            raise ConfigError(
                f"--option {name}.{next(iter(options[name]))}=... is for strategy {name!r}, which --strategies "
                f"({','.join(strategies)}) does not compare; add {name} to --strategies or leave the option out"
            )
    if args.text_column != "text" and args.source is None:
        raise ConfigError("--text-column names a column of --source hf:...; give --source or leave it out")


def request_of(args: argparse.Namespace) -> ComparisonRequest:
    """The ``embtie compare`` comparison that ``args`` stand for, as an ``embtie.experiment.ComparisonRequest``."""
    from embtie.experiment import ComparisonRequest

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    options = parse_options(args.option)
    check_choices(strategies, options, args)
    data = [f"data.{key}={value}" for key, value in (("train_file", args.train_file), ("valid_file", args.valid_file),
            ("source", args.source)) if value is not None]  # fmt: skip
    if args.source is not None:
        data.append(f"data.text_column={args.text_column}")
    data += [f"data.dataset={args.dataset}"] if not data else []
    data += [f"data.tokenizer={args.tokenizer}", f"data.bptt={args.block}", f"data.batch_size={args.batch_size}"]
    data += [f"data.{k}={v}" for k, v in (("train_tokens", args.train_tokens), ("valid_tokens", args.valid_tokens))
             if v is not None]  # fmt: skip
    train = [f"train.max_steps={args.steps}", f"train.lr={args.lr:g}", f"train.warmup_steps={args.warmup_steps}",
             f"train.device={args.device}"]  # fmt: skip
    return ComparisonRequest(
        preset="ptb-hf-gpt2-tiny",
        overrides=[f"model.hf={args.model_config}", *data, *train],
        strategies=[_strategy_entry(name, options.get(name, {})) for name in strategies],
        seeds=args.seeds,
        first_seed=args.seed,
        out=args.out or f"runs/hf-compare-{Path(args.model_config).stem}",
    )


def same_as(request: ComparisonRequest) -> str:
    """The ``embtie compare`` command line that runs ``request`` (what hf-compare prints first)."""
    import shlex

    assert request.preset is not None and request.strategies is not None  # as request_of makes them
    strategies = request.strategies if isinstance(request.strategies, str) else ",".join(request.strategies)
    return "embtie compare " + shlex.join([request.preset, *request.overrides, "--strategies", strategies,
        "--seeds", str(request.seeds), "--first-seed", str(request.first_seed), "--out", str(request.out)])  # fmt: skip


def _strategy_entry(name: str, options: dict) -> str:
    """``name``, or a labelled variant ``name-key.value=name:key=value`` when options are given (a label
    longer than a label may be is cut and ends in a hash of the whole, ``comparison.labels``)."""
    import hashlib

    from embtie.comparison.labels import MAX_LABEL

    if not options:
        return name
    label = re.sub(r"[^A-Za-z0-9_.+-]", "_", "-".join([name, *(f"{k}.{v}" for k, v in options.items())]))
    if len(label) > MAX_LABEL:
        label = f"{label[: MAX_LABEL - 9]}-{hashlib.sha256(label.encode('utf-8')).hexdigest()[:8]}"
    return f"{label}={name}:" + ":".join(f"{k}={v}" for k, v in options.items())


def run(args: argparse.Namespace) -> int:
    from embtie.experiment import run_comparison

    request = request_of(args)
    print("same as: " + same_as(request))
    status = run_comparison(request).status
    if status == 0 and args.save_models:
        save_models(Path(str(request.out)), args.seed)
    return status


def save_models(out: Path, seed: int) -> None:
    """OUT/STRATEGY/model: the transformers model of each strategy's run of ``seed``, saved with save_pretrained
    (load it with ``embtie.hf.load``; ``embtie export`` writes stock weights from it)."""
    from embtie.models.hf_causal_lm import HFCausalLM
    from embtie.rundir.loading import load_run

    for run_dir in sorted(Path(out, "runs").glob(f"*/seed{seed}")):
        target = Path(out) / run_dir.parent.name / "model"
        model = load_run(run_dir).model
        assert isinstance(model, HFCausalLM)  # compare_arguments names the hf preset
        model.save_pretrained(target)
        print(f"saved {target}")
