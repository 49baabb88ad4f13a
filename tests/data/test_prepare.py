"""The papers' preparations: the Moses steps, fairseq's IWSLT14 pipeline end to end against a local server
serving a small archive with the original's layout, the WMT16/WMT14 and MSCOCO pipelines on small archives,
and the shipped BPE codes reproducing fairseq's BPE'd valid split byte for byte."""

from __future__ import annotations

import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from conftest import SHARED
from embtie.cli import main
from embtie.data import catalogue
from embtie.data.prepare import bpe, iwslt14, moses, mscoco, wmt


def test_the_shipped_bpe_codes_reproduce_fairseqs_bpe_valid_byte_for_byte():
    for lang in ("de", "en"):
        tok = (SHARED / f"iwslt14/tok/valid.{lang}").read_text(encoding="utf-8").split("\n")[:-1]
        out = "".join(line + "\n" for line in bpe.apply(SHARED / "iwslt14/bpe/code", tok))
        assert out == (SHARED / f"iwslt14/bpe/valid.{lang}").read_text(encoding="utf-8")


def test_the_tokenizer_splits_the_final_period_of_the_last_word_as_moses_does():
    assert moses.tokenize(["aber dies sind alle Straßen in den U.S.A."], "de") == [
        "aber dies sind alle Straßen in den U.S.A ."
    ]
    assert moses.tokenize(["we could do a, or we could do B.", "  ", 'He said "no".'], "en") == [
        "we could do a , or we could do B .", "  ", "He said &quot; no &quot; ."
    ]  # fmt: skip
    assert moses.tokenize(["a well-known fact"], "en", aggressive=True) == ["a well @-@ known fact"]


def test_clean_corpus_keeps_what_clean_corpus_n_keeps():
    src = ["a b c", "", "a | b", "x " * 6, "one two three four", "w"]
    tgt = ["d e f", "g", "c  d", "y", "five six", "  z  "]
    assert moses.clean_corpus(src, tgt, 1, 5, ratio=1.5) == (["a b c", "a b", "w"], ["d e f", "c d", "z"])


def test_sgm_and_xml_segments():
    xml = ['<doc docid="1">', '<seg id="1"> Hallo Welt’s </seg>', "<title>x</title>", '<seg id="2">Zwei</seg>']
    assert moses.seg_text(xml) == ["Hallo Welt's", "Zwei"]
    assert moses.input_from_sgm(['<seg id="1">  a   b </seg>', '<seg id="2">', "c d</seg>"]) == ["a b", "c d"]


# ---------------------------------------------------------------------------- IWSLT14 end to end

DE = ["Das ist ein Haus.", "Wir sehen den Hund im Park.", "Ich habe heute keine Zeit, leider.",
      "Sie sagte: \"Das ist gut.\"", "Die U.S.A. sind groß."]  # fmt: skip
EN = ["This is a house.", "We see the dog in the park.", "I have no time today, sadly.",
      "She said: \"This is good.\"", "The U.S.A. are big."]  # fmt: skip


def _train_tags(lang: str) -> str:
    """A train.tags file as WIT3 lays it out: a talk's header tags, then one sentence a line."""
    lines = []
    for talk in range(3):
        lines += [f"<url>http://www.ted.com/talks/{talk}.html</url>", "<keywords>talks, science</keywords>",
                  f"<speaker>Speaker {talk}</speaker>", f"<talkid>{talk}</talkid>",
                  f"<title>Talk {talk}: A title</title>", f"<description>About talk {talk}.</description>"]  # fmt: skip
        for i in range(20):
            base = (DE if lang == "de" else EN)[i % 5]
            lines.append(f"{base} {talk} {i}")
        lines.append("Ein sehr langer Satz ohne Ende " * 40 if lang == "de" else "Short.")  # cleaned away
    return "".join(line + "\n" for line in lines)


def _xml(name: str, lang: str) -> str:
    segs = "".join(f'<seg id="{i}"> {(DE if lang == "de" else EN)[i % 5]} ’{name[-4:]}’ </seg>\n' for i in range(3))
    return f'<mteval>\n<srcset setid="{name}" srclang="{lang}">\n<doc docid="1">\n{segs}</doc>\n</srcset>\n</mteval>\n'


def iwslt_archive() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        files = {f"de-en/train.tags.de-en.{lang}": _train_tags(lang) for lang in ("de", "en")}
        files.update({f"de-en/{n}.de-en.{lang}.xml": _xml(n, lang) for n in iwslt14.TEST_SETS for lang in ("de", "en")})
        files["de-en/README"] = "IWSLT 2014\n"
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def unpinned(name: str) -> catalogue.Dataset:
    """The dataset with its pins set aside (a small archive of the original's layout has other bytes)."""
    d = catalogue.dataset(name)
    entries = tuple(catalogue.DataEntry(e.relpath, e.splits, None, catalogue.Pin.UNVERIFIED, None, e.derive)
                    for e in d.entries)  # fmt: skip
    archives = tuple(catalogue.Source(a.url, name=a.name) for a in d.archives)
    return catalogue.Dataset(d.name, d.title, d.licence, d.citation, entries, archives, d.prepare)


def test_the_iwslt14_pipeline_runs_end_to_end_from_a_served_archive(sandbox, server, capsys, monkeypatch):
    d = catalogue.dataset("iwslt14")
    server.serve(d.archives[0].url, iwslt_archive())
    monkeypatch.setitem(catalogue.DATASETS, "iwslt14", unpinned("iwslt14"))
    assert main(["data", "get", "iwslt14"]) == 0, capsys.readouterr().err
    tok = {f: (sandbox / "iwslt14/tok" / f).read_text(encoding="utf-8").split("\n")[:-1]
           for f in ("train.de", "train.en", "valid.de", "valid.en", "test.de", "test.en")}  # fmt: skip
    # 60 sentence pairs + the talk titles, descriptions and speakers survive; the 3 over-long pairs do not
    kept = 3 * (20 + 3)
    assert len(tok["train.de"]) + len(tok["valid.de"]) == kept and len(tok["valid.de"]) == kept // 23
    # each talk: its speaker line, title and description (tags stripped), 20 sentences: the 23rd is held out
    assert tok["valid.de"] == [f"die u.s.a. sind groß . {talk} 19" for talk in range(3)]
    assert tok["train.en"][:3] == ["&lt; speaker &gt; speaker 0 &lt; / speaker &gt;", "talk 0 : a title",
                                   "about talk 0 ."]  # fmt: skip
    assert "die u.s.a. sind groß . 0 4" in tok["train.de"]  # the final-period rule only at the end of a line
    assert all(line == line.lower() for line in tok["train.de"] + tok["test.en"])
    # ’ became ' before tokenizing; the sets in the script's order: dev2010, TEDX dev2012, tst2010-2012
    assert len(tok["test.de"]) == 5 * 3 and tok["test.en"][0] == "this is a house . &apos; 2010&apos;"
    assert tok["test.de"][3] == "das ist ein haus . &apos; 2012 &apos;"
    code = (sandbox / "iwslt14/bpe/code").read_text(encoding="utf-8").split("\n")
    assert code[0] == "#version: 0.2" and len(code) > 10
    for f, lines in tok.items():
        merged = (sandbox / "iwslt14/bpe" / f).read_text(encoding="utf-8").replace("@@ ", "").split("\n")[:-1]
        assert merged == lines, f


def test_iwslt14_output_that_differs_from_fairseqs_is_refused(sandbox, server, capsys, monkeypatch):
    """The real outputs are pinned (valid/code: ../shared/data; test: fairseq's commit; train: git blob ids):
    a preparation that gives other bytes installs nothing."""
    d = catalogue.dataset("iwslt14")
    server.serve(d.archives[0].url, iwslt_archive())
    archive = catalogue.Source(d.archives[0].url, name="de-en.tgz")
    archive_unpinned = catalogue.Dataset(d.name, d.title, d.licence, d.citation, d.entries, (archive,), d.prepare)
    monkeypatch.setitem(catalogue.DATASETS, "iwslt14", archive_unpinned)
    assert main(["data", "get", "iwslt14"]) == 2
    err = capsys.readouterr().err
    assert "differs from the pinned file" in err and err.count("\n") == 1
    assert [p.name for p in sandbox.iterdir()] == ["wordsim"]  # nothing but what the sandbox held


def test_a_corrupted_archive_is_one_line_and_a_second_get_starts_cleanly(sandbox, server, capsys, monkeypatch):
    d = catalogue.dataset("iwslt14")
    good = iwslt_archive()
    server.serve(d.archives[0].url, good[: len(good) // 2])
    monkeypatch.setitem(catalogue.DATASETS, "iwslt14", unpinned("iwslt14"))
    assert main(["data", "get", "iwslt14"]) == 2
    err = capsys.readouterr().err
    assert "is damaged or incomplete" in err and "delete it" in err and err.count("\n") == 1
    assert [p.name for p in sandbox.iterdir()] == ["wordsim"]
    # as told: delete the archive; the server now has the whole file
    from embtie.data.download import cache_path

    cache_path(catalogue.DATASETS["iwslt14"].archives[0], "iwslt14").unlink()
    server.serve(d.archives[0].url, good)
    assert main(["data", "get", "iwslt14"]) == 0
    assert (sandbox / "iwslt14/bpe/test.en").is_file()


def test_the_archive_is_checked_by_the_git_blob_id_fairseq_records(sandbox, server, capsys):
    d = catalogue.dataset("iwslt14")
    server.serve(d.archives[0].url, iwslt_archive())
    assert main(["data", "get", "iwslt14"]) == 2
    err = capsys.readouterr().err
    assert "git blob id" in err and "aa8c3f40f8836f1d43701448f94fe7e230082b4c" in err


# ---------------------------------------------------------------------------- WMT and MSCOCO on small archives


def _tar(path: Path, files: dict[str, str]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for name, text in files.items():
            data = text.encode("utf-8")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _corpus(lang: str, n: int, tag: str) -> str:
    return "".join(f"{(DE if lang == 'de' else EN)[i % 5]} {tag}{i}\n" for i in range(n))


def _sgm(lang: str) -> str:
    return "".join(f'<seg id="{i}">{(DE if lang == "de" else EN)[i]}</seg>\n' for i in range(4))


def test_the_wmt16_pipeline_on_small_archives(tmp_path):
    a = [
        _tar(tmp_path / "ep.tgz", {f"europarl-v7.de-en.{x}": _corpus(x, 30, "ep") for x in ("de", "en")}),
        _tar(tmp_path / "cc.tgz", {f"commoncrawl.de-en.{x}": _corpus(x, 30, "cc") for x in ("de", "en")}),
        _tar(tmp_path / "nc.tgz", {f"training-parallel-nc-v11/news-commentary-v11.de-en.{x}": _corpus(x, 30, "nc")
                                   for x in ("de", "en")}),
        _tar(tmp_path / "dev.tgz", {**{f"dev/newstest2013.{x}": _corpus(x, 5, "v") for x in ("de", "en")},
                                    "dev/newstest2014-deen-src.de.sgm": _sgm("de"),
                                    "dev/newstest2014-deen-ref.en.sgm": _sgm("en")}),
        _tar(tmp_path / "test.tgz", {"test/newstest2016-deen-src.de.sgm": _sgm("de")}),
    ]  # fmt: skip
    wmt.prepare_wmt16(a, tmp_path / "out", lambda s: None)
    out = tmp_path / "out" / "wmt16"
    lines = {p.relative_to(out).as_posix(): p.read_text(encoding="utf-8").split("\n")[:-1] for p in out.rglob("*.*")}
    assert len(lines["tok/train.en"]) == len(lines["tok/train.de"]) == 90
    # Moses: a period before a lowercase word stays
    assert lines["tok/valid.en"][0] == "This is a house. v0" and len(lines["tok/test.de"]) == 4
    assert lines["tok/test.en"][3] == "She said : &quot; This is good . &quot;"
    for split in ("train", "valid", "test"):
        assert [x.replace("@@ ", "") for x in lines[f"bpe/{split}.de"]] == lines[f"tok/{split}.de"]


def test_the_wmt14_pipeline_on_small_archives(tmp_path):
    a = [
        _tar(tmp_path / "ep.tgz", {f"training/europarl-v7.de-en.{x}": _corpus(x, 150, "ep") for x in ("de", "en")}),
        _tar(tmp_path / "cc.tgz", {f"commoncrawl.de-en.{x}": _corpus(x, 40, "cc") for x in ("de", "en")}),
        _tar(tmp_path / "nc.tgz", {f"training/news-commentary-v9.de-en.{x}": _corpus(x, 20, "nc")
                                   for x in ("de", "en")}),
        _tar(tmp_path / "dev.tgz", {"dev/newstest2013.en": "x\n"}),
        _tar(tmp_path / "test.tgz", {"test-full/newstest2014-deen-src.en.sgm": _sgm("en"),
                                     "test-full/newstest2014-deen-ref.de.sgm": _sgm("de")}),
    ]  # fmt: skip
    wmt.prepare_wmt14(a, tmp_path / "out", lambda s: None)
    out = tmp_path / "out" / "wmt14"
    read = lambda f: (out / f).read_text(encoding="utf-8").split("\n")[:-1]  # noqa: E731
    assert len(read("tok/valid.en")) == 2 and len(read("tok/train.en")) == 208  # every 100th of 210
    assert read("tok/test.de")[3] == "Sie sagte : &quot; Das ist gut . &quot;"
    for split in ("train", "valid", "test"):
        assert [x.replace("@@ ", "") for x in read(f"bpe/{split}.en")] == read(f"tok/{split}.en")


def test_the_mscoco_karpathy_split(tmp_path):
    images = [{"filename": f"COCO_{i}.jpg", "split": s, "sentences": [{"raw": f"A  cat\t{i}."}, {"raw": "Two."}]}
              for i, s in enumerate(["train", "restval", "val", "test", "train"])]  # fmt: skip
    z = tmp_path / "caption_datasets.zip"
    with zipfile.ZipFile(z, "w") as f:
        f.writestr("dataset_coco.json", json.dumps({"images": images}))
    mscoco.prepare([z], tmp_path / "out", lambda s: None)
    out = tmp_path / "out" / "mscoco"
    assert (out / "images.train.txt").read_text() == "COCO_0.jpg\nCOCO_1.jpg\nCOCO_4.jpg\n"
    assert (out / "captions.valid.txt").read_text() == "COCO_2.jpg#0\tA cat 2.\nCOCO_2.jpg#1\tTwo.\n"
    from embtie.data.caption_corpus import read_captions

    assert read_captions(out / "captions.test.txt") == {"COCO_3.jpg": ["a cat 3", "two"]}


@pytest.mark.parametrize("name", ["wmt16", "wmt14", "mscoco"])
def test_the_unpinned_datasets_say_so(name, capsys):
    assert main(["data", "list"]) == 0
    d = catalogue.dataset(name)
    assert all(e.pin is catalogue.Pin.UNVERIFIED for e in d.entries) and d.prepare == name
