"""``embtie eval RUN_DIR [--split valid|test] [--test-file PATH]``: token-weighted perplexity of a run.

Translation runs (tasks that are ``Translates``): ``embtie eval RUN_DIR --split valid`` or
``--src-file S --ref-file R`` decodes (``--beam``, ``--lenpen``) and reports sacreBLEU and chrF with
their signatures, next to BLEU on Moses-tokenized text (multi-bleu.perl style, as Liu et al. and most
NMT papers report it; ``--ref-tokenized`` when R is tokenized already), plus the perplexity; the
outputs go to RUN_DIR/hyps.<split>.txt (and eval.json under ``<split>``, or ``<split>@<checkpoint>``
when --checkpoint is given).

Captioning runs (tasks that are ``Captions``): ``embtie eval RUN_DIR --split valid`` captions every
image of the split (``--beam``) and reports BLEU-1..4, METEOR, ROUGE-L, CIDEr, vocabulary usage and the
rare-word share; ``--split test --test-file CAPTIONS`` scores the test images against a captions file
(``IMAGE#k<TAB>caption``). Captions go to RUN_DIR/hyps.<split>.txt.

``--split test`` without a file of one's own reads the dataset's test split by name (``embtie data get NAME
--split test`` brings it; without it, one line says so).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from embtie.commands.common import device_arg, number_arg, path_arg

HELP = "perplexity of a trained run on a split or a user-supplied file (writes RUN_DIR/eval.json)"
DESCRIPTION = HELP
EXAMPLES = (
    "embtie eval runs/tied",
    "embtie eval runs/tf --split valid --beam 5 --lenpen 1.0",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run_dir", type=path_arg("RUN_DIR"), metavar="RUN_DIR")
    parser.add_argument(
        "--split", choices=("valid", "test"), default=None,
        help="default: valid (test with --test-file/--src-file); test: the dataset's test split (embtie data get)",
    )  # fmt: skip
    parser.add_argument(
        "--test-file",
        type=path_arg("--test-file"),
        metavar="PATH",
        help="your own text file to evaluate instead of a split",
    )
    parser.add_argument("--device", default="cpu", type=device_arg, help="cpu (default), cuda or cuda:N")
    parser.add_argument(
        "--src-file", type=path_arg("--src-file"), metavar="S", help="translation: source sentences of a test set"
    )
    parser.add_argument(
        "--ref-file", type=path_arg("--ref-file"), metavar="R", help="translation: the references of --src-file"
    )
    parser.add_argument(
        "--beam",
        type=number_arg(int, "--beam", ge=1, most=1000),
        default=None,
        help="translation: beam width (default: the run's)",
    )
    parser.add_argument(
        "--lenpen",
        type=number_arg(float, "--lenpen", ge=0, most=100),
        default=None,
        help="translation: length penalty (default: the run's)",
    )
    parser.add_argument("--checkpoint", metavar="NAME", help="weights to use, e.g. avg-last5 (default: newest)")
    parser.add_argument(
        "--ref-tokenized",
        action="store_true",
        default=None,
        help="translation: R is Moses-tokenized already (e.g. fairseq's prepared test.en): tokenized BLEU "
        "splits R and the outputs on spaces instead of tokenizing them (default: tokenize user files)",
    )


def result_name(split: str, user_file: str | None) -> str:
    """What a result is called in eval.json, in hyps.<name>.txt and on screen: the split; a user's file
    evaluated in place of the validation split is named by the file (``file:NAME``), never ``valid``.
    (A user's file without ``--split`` stands for the test split.)"""
    if user_file is None or split == "test":
        return split
    return f"file:{Path(user_file).name}"


def run(args: argparse.Namespace) -> int:
    from embtie.rundir.loading import load_for_decoding
    from embtie.tasks.capabilities import Captions

    translation = _check_inputs(args)
    split = args.split or ("test" if args.test_file or args.src_file else "valid")
    path = str(Path(args.test_file).expanduser()) if args.test_file else None
    name = result_name(split, args.test_file or args.src_file)
    # no writer lock: the newest complete checkpoint is read (the run may be training); eval.json is replaced atomically
    run_ = load_for_decoding(args.run_dir, args.checkpoint, device=args.device)
    source = run_.source().to_json(_command(args))

    def save(run_dir: Path, key: str, res: dict) -> None:
        _save(run_dir, key, {**res, "provenance": source})

    if translation:
        return _translation(run_, split, name, args, save)
    if isinstance(run_.task, Captions):
        from embtie.commands.caption_eval import captioning

        return captioning(run_, split, path, args, save, name=name)
    res = run_.task.evaluate(run_.model, split, path=path)
    res = {**res, "split": name, "file": path, "checkpoint": run_.checkpoint.name}
    key = name if args.checkpoint is None else f"{name}@{run_.checkpoint.name}"
    print(f"{key} ppl {res['ppl']:.2f} (loss {res['loss']:.4f}, {res['tokens']} tokens)")
    save(Path(args.run_dir), key, res)
    return 0


def _command(args: argparse.Namespace) -> str:
    """The command line of this evaluation, for the provenance of its result."""
    import shlex

    parts = ["embtie", "eval", str(args.run_dir)]
    for flag in ("split", "test_file", "src_file", "ref_file", "checkpoint", "beam", "lenpen", "device"):
        value = getattr(args, flag, None)  # foreign: argparse Namespace
        if value is not None and not (flag == "device" and value == "cpu"):
            parts += [f"--{flag.replace('_', '-')}", str(value)]
    if getattr(args, "ref_tokenized", None):  # foreign: argparse Namespace
        parts.append("--ref-tokenized")
    return shlex.join(parts)


def _check_inputs(args: argparse.Namespace) -> bool:
    """Check the run directory and the user's files before the (slower) model load; True for a
    translation run."""
    from embtie import tasks
    from embtie.data.files import read_user_text
    from embtie.data.parallel_corpora import load_user_files
    from embtie.errors import ConfigError, DataError
    from embtie.rundir.folders import read_run_config
    from embtie.tasks.capabilities import Captions, Translates

    cfg = read_run_config(args.run_dir)
    task = tasks.get(cfg.task)
    translation = issubclass(task, Translates)
    if issubclass(task, Captions) and (args.src_file or args.ref_file):
        raise ConfigError("a captioning run takes --test-file CAPTIONS (IMAGE#k<TAB>caption lines), not --src-file")
    if translation and args.test_file:
        raise ConfigError("a translation run takes --src-file S --ref-file R, not --test-file")
    if not translation and (args.src_file or args.ref_file):
        raise ConfigError(
            f"--src-file/--ref-file are for translation runs; {args.run_dir} is a {cfg.task!r} run: "
            "give --test-file PATH"
        )
    if args.ref_file and not args.src_file:
        raise ConfigError("--ref-file R needs --src-file S, the sentences that R translates")
    if args.src_file and not args.ref_file:
        raise DataError("scoring needs references: give --ref-file R with --src-file S")
    if args.test_file:
        read_user_text(args.test_file, "--test-file")
    if args.src_file:
        load_user_files(args.src_file, args.ref_file, "--src-file", "--ref-file")
    if args.split == "test" and not (args.test_file or args.src_file):
        require_test_split(cfg, translation, issubclass(task, Captions))
    return translation


def require_test_split(cfg, translation: bool, captions: bool) -> None:
    """The configured dataset's test split is here; else one line naming the ``embtie data get`` that brings
    it (and the option for one's own file). Runs on user corpora read their test file themselves."""
    if translation:
        from embtie.data.parallel_corpora import split_files

        if cfg.data.own_files("test") is None:
            split_files(cfg.data.dataset, "test", cfg.data.tokenizer == "word")
    elif captions:
        if cfg.data.captions_file is None:
            from embtie.data.caption_corpus import require_split

            require_split(cfg.data.dataset, "test")
    elif not cfg.data.corpus().own:  # a user's corpus names its test file itself (or --test-file)
        from embtie.data.lm_corpora import split_file

        split_file(cfg.data.dataset, "test")


def _save(run_dir: Path, key: str, res: dict) -> None:
    """Add ``res`` under ``key`` to RUN_DIR/eval.json (the result is printed before: a failure here
    loses nothing but the file)."""
    from embtie.errors import DataError
    from embtie.files import write_atomic

    out = run_dir / "eval.json"
    try:
        allres = json.loads(out.read_text(encoding="utf-8")) if out.is_file() else {}
    except (OSError, ValueError) as e:
        raise DataError(f"{out} is unreadable ({e}); move it away to save this result in a new one") from None
    if not isinstance(allres, dict):
        raise DataError(f"{out} does not hold a JSON object; move it away to save this result in a new one")
    _note_stale(run_dir, {k: v for k, v in allres.items() if k != key})
    allres[key] = res
    try:
        write_atomic(out, json.dumps(allres, indent=1))
    except OSError as e:
        raise DataError(f"cannot write {out}: {e.strerror or e}; the result above was not saved") from None


def _note_stale(run_dir: Path, entries: dict) -> None:
    """One line on stderr naming the other results of eval.json that came from an older checkpoint than the
    run's newest (results of a named checkpoint, ``KEY@NAME``, are never out of date by a newer step)."""
    from embtie.rundir.provenance import stale_reason

    stale = []
    for key, res in entries.items():
        prov = res.get("provenance") if isinstance(res, dict) and "@" not in key else None
        if not isinstance(prov, dict) or not isinstance(ckpt := prov.get("checkpoint"), str):
            continue  # a result of older code, or of a named checkpoint
        recorded = prov.get("inputs")
        if stale_reason(run_dir, ckpt, str(prov.get("model_sha256")), recorded if isinstance(recorded, dict) else {}):
            stale.append(f"{key} (from {ckpt})")
    if stale:
        print(
            f"embtie: note: {run_dir / 'eval.json'} also holds results of older checkpoints: {', '.join(stale[:3])}"
            f"{f' and {len(stale) - 3} more' if len(stale) > 3 else ''}; run `embtie eval` again for them",
            file=sys.stderr,
        )


def _translation(run_, split: str, name: str, args: argparse.Namespace, save: Callable[[Path, str, dict], None]) -> int:
    """BLEU / chrF (+ perplexity) of a translation run; outputs to RUN_DIR/hyps.<name>.txt."""
    from embtie.errors import DataError
    from embtie.files import write_atomic

    res = run_.task.evaluate_translation(
        run_.model, split, args.src_file, args.ref_file, beam=args.beam, lenpen=args.lenpen,
        ref_tokenized=getattr(args, "ref_tokenized", None),  # foreign: argparse Namespace
    )  # fmt: skip
    hyps = res.pop("hyps")
    d = Path(args.run_dir)
    split = res["split"] = name
    key = split if args.checkpoint is None else f"{split}@{run_.checkpoint.name}"
    res["checkpoint"] = run_.checkpoint.name
    print(
        f"{split}: BLEU {res['bleu']:.2f}  tok-BLEU {res['bleu_tok']:.2f}  chrF {res['chrf']:.2f}  "
        f"ppl {res['ppl']:.2f}  (beam {res['beam']}, lenpen {res['lenpen']}, {res['sentences']} sentences, "
        f"checkpoint {res['checkpoint']})"
    )
    print(f"sacreBLEU {res['bleu_signature']} = {res['bleu']:.2f} (detokenized)")
    print(f"tok-BLEU {res['bleu_tok_signature']} = {res['bleu_tok']:.2f} (multi-bleu.perl on tokenized text)")
    print(f"chrF {res['chrf_signature']}")
    hyp_file = d / f"hyps.{hyps_name(key)}.txt"
    try:
        write_atomic(hyp_file, "".join(h + "\n" for h in hyps))
    except OSError as e:
        raise DataError(f"cannot write {hyp_file}: {e.strerror or e}; the scores above were not saved") from None
    save(d, key, res)
    return 0


def hyps_name(key: str) -> str:
    """The part of ``hyps.<part>.txt`` for a result key (``file:NAME`` -> ``file-NAME``)."""
    return key.replace("file:", "file-", 1)
