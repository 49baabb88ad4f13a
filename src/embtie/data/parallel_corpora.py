"""Parallel corpora for translation: Multi30k task 1 (De<->En) and IWSLT14 De-En (valid only), as cased
untokenized text (subword runs) or tokenized lowercased text (word-level runs).

Files are read from the data root with their checksums verified; a test set the user supplies
(``--src-file`` / ``--ref-file``) is read as plain text, one sentence per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from embtie.data.files import DataFile, data_root, read_lines, read_user_lines
from embtie.errors import DataError

MT_DATASETS: dict[str, dict[str, dict[str, DataFile]]] = {
    # Truecased, untokenized text (the repository's raw/ files, gzipped as published).
    "multi30k": {
        "train": {
            "de": DataFile(
                "multi30k/raw/train.de.gz", "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6"
            ),
            "en": DataFile(
                "multi30k/raw/train.en.gz", "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f"
            ),
        },
        "valid": {
            "de": DataFile(
                "multi30k/raw/val.de.gz", "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a"
            ),
            "en": DataFile(
                "multi30k/raw/val.en.gz", "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28"
            ),
        },
    },
    # fairseq's prepare-iwslt14.sh output before BPE: Moses-tokenized, lowercased. Only valid is here.
    "iwslt14": {
        "valid": {
            "de": DataFile("iwslt14/tok/valid.de", "3f051579c9d8c7281a6ea8c72ad4ae09dbaa9bb24dfd41166f2c3a3df7cd940a"),
            "en": DataFile("iwslt14/tok/valid.en", "e6d7317a9772cd1ed970910c611e9e7dada1f34439269b44a9d801334bff948d"),
        },
    },
}

# The same splits as tokenized, lowercased text (for word-level vocabularies, ``data.tokenizer: word``).
MT_TOKENIZED: dict[str, dict[str, dict[str, DataFile]]] = {
    # the repository's own tok/ files: lowercased, punctuation-normalized, Moses-tokenized.
    "multi30k": {
        "train": {
            "de": DataFile(
                "multi30k/tok/train.lc.norm.tok.de", "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505"
            ),
            "en": DataFile(
                "multi30k/tok/train.lc.norm.tok.en", "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119"
            ),
        },
        "valid": {
            "de": DataFile(
                "multi30k/tok/val.lc.norm.tok.de", "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00"
            ),
            "en": DataFile(
                "multi30k/tok/val.lc.norm.tok.en", "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec"
            ),
        },
    },
    "iwslt14": MT_DATASETS["iwslt14"],  # already tokenized and lowercased
}

LANGS = ("de", "en")


@dataclass(frozen=True)
class ParallelText:
    """Line-aligned sentences: ``src[i]`` translates to ``ref[i]`` (``ref`` may be None for a bare source)."""

    src: list[str]
    ref: list[str] | None

    def __len__(self) -> int:
        return len(self.src)


def check_pair(dataset: str, src_lang: str, tgt_lang: str) -> None:
    """Raise ConfigError-like DataError for an unknown dataset or language pair."""
    if dataset not in MT_DATASETS:
        raise DataError(f"unknown translation dataset {dataset!r}; choose one of: {', '.join(MT_DATASETS)}")
    if src_lang not in LANGS or tgt_lang not in LANGS or src_lang == tgt_lang:
        raise DataError(f"language pair {src_lang}->{tgt_lang} is not available; use de->en or en->de")


def split_files(dataset: str, split: str, tokenized: bool = False) -> dict[str, DataFile]:
    """{lang: DataFile} of a split (``tokenized``: its tokenized, lowercased text); a clear error when the
    split is not provided here."""
    if dataset not in MT_DATASETS:
        raise DataError(f"unknown translation dataset {dataset!r}; choose one of: {', '.join(MT_DATASETS)}")
    files = (MT_TOKENIZED if tokenized else MT_DATASETS)[dataset]
    if split not in files:
        raise DataError(
            f"split {split!r} of {dataset} is not available here (only {', '.join(files)}); "
            + (
                "give your own with data.train_src_file=PATH data.train_tgt_file=PATH"
                if split == "train"
                else "pass your own test set with --src-file S --ref-file R"
            )
        )
    return files[split]


def read_side(dataset: str, split: str, lang: str, root: Path | None = None, tokenized: bool = False) -> list[str]:
    """Sentences of one language of a split, checksum verified."""
    f = split_files(dataset, split, tokenized)[lang]
    return read_lines(f.path(root or data_root()), f.sha256)


def load_parallel(
    dataset: str, split: str, src_lang: str, tgt_lang: str, root: Path | None = None, tokenized: bool = False
) -> ParallelText:
    """The aligned source/reference sentences of ``dataset``'s ``split`` (``tokenized``: the tokenized,
    lowercased version)."""
    check_pair(dataset, src_lang, tgt_lang)
    src = read_side(dataset, split, src_lang, root, tokenized)
    ref = read_side(dataset, split, tgt_lang, root, tokenized)
    if len(src) != len(ref):
        raise DataError(f"{dataset} {split}: {len(src)} {src_lang} lines but {len(ref)} {tgt_lang} lines")
    return ParallelText(src, ref)


def load_user_files(
    src_file: str | Path,
    ref_file: str | Path | None = None,
    src_what: str = "source file",
    ref_what: str = "reference file",
) -> ParallelText:
    """A user-supplied test set: one source sentence per line, and optionally its references (as many lines).
    ``src_what``/``ref_what`` name the files in errors (e.g. the command-line options that gave them)."""
    src = read_user_lines(src_file, src_what)
    ref = None
    if ref_file is not None:
        ref = read_user_lines(ref_file, ref_what)
        if len(ref) != len(src):
            raise DataError(
                f"{src_what} {src_file} has {len(src)} lines but {ref_what} {ref_file} has {len(ref)}; "
                "give line-aligned files (line i of the references translates line i of the source)"
            )
    return ParallelText(src, ref)
