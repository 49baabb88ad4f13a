"""One-line warnings when a language model's vocabulary does not fit its text: evaluation tokens that fall
outside it (on an ``<unk>`` row that training never saw, or too many of them), or more entries than the
training text can teach.

The thresholds: more than ``UNTRAINED_WARN`` of a split's tokens on an untrained ``<unk>`` row (a subword
model meets a character its training text lacked a few times in a corpus: not worth a warning), more
than ``OOV_WARN`` outside the vocabulary at all (PTB's test has none: its text is closed over its 10,000
words), or fewer than ``MIN_TOKENS_PER_ENTRY`` training tokens per vocabulary entry (PTB has 93). Each
warning is printed once per process.
"""

from __future__ import annotations

import sys
from functools import lru_cache

OOV_WARN = 0.05
UNTRAINED_WARN = 0.001
MIN_TOKENS_PER_ENTRY = 10
FIX = "a subword tokenizer (data.tokenizer=bpe), or for words data.normalize=ptb with data.min_count/max_vocab"


def oov_warning(split: str, outside: int, total: int, unk_trained: bool) -> str | None:
    """The warning for ``outside`` of ``total`` tokens of ``split`` that are not in the vocabulary, or None."""
    if total <= 0 or outside <= 0:
        return None
    rate = outside / total
    if not unk_trained and rate > UNTRAINED_WARN:
        return (f"embtie: warning: {outside:,} of {total:,} {split} tokens ({rate:.1%}) are outside the vocabulary "
                f"and fall on an <unk> row that training never saw; use {FIX}")  # fmt: skip
    if rate > OOV_WARN:
        return (f"embtie: warning: {rate:.1%} of the {split} tokens ({outside:,} of {total:,}) are <unk> (outside the "
                f"vocabulary; more than {OOV_WARN:.0%}): their perplexity says little; use {FIX}")  # fmt: skip
    return None


def size_warning(entries: int, train_tokens: int) -> str | None:
    """The warning for a vocabulary of ``entries`` learned from ``train_tokens`` tokens, or None."""
    if entries <= 0 or train_tokens / entries >= MIN_TOKENS_PER_ENTRY:
        return None
    return (f"embtie: warning: a vocabulary of {entries:,} entries for {train_tokens:,} training tokens "
            f"({train_tokens / entries:.1f} per entry, fewer than {MIN_TOKENS_PER_ENTRY}): most rows are seen too "
            "rarely to be learned; lower data.max_vocab or data.vocab_size, or raise data.min_count")  # fmt: skip


@lru_cache(maxsize=64)
def say(message: str | None) -> None:
    """Print ``message`` on stderr, once per process (None: nothing)."""
    if message is not None:
        print(message, file=sys.stderr)
