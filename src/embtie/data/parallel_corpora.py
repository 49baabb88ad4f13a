"""Parallel corpora for translation: Multi30k task 1 (De<->En), IWSLT14 De-En, WMT16 and WMT14 En-De, as cased
untokenized text (subword runs; Multi30k) or tokenized text (word-level runs; the others are tokenized only).
Files missing here are brought by ``embtie data get NAME`` (the error names it).

Files are read from the data root with their checksums verified; a test set the user supplies
(``--src-file`` / ``--ref-file``) is read as plain text, one sentence per line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from embtie.data.files import DataFile, read_lines, read_user_lines, require
from embtie.errors import DataError


def _tok(dataset: str, split: str, lang: str, sha256: str | None) -> DataFile:
    return DataFile(f"{dataset}/tok/{split}.{lang}", sha256)


def _multi30k(stem: str, shas: dict[str, str], tokenized: bool) -> dict[str, DataFile]:
    form = "tok/{stem}.lc.norm.tok.{lang}" if tokenized else "raw/{stem}.{lang}.gz"
    return {lang: DataFile("multi30k/" + form.format(stem=stem, lang=lang), sha) for lang, sha in shas.items()}


# Multi30k's test sets (embtie data get multi30k --split test ...): raw and tokenized files' sha256 by language.
_MULTI30K_TESTS = {
    "test": ("test_2016_flickr", {"de": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
                                  "en": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9"},
             {"de": "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
              "en": "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2"}),
    "test2017": ("test_2017_flickr", {"de": "a2c89666db00c495cd8513b9d708d5a3acc205d7de312ef2bf5fb7ebc1540aee",
                                      "en": "76a444ee25172e72695cddb13ae4a3bda59430617be88e0bb46b60504f054074"},
                 {"de": "02067e4a9402786a4fcb8c1b6f4307e4a5073ced64800abead5273b54f5f31f6",
                  "en": "c9d1dfd7a26add989382e534af235af9f0f658b2a30e7eb0efdaf142496ee54f"}),
    "test2017-mscoco": ("test_2017_mscoco", {"de": "799e4854c25d601cb6cb6be29eabe5667734c61ace2f495e03e429031a0bc338",
                                             "en": "aab300bfb4427697987e02cd0aacd44bfe8aa50456231b6474c08038bbed2b58"},
                        {"de": "e2825990b8a4e5289d2cdba801d57c187810bab9b4f5d87a30c35800a0d871b6",
                         "en": "fe69ae004d71c42ead0301e70c57de5b1b6b5fb7f52210d42b22801e98e656f3"}),
    "test2018": ("test_2018_flickr", {"de": "ddd0130c7d97482dc5197a02141dae8dd79f20f03586c480d675c09a32daf608",
                                      "en": "ef4f4844037d4c5dea75c9a8ed5fd78905967a26f67c255e230cc9780032654d"},
                 {"de": "45ce6b121708adf538d3a8c71dc1acbcb1e0f2bca74ace8e58652f9ea5b96335",
                  "en": "a66e25cbb8323d74a40873dcd222659f39e30ee7687a6ed5445833aed0673239"}),
}  # fmt: skip

_SPLITS = ("train", "valid", "test")
_IWSLT14_SHAS: dict[str, dict[str, str | None]] = {
    "train": {"de": None, "en": None},  # pinned by git blob id (embtie data verify)
    "valid": {"de": "3f051579c9d8c7281a6ea8c72ad4ae09dbaa9bb24dfd41166f2c3a3df7cd940a",
              "en": "e6d7317a9772cd1ed970910c611e9e7dada1f34439269b44a9d801334bff948d"},
    "test": {"de": "e718c783e33160b7d72af8f733756a466e0d0c016eff8ab624c1b0d1d01cbbdf",
             "en": "4b127beb9050511a3e6209cd837ff36f623a3a423666b32aba6e208b7330cf4c"},
}  # fmt: skip

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
        **{split: _multi30k(stem, raw, False) for split, (stem, raw, _) in _MULTI30K_TESTS.items()},
    },
    # fairseq's prepare-iwslt14.sh output before BPE (tok/): Moses-tokenized, lowercased.
    "iwslt14": {
        split: {lang: _tok("iwslt14", split, lang, sha) for lang, sha in shas.items()}
        for split, shas in _IWSLT14_SHAS.items()
    },
    # the papers' WMT preparations (embtie data get wmt16 / wmt14): Moses-tokenized, cased; not pinned here.
    **{
        name: {split: {lang: _tok(name, split, lang, None) for lang in ("de", "en")} for split in _SPLITS}
        for name in ("wmt16", "wmt14")
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
        **{split: _multi30k(stem, tok, True) for split, (stem, _, tok) in _MULTI30K_TESTS.items()},
    },
    # already tokenized (and lowercased: iwslt14)
    **{name: MT_DATASETS[name] for name in ("iwslt14", "wmt16", "wmt14")},
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
    own = {
        "train": "give your own with data.train_src_file=PATH data.train_tgt_file=PATH",
        "valid": "set EMBTIE_DATA to the folder holding it",
    }.get(split, "pass your own test set with --src-file S --ref-file R")
    if split not in files:
        raise DataError(f"split {split!r} of {dataset} is not available here (only {', '.join(files)}); {own}")
    require(list(files[split].values()), dataset, split, own)
    return files[split]


def read_side(dataset: str, split: str, lang: str, root: Path | None = None, tokenized: bool = False) -> list[str]:
    """Sentences of one language of a split, checksum verified."""
    f = split_files(dataset, split, tokenized)[lang]
    return read_lines(f.path(root), f.sha256)


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
