"""SentencePiece BPE subwords for translation: trained once on the training text, cached, reused.

A joint model trained on both languages gives encoder and decoder one vocabulary (so one sharing
object can serve encoder input, decoder input and decoder output); separate models give each side
its own. Ids 0-3 are fixed: <pad>, <unk>, <s>, </s>. SentencePiece keeps whitespace as a symbol,
so ``decode(encode(text))`` gives the (normalized) text back: outputs come out detokenized.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import sentencepiece as spm

from embtie.errors import DataError

PAD, UNK, BOS, EOS = 0, 1, 2, 3
SPECIAL_IDS = 4
"""pad, unk, bos, eos: pieces of every model besides the learned ones."""
MAX_VOCAB_SIZE = 2**31 - 1
"""SentencePiece reads vocab_size as a 32-bit integer."""


def cache_root() -> Path:
    """``$EMBTIE_CACHE`` when set, else ``~/.cache/embtie``."""
    env = os.environ.get("EMBTIE_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "embtie"


class Subwords:
    """A loaded SentencePiece model. ``encode`` gives ids without BOS/EOS; ``decode`` drops specials."""

    pad_id, unk_id, bos_id, eos_id = PAD, UNK, BOS, EOS
    text_form = "detokenized"
    """the text this model reads and writes (BLEU is then computed on detokenized text)."""

    def __init__(self, model_file: str | Path) -> None:
        self.model_file = Path(model_file)
        if not self.model_file.is_file():
            raise DataError(f"subword model {self.model_file} is missing; re-run training or copy it back")
        try:
            self.sp = spm.SentencePieceProcessor(model_file=str(self.model_file))
        except Exception as e:  # sentencepiece raises OSError / RuntimeError for a damaged model file
            raise DataError(
                f"subword model {self.model_file} is damaged ({type(e).__name__}); restore it from the run it came "
                "from, or delete it to learn the subwords again"
            ) from None
        if (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id()) != (PAD, UNK, BOS, EOS):
            raise DataError(f"subword model {self.model_file} does not use ids pad=0 unk=1 bos=2 eos=3")

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> list[int]:
        return self.sp.encode(text, out_type=int)

    def encode_batch(self, texts: list[str]) -> list[list[int]]:
        return self.sp.encode(texts, out_type=int)

    def decode(self, ids: list[int]) -> str:
        return self.sp.decode([i for i in ids if i > EOS])

    def pieces(self, text: str) -> list[str]:
        return self.sp.encode(text, out_type=str)


def required_vocab_size(texts: list[str]) -> int:
    """The smallest vocab_size SentencePiece accepts for ``texts`` (``character_coverage`` 1.0): one piece per
    distinct character after its nmt_nfkc normalization (whitespace as U+2581), + the special ids. A larger
    size than the text supports is not refused: the model then has fewer pieces (``hard_vocab_limit`` off)."""
    normalizer = spm.SentencePieceNormalizer(rule_name="nmt_nfkc")
    chars: set[str] = set()
    for line in normalizer.normalize(texts):
        chars.update(line)
    return len(chars) + SPECIAL_IDS


def _fingerprint(texts: list[str], options: dict) -> str:
    h = hashlib.sha256(repr(sorted(options.items())).encode())
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


SPM_MAX_SENTENCE = 4192
"""SentencePiece's max_sentence_length (its default, kept so that models trained before stay the same): a
longer training line is skipped by the trainer."""


def train_subwords(
    texts: list[str],
    vocab_size: int,
    *,
    cache_dir: Path | None = None,
    model_type: str = "bpe",
    character_coverage: float = 1.0,
) -> Path:
    """Train (or find in the cache) a SentencePiece model on ``texts``; returns its .model path.

    The cache key is a hash of the texts and the options, so the same training data and settings
    always reuse one model. Training writes to a temporary folder and renames it into place, so
    two processes training the same model at once do not corrupt each other.
    """
    if vocab_size < 8:
        raise DataError(f"subword vocab_size={vocab_size} is too small; use at least 8")
    options = {"vocab_size": vocab_size, "model_type": model_type, "character_coverage": character_coverage}
    root = cache_dir or cache_root() / "subwords"
    final = root / f"spm-{_fingerprint(texts, options)}"
    model = final / "spm.model"
    if model.is_file() and _loads(model):
        return _noted_if_smaller(model, vocab_size)
    shutil.rmtree(final, ignore_errors=True)  # a damaged entry (a short write of older code) is made again
    _note_long_lines(texts)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".spm-", dir=root))
    try:
        spm.SentencePieceTrainer.train(
            sentence_iterator=iter(texts),
            model_prefix=str(tmp / "spm"),
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=character_coverage,
            pad_id=PAD,
            unk_id=UNK,
            bos_id=BOS,
            eos_id=EOS,
            hard_vocab_limit=False,
            num_threads=1,
            minloglevel=2,
        )
        if not _loads(tmp / "spm.model"):  # read back before it is renamed into place: never a short write
            free = shutil.disk_usage(root).free
            raise OSError(errno.EIO, f"the written model does not load back; {free:,} bytes free there", str(tmp))
        try:
            tmp.rename(final)
        except OSError:  # another process finished first: use theirs
            shutil.rmtree(tmp, ignore_errors=True)
    except Exception as e:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, OSError) or "No space left" in str(e) or "os error" in str(e).lower():
            reason = (e.strerror if isinstance(e, OSError) else None) or e
            raise DataError(
                f"could not write the subword model into the cache {root} ({reason}); "
                "free space there (or point EMBTIE_CACHE at a disk with room), then run the same command"
            ) from None
        need = re.search(r"smaller than required_chars\. (\d+) vs (\d+)", str(e))
        if need:  # the text has more distinct characters than vocab_size leaves room for
            raise DataError(
                f"data.vocab_size={vocab_size} must be in [{need[2]}, {MAX_VOCAB_SIZE}] for this training text: "
                f"its subword model needs one piece per distinct character and {SPECIAL_IDS} special ids"
            ) from None
        if "!sentences_.empty()" in str(e):  # every line was longer than SentencePiece trains on
            longest = max((len(t.encode("utf-8")) for t in texts), default=0)
            raise DataError(
                f"no line of the training text is short enough to train a subword model on: SentencePiece skips "
                f"lines longer than {SPM_MAX_SENTENCE:,} bytes, and the longest here has {longest:,}; break the "
                "text into lines (a sentence or a paragraph a line), or use data.tokenizer=word"
            ) from None
        raise
    return _noted_if_smaller(model, vocab_size)


def _loads(model: Path) -> bool:
    """Whether ``model`` is a SentencePiece model that loads (a truncated file does not)."""
    try:
        spm.SentencePieceProcessor(model_file=str(model))
    except (OSError, RuntimeError):
        return False
    return True


def long_lines(texts: list[str]) -> tuple[int, int, int]:
    """(lines longer than ``SPM_MAX_SENTENCE`` bytes, their bytes, all bytes) of the training ``texts``."""
    sizes = [len(t.encode("utf-8")) for t in texts]
    skipped = [n for n in sizes if n > SPM_MAX_SENTENCE]
    return len(skipped), sum(skipped), sum(sizes)


def _note_long_lines(texts: list[str]) -> None:
    """A one-line note on stderr when SentencePiece will skip some training lines for their length (all of them
    is the trainer's refusal, turned into a DataError by ``train_subwords``)."""
    n, skipped, total = long_lines(texts)
    if n and n < len(texts):
        print(
            f"embtie: note: {n:,} line(s) of the training text ({skipped / max(total, 1):.0%} of its bytes) are "
            f"longer than {SPM_MAX_SENTENCE:,} bytes, and SentencePiece skips them when it learns the subwords "
            "(the model still encodes them); break the text into lines (a sentence or a paragraph a line) to learn "
            "from them",
            file=sys.stderr,
        )


def _noted_if_smaller(model: Path, vocab_size: int) -> Path:
    """``model``, after a one-line note on stderr when the text supported fewer pieces than asked for."""
    got = spm.SentencePieceProcessor(model_file=str(model)).get_piece_size()
    if got < vocab_size:
        print(
            f"embtie: note: data.vocab_size={vocab_size} is more than this training text supports; the subword "
            f"model has {got} pieces (set data.vocab_size={got} to make it explicit)",
            file=sys.stderr,
        )
    return model
