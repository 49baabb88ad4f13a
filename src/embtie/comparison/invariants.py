"""What every arm of a comparison shares, declared once, and the checks that keep a comparison comparing
what it says it does (all before anything trains).

A labelled variant (``LABEL=NAME:key=value``) may set ``train.*`` and ``model.*`` keys for its arm alone: the
head recipes need per-arm learning rates and shapes. It may not set what the paired tests assume equal
across arms (``SHARED``): the evaluation data and how it is measured, the tokenizer and vocabulary, the
corpus. Under ``--ladder`` or ``--match`` it may not set what the ladder or the match sets for every arm
(``check_variants``' ``set_by``: the rung's size or depth, its token budget). And no two arms may train the
same config (``check_distinct_arms``): a variant whose options change nothing, or whose only difference
``--match`` erased, would be compared with itself.

docs/reference.md ("Labelled variants") lists ``SHARED``; a test checks that it names every pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from embtie.comparison.arms import Matching
from embtie.config import RunConfig
from embtie.errors import ConfigError

Variants = Mapping[str, tuple[str, Mapping[str, Any]]]
"""label -> (strategy name, options): ``CompareSpec.variants``."""

EVALUATION = "every arm is measured on the same text in the same batches, which the paired tests pair"
VOCABULARY = "perplexities over different tokens are not comparable: every arm reads one tokenizer and vocabulary"
CORPUS = "every arm learns from and is measured on one corpus"


@dataclass(frozen=True)
class SharedKey:
    """Config keys (an ``fnmatch`` pattern over dotted keys) every arm of a comparison has alike, and why."""

    pattern: str
    reason: str


SHARED: tuple[SharedKey, ...] = (
    SharedKey("data.valid_*", EVALUATION),
    SharedKey("data.test_*", EVALUATION),
    SharedKey("data.eval_*", EVALUATION),
    SharedKey("data.bptt", EVALUATION + " (a language model is evaluated in data.bptt-token windows)"),
    SharedKey("data.beam", EVALUATION + " (decoding decides BLEU)"),
    SharedKey("data.lenpen", EVALUATION + " (decoding decides BLEU)"),
    SharedKey("data.max_len_*", EVALUATION + " (decoding decides BLEU)"),
    SharedKey("data.rare_max", EVALUATION),
    SharedKey("train.eval_batches", "the validation curves of every arm must cover the same batches"),
    SharedKey(
        "train.eval_every",
        "every arm is validated at the same steps: the curves, the best checkpoint and early stopping choose "
        "among the same evaluations",
    ),
    SharedKey("data.tokenizer", VOCABULARY),
    SharedKey("data.vocab*", VOCABULARY),
    SharedKey("data.min_count", VOCABULARY),
    SharedKey("data.max_vocab", VOCABULARY),
    SharedKey("data.normalize", VOCABULARY),
    SharedKey("data.*", CORPUS),
)
"""The keys a labelled variant cannot set, first match wins: every ``data`` key but ``PER_ARM_DATA``, and
``train.eval_batches`` and ``train.eval_every``."""

PER_ARM_DATA = frozenset(
    {
        "data.batch_size",
        "data.shuffle",
        "data.train_tokens",
        "data.max_tokens",
        "data.batch_sentences",
        "data.label_smoothing",
        "data.share_encoder_embedding",
    }
)
"""``data`` keys of training alone, which a variant may set: batching, order, how much of the training text
(the vocabulary still comes from all of it), the training loss's smoothing, and whether a translation
encoder shares the decoder's table (a tying choice, like the strategy's)."""


def shared_reason(key: str) -> str | None:
    """Why every arm must have ``key`` alike (None: a variant may set it)."""
    if key in PER_ARM_DATA:
        return None
    return next((s.reason for s in SHARED if fnmatchcase(key, s.pattern)), None)


def check_variants(variants: Variants, text: Callable[[str], str], set_by: Mapping[str, str] | None = None) -> None:
    """No variant (``CompareSpec.variants``; ``text``: how a label is written in --strategies) sets a ``SHARED``
    key, nor a key of ``set_by`` (key -> a clause saying what sets it for every arm: the ladder's rung keys and
    token budget, the match's depth); a one-line ConfigError naming the variant, the key and the reason."""
    for label, (_, opts) in variants.items():
        for key in (k for k in opts if "." in k):  # dotted keys: config overrides of the arm
            why = shared_reason(key)
            if why is not None:
                raise ConfigError(
                    f"--strategies {text(label)}: a variant cannot set {key}, which every arm shares ({why}); set "
                    f"it for every arm as an override ({key}=...) or make a comparison of its own"
                )
            if set_by and key in set_by:
                raise ConfigError(
                    f"--strategies {text(label)}: a variant cannot set {key}, which {set_by[key]}; leave it out"
                )


def check_distinct_arms(arms: Mapping[str, RunConfig], text: Callable[[str], str], matching: Matching | None) -> None:
    """No two arms (label -> the config of its first seed) train the same config, seed aside: the second would
    be compared with itself (``matching``: the comparison's --match, named when it made them alike)."""
    seen: dict[str, str] = {}
    for label, cfg in arms.items():
        other = seen.setdefault(repr({**cfg.to_dict(), "seed": None}), label)
        if other == label:
            continue
        if matching is not None and matching.overrides_of(other) + matching.overrides_of(label):
            raise ConfigError(
                f"--match {matching.mode} made {label} the same model as {other} (it erased the variant's only "
                f"difference, its depth); compare {label} without --match, or give it another difference"
            )
        raise ConfigError(
            f"--strategies {text(label)} trains the same config as {other}: its options change nothing, so it "
            "would be compared with itself; drop it or give it a setting that differs"
        )
