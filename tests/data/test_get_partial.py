"""`embtie data get` from a partial mirror keeps the splits that arrived and says which are missing."""

from __future__ import annotations

from conftest import SHARED, serve_shared
from embtie.cli import main
from embtie.data import catalogue


def test_a_missing_split_keeps_the_others_and_names_the_get_that_brings_it(sandbox, server, capsys):
    serve_shared(server, "ptb", ("train", "valid"))  # the mirror lacks the test file
    code = main(["data", "get", "ptb"])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "ptb: split test could not be fetched (" in err and "kept what arrived (2 file(s)" in err
    assert "`embtie data get ptb --split test`" in err
    for e in catalogue.dataset("ptb").entries_of(["train", "valid"]):
        assert (sandbox / e.relpath).read_bytes() == (SHARED / e.relpath).read_bytes()
    assert not any((sandbox / e.relpath).exists() for e in catalogue.dataset("ptb").entries_of(["test"]))
