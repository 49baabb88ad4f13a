"""``embtie hf-compare``: train a small Hugging Face model with several sharing strategies on PTB (HF Trainer)."""

from __future__ import annotations

import argparse

from embtie.commands.common import number_arg, path_arg

HELP = "train a small Hugging Face model with several sharing strategies on PTB (or your corpus) and compare perplexity"
DESCRIPTION = (
    "Build a transformers causal LM from MODEL_CONFIG (a packaged name, gpt2-tiny or llama-tiny, or the path "
    "of a transformers config JSON), apply each "
    "strategy with embtie.hf.apply, train it with the Hugging Face Trainer on word-level PTB (or your own corpus: "
    "--train-file/--valid-file or --source hf:PATH, cut by --tokenizer), and write "
    "OUT/results.json and OUT/results.md (validation perplexity per strategy). Needs: pip install 'embtie[hf]'."
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
        help="a packaged config name (gpt2-tiny, llama-tiny) or a transformers config JSON with model_type",
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
    parser.add_argument("--seed", type=number_arg(int, "--seed", ge=0), default=0, help="random seed (default 0)")
    parser.add_argument(
        "--init",
        choices=["model", "strategy"],
        default="model",
        help="E starts as the model's own embedding (default) or the strategy's init",
    )
    parser.add_argument("--device", choices=["auto", "cpu"], default="auto")
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
    parser.add_argument("--save-models", action="store_true", help="save each trained model (embtie.hf.load)")


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


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from embtie import cheap
    from embtie.commands.common import warn_held_out_copies
    from embtie.hf.trainer_comparison import HFCompareConfig, run_hf_compare  # needs transformers: imported on use
    from embtie.tasks.lm.config import LMDataConfig

    data = LMDataConfig(dataset=args.dataset, train_file=args.train_file, valid_file=args.valid_file,
                        source=args.source, text_column=args.text_column, tokenizer=args.tokenizer)  # fmt: skip
    corpus = data.corpus()
    warn_held_out_copies(data)

    def tokens(given: int | None) -> int | None:  # EMBTIE_CHEAP: a slice of the data (embtie.cheap)
        return cheap.cap(given or cheap.HF_TOKENS, cheap.HF_TOKENS) if cheap.enabled() else given

    strategies = [s.strip() for s in args.strategies.split(",") if s.strip()]
    options = parse_options(args.option)
    check_choices(strategies, options, args)
    cfg = HFCompareConfig(
        model_config=args.model_config,
        strategies=strategies,
        options=options,
        out=args.out or f"runs/hf-compare-{Path(args.model_config).stem}",
        dataset=corpus if corpus.own or corpus.tokenizer != "word" else args.dataset,
        steps=cheap.cap(args.steps, cheap.HF_STEPS),
        block=cheap.cap(args.block, 16),
        batch_size=cheap.cap(args.batch_size, 2),
        lr=args.lr,
        warmup_steps=args.warmup_steps,
        seed=args.seed,
        init=args.init,
        device=args.device,
        train_tokens=tokens(args.train_tokens),
        valid_tokens=tokens(args.valid_tokens),
        save_models=args.save_models,
    )
    run_hf_compare(cfg)
    print(f"wrote {cfg.out}/results.json and results.md")
    return 0
