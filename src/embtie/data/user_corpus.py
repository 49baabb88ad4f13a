"""A user's own corpus: plain text files, or a Hugging Face ``datasets`` dataset (saved with
``save_to_disk``, or read from a local .json/.jsonl/.csv/.parquet/.txt file, or a dataset name the local
``datasets`` cache holds), and the tokenizer that cuts its lines into tokens: words, a SentencePiece model,
or a Hugging Face tokenizer the user names.

``data.source: hf:PATH_OR_NAME`` with ``data.text_column`` (default ``text``) names a datasets dataset; its
splits ``train``, ``validation`` (or ``valid``/``dev``) and ``test`` are embtie's train/valid/test.
``data.tokenizer``: ``word`` (whitespace), ``sentencepiece:MODEL_FILE`` or ``hf:NAME_OR_PATH`` (loaded with
``AutoTokenizer.from_pretrained(..., local_files_only=True)``); the tokens are the tokenizer's pieces, which
embtie's vocabulary indexes by frequency like words.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

from embtie.errors import ConfigError, DataError

HF_SPLITS = {"train": ("train",), "valid": ("validation", "valid", "dev"), "test": ("test",)}
BUILDERS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet", ".txt": "text"}
Tokenize = Callable[[str], list[str]]


SOURCE_FORM = "hf:PATH_OR_NAME (a Hugging Face datasets dataset)"
TOKENIZER_FORM = (
    "auto, word, bpe, unigram, sentencepiece:MODEL_FILE or hf:NAME_OR_PATH (a Hugging Face tokenizer)"
)
TRAINED = ("auto", "bpe", "unigram")
"""``data.tokenizer`` values that the language-model config resolves before any text is cut (``auto``) or
that ``embtie.data.lm_corpora.subword_corpus`` trains (``bpe``, ``unigram``)."""


def is_source(source: str) -> bool:
    """``data.source`` spells ``hf:PATH_OR_NAME``."""
    return source.startswith("hf:") and len(source) > 3


def is_tokenizer(spec: str) -> bool:
    """``data.tokenizer`` spells ``auto``, ``word``, ``bpe``, ``unigram``, ``sentencepiece:MODEL_FILE`` or
    ``hf:NAME_OR_PATH``."""
    return spec in ("word", *TRAINED) or (spec.startswith(("sentencepiece:", "hf:")) and not spec.endswith(":"))


def check_source(source: str) -> None:
    if not is_source(source):
        raise ConfigError(f"data.source={source!r} must look like {SOURCE_FORM}")


def check_tokenizer(spec: str) -> None:
    if not is_tokenizer(spec):
        raise ConfigError(f"data.tokenizer={spec!r}: use {TOKENIZER_FORM}")


def _datasets() -> Any:
    try:
        import datasets
    except ImportError:
        raise DataError("data.source=hf:... needs the datasets library: pip install datasets") from None
    return datasets


@lru_cache(maxsize=4)
def _load(spec: str) -> Any:
    """The dataset (or DatasetDict) named by ``spec`` (the part after ``hf:``)."""
    datasets = _datasets()
    path = Path(spec).expanduser()
    try:
        if path.is_dir():
            return datasets.load_from_disk(str(path))
        if path.is_file():
            builder = BUILDERS.get(path.suffix.lower())
            if builder is None:
                raise DataError(f"data.source=hf:{spec}: a {path.suffix or 'suffix-less'} file; give a folder "
                                f"saved with save_to_disk or a {'/'.join(BUILDERS)} file")  # fmt: skip
            return datasets.load_dataset(builder, data_files={"train": str(path)})
        return datasets.load_dataset(spec)
    except DataError:
        raise
    except Exception as e:  # datasets raises many kinds (FileNotFoundError, ConnectionError, DatasetNotFoundError)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise DataError(
            f"data.source=hf:{spec} cannot be loaded ({first[:200]}); give a folder saved with save_to_disk, a local "
            "data file, or a dataset name that is in the local datasets cache"
        ) from None


def hf_texts(source: str, split: str, column: str) -> list[str]:
    """The ``column`` of ``split`` (train, valid, test) of the datasets dataset ``source`` (``hf:...``)."""
    check_source(source)
    ds = _load(source[3:])
    if isinstance(ds, dict) or type(ds).__name__ == "DatasetDict":
        have = list(ds.keys())
        name = next((n for n in HF_SPLITS[split] if n in have), None)
        if name is None:
            raise DataError(f"data.source={source} has no {split} split ({' or '.join(HF_SPLITS[split])}; it has "
                            f"{', '.join(have)}); give data.{split}_file=PATH or --test-file for test")  # fmt: skip
        ds = ds[name]
    elif split != "train":
        raise DataError(f"data.source={source} is one split: it serves as train; give data.{split}_file=PATH")
    if column not in ds.column_names:
        raise DataError(f"data.source={source} has no column {column!r} (it has {', '.join(ds.column_names)}); "
                        "set data.text_column")  # fmt: skip
    return ["" if x is None else str(x) for x in ds[column]]


@lru_cache(maxsize=4)
def tokenizer(spec: str) -> Tokenize:
    """The function that cuts a line into tokens, for ``data.tokenizer``."""
    check_tokenizer(spec)
    if spec == "word":
        return str.split
    if spec in TRAINED:
        raise ConfigError(f"data.tokenizer={spec} is resolved by the language-model task before text is cut")
    kind, _, where = spec.partition(":")
    if kind == "sentencepiece":
        import sentencepiece as spm

        path = Path(where).expanduser()
        if not path.is_file():
            raise DataError(f"data.tokenizer={spec}: {path} does not exist; give a SentencePiece .model file")
        try:
            sp = spm.SentencePieceProcessor(model_file=str(path))
        except Exception as e:  # sentencepiece: OSError/RuntimeError for a file that is not a model
            why = type(e).__name__
            raise DataError(f"data.tokenizer={spec}: {path} is not a SentencePiece model ({why})") from None
        return lambda line: list(sp.encode(line, out_type=str))
    local = Path(where).expanduser()
    try:
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(str(local) if local.exists() else where, local_files_only=True)
    except ImportError:
        raise DataError("data.tokenizer=hf:... needs transformers: pip install 'embtie[hf]'") from None
    except Exception as e:  # transformers: OSError (not found), ValueError (not a tokenizer)
        why = str(e).strip().splitlines()[0][:160] if str(e).strip() else type(e).__name__
        raise DataError(
            f"data.tokenizer={spec} cannot be loaded ({why}); give a local tokenizer folder (save_pretrained) "
            "or a name in the local Hugging Face cache"
        ) from None
    return lambda line: list(tok.tokenize(line))
