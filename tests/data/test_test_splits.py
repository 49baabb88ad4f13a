"""Test splits are part of every dataset: ``embtie eval RUN --split test`` reads them by name, and without
them says in one line which ``embtie data get`` brings them (``--test-file``/``--src-file`` stay for one's own)."""

from __future__ import annotations

import pytest

from conftest import SHARED
from embtie.commands.evaluate import require_test_split
from embtie.config import load_config
from embtie.data import catalogue
from embtie.data.files import require
from embtie.errors import DataError


@pytest.mark.parametrize(
    ("preset", "kind", "expect"),
    [
        ("ptb-gpt-tiny", "lm", ("split 'test' of ptb", "`embtie data get ptb --split test`", "--test-file PATH")),
        ("multi30k-transformer-small", "mt",
         ("split 'test' of multi30k", "`embtie data get multi30k --split test`", "--src-file S --ref-file R")),
        ("iwslt14-rnn-shalev", "mt", ("split 'test' of iwslt14", "`embtie data get iwslt14`", "--src-file")),
        ("wmt16-transformer-big-paper", "mt", ("split 'test' of wmt16", "`embtie data get wmt16`", "--src-file")),
        ("flickr8k-show-tell", "cap",
         ("split 'test' of flickr8k", "`embtie data get flickr8k --split test`", "--test-file CAPTIONS")),
        ("mscoco-show-tell", "cap", ("split 'test' of mscoco", "`embtie data get mscoco`", "--test-file CAPTIONS")),
    ],
)  # fmt: skip
def test_a_missing_test_split_names_the_get_that_brings_it(preset, kind, expect, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBTIE_DATA", str(SHARED))
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path))
    with pytest.raises(DataError) as e:
        require_test_split(load_config(preset), kind == "mt", kind == "cap")
    msg = str(e.value)
    assert "\n" not in msg and msg.startswith("missing data file")
    for s in expect:
        assert s in msg


def test_a_test_split_in_the_user_cache_is_found_beside_a_shared_root(monkeypatch, tmp_path):
    """The shared root holds train/valid, `get` put the test split in the user cache: eval finds it."""
    monkeypatch.setenv("EMBTIE_DATA", str(SHARED))
    monkeypatch.setenv("EMBTIE_CACHE", str(tmp_path))
    entries = catalogue.dataset("multi30k").entries_of(["test"])
    for e in entries:
        (tmp_path / "data" / e.relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "data" / e.relpath).write_bytes(b"stand-in\n")
    require_test_split(load_config("multi30k-transformer-small"), True, False)  # no error


def test_every_catalogued_test_file_is_the_one_the_loaders_read():
    """The loaders' test DataFiles and the catalogue agree on paths and sha256 (one source of truth)."""
    from embtie.data.caption_corpus import FLICKR8K_TEST_CAPTIONS
    from embtie.data.lm_corpora import LM_DATASETS
    from embtie.data.parallel_corpora import MT_DATASETS, MT_TOKENIZED

    files = [FLICKR8K_TEST_CAPTIONS, *(f for d in LM_DATASETS.values() for f in d.values())]
    for table in (MT_DATASETS, MT_TOKENIZED):
        files += [f for d in table.values() for split in d.values() for f in split.values()]
    for f in files:
        found = catalogue.entry_of(f.relpath)
        assert found is not None, f.relpath
        assert found[1].sha256 == f.sha256, f.relpath


def test_require_is_silent_when_the_files_are_here():
    from embtie.data.lm_corpora import LM_DATASETS

    require([LM_DATASETS["ptb"]["valid"]], "ptb", "valid", "")
