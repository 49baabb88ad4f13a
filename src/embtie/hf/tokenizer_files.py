"""The tokenizer files beside a saved model, copied with it: what ``save_pretrained`` of a transformers
tokenizer writes (tokenizer.json and its config, vocabularies, merges, sentencepiece models, the chat
template), recognised by name so that no tokenizer class has to be loaded."""

from __future__ import annotations

import fnmatch
import shutil
from pathlib import Path

PATTERNS = (
    "tokenizer*",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.*",
    "merges.txt",
    "*.model",
    "*.spm",
    "chat_template*",
)


def tokenizer_files(folder: Path) -> list[Path]:
    """The tokenizer files directly inside ``folder``, sorted by name."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and any(fnmatch.fnmatch(p.name, g) for g in PATTERNS))


def copy_tokenizer_files(source: Path, out: Path) -> list[str]:
    """Copy the tokenizer files of ``source`` into ``out`` (byte for byte); returns their names."""
    copied = []
    for path in tokenizer_files(source):
        shutil.copy2(path, out / path.name)
        copied.append(path.name)
    return copied
