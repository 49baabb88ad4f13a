"""MSCOCO captioning end to end on a tiny fixture of MSCOCO's layout: Karpathy's ``dataset_coco.json`` (in a
zip, served on 127.0.0.1) through the real ``embtie data get mscoco``, generated images in ``train2014/`` and
``val2014/``, ``embtie prepare-captions --dataset mscoco`` (resumable), a few training steps of the
``mscoco-show-attend-tell`` preset and ``embtie eval RUN --split test``; missing data and images are one line."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

from embtie.cli import main
from embtie.data import catalogue
from embtie.data.image_features import image_file

pytest.importorskip("PIL.Image")
pytest.importorskip("pycocoevalcap")

# importing captioning_data registers the "tiny-test" encoder
from captioning_data import draw_image

# Karpathy's split: train and restval go to embtie's train; val -> valid; test -> test
KARPATHY = ["train", "train", "train", "train", "restval", "restval", "val", "val", "test", "test"]
PAIRS = [("red", "green"), ("green", "blue"), ("blue", "white"), ("white", "red"), ("red", "blue"),
         ("green", "white"), ("blue", "red"), ("white", "green"), ("red", "white"), ("green", "red")]  # fmt: skip
OVERRIDES = ["data.encoder=tiny-test", "data.min_count=2", "data.max_len=8", "data.batch_size=6", "data.beam=2",
             "data.eval_batch=8", "model.dim=16", "model.hidden=16", "model.attn_dim=8", "model.feature_dim=8",
             "model.dropout=0", "train.lr=0.02", "train.epochs=null", "train.max_steps=6", "train.device=cpu",
             "train.progress=false", "train.threads=1"]  # fmt: skip


def _name(i: int, split: str) -> str:
    folder = "train2014" if split == "train" else "val2014"  # restval, val and test are COCO's val2014 images
    return f"COCO_{folder}_{i:012d}.jpg"


def karpathy_zip() -> bytes:
    """``caption_datasets.zip`` with a ``dataset_coco.json`` of Karpathy's layout (10 images, 3 sentences each)."""
    images = [
        {"filepath": _name(i, s).split("_")[1], "filename": _name(i, s), "split": s, "cocoid": i,
         "sentences": [{"raw": f"A {a} sky over {b} ground.", "tokens": []}, {"raw": f"{a.title()} above {b}."},
                       {"raw": f"a {a} and {b} image"}]}
        for i, (s, (a, b)) in enumerate(zip(KARPATHY, PAIRS))
    ]  # fmt: skip
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("dataset_coco.json", json.dumps({"images": images, "dataset": "coco"}))
    return buf.getvalue()


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err


def test_mscoco_from_data_get_to_a_test_evaluation(sandbox, server, tmp_path, capsys, monkeypatch):
    server.serve(catalogue.dataset("mscoco").archives[0].url, karpathy_zip())
    run = tmp_path / "run"
    train = ["train", "mscoco-show-attend-tell", *OVERRIDES, "--out", str(run)]
    assert main(train) == 2  # before `get`: the captions and lists are missing
    assert "split 'train' of mscoco" in (err := _one_line(capsys)) and "`embtie data get mscoco`" in err

    assert main(["data", "get", "mscoco"]) == 0, capsys.readouterr().err
    assert (sandbox / "mscoco/images.train.txt").read_text().count("\n") == 6  # train + restval

    images = tmp_path / "cache" / "mscoco" / "images"  # the default folder ($EMBTIE_CACHE/mscoco/images)
    expected = images / "train2014" / _name(0, "train")
    assert main(["prepare-captions", "--dataset", "mscoco", "--encoder", "tiny-test"]) == 2
    err = _one_line(capsys)
    assert f"no file {expected};" in err and "train2014.zip" in err and "data.image_dir" in err
    assert main(train) == 2  # the run names the image it looked for and the key that moves the folder
    err = _one_line(capsys)
    assert f"no file {expected};" in err and "data.image_dir" in err and "prepare-captions --dataset mscoco" in err

    for i, (s, (a, b)) in enumerate(zip(KARPATHY, PAIRS)):
        path = image_file(images, _name(i, s))
        path.parent.mkdir(parents=True, exist_ok=True)
        draw_image(path, a, b)
    assert image_file(images, _name(8, "test")) == images / "val2014" / _name(8, "test")
    prepare = ["prepare-captions", "--dataset", "mscoco", "--encoder", "tiny-test"]
    assert main([*prepare, "--split", "train"]) == 0
    assert "6 images in" in (out := capsys.readouterr().out) and "0 already cached, 6 added" in out
    assert main(prepare) == 0  # resumes: only the valid and test images are added
    assert "10 images in" in (out := capsys.readouterr().out) and "6 already cached, 4 added" in out
    assert (tmp_path / "cache" / "mscoco" / "features-tiny-test" / "meta.json").is_file()

    assert main(train) == 0, capsys.readouterr().err
    capsys.readouterr()
    assert main(["eval", str(run), "--split", "test"]) == 0, capsys.readouterr().err
    assert "test: BLEU-1" in capsys.readouterr().out
    saved = json.loads((run / "eval.json").read_text())["test"]
    assert saved["images"] == 2 and saved["beam"] == 2 and 0 <= saved["bleu4"] <= 100
    hyps = (run / "hyps.test.txt").read_text().splitlines()
    assert [h.split("\t")[0] for h in hyps] == [_name(8, "test"), _name(9, "test")]


def test_an_image_in_the_folder_itself_is_found_too(tmp_path: Path):
    name = _name(3, "train")
    assert image_file(tmp_path, name) == tmp_path / "train2014" / name  # expected where COCO's zip puts it
    draw_image(tmp_path / name, "red", "blue")
    assert image_file(tmp_path, name) == tmp_path / name
    assert image_file(tmp_path, "1000_abc.jpg") == tmp_path / "1000_abc.jpg"
