"""`embtie compare` on captioning runs (Shalev et al., Table 1): per-image BLEU statistics that add up to the
corpus BLEU-4, word incidences that give the vocabulary usage, paired tests of BLEU-4 and VU against
tied, and the report's captioning table and example gallery (images inlined in the HTML page)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from captioning_data import caption_cfg, write_yaml
from embtie import cli, stats
from embtie.evaluation import vocab_usage

pytest.importorskip("pycocoevalcap")


def word_incidence(captions: list[str], words: list[str]) -> np.ndarray:
    """(N, W) word incidence of whitespace-tokenized captions, as the captioning diagnostics compute it."""
    return vocab_usage.word_incidence([c.split() for c in captions], words)


def test_multi_reference_bleu_stats_match_the_coco_bleu_scorer():
    from pycocoevalcap.bleu.bleu import Bleu

    hyps = ["a dog runs on the grass", "two men play a game of ball", "a red car on the road", "a child"]
    refs = [["a dog runs on the grass", "a brown dog running"], ["two men playing football", "men play a game"],
            ["a red car on a road", "the car is red", "a red car parked"], ["a small child smiles"]]  # fmt: skip
    st = stats.multi_reference_bleu_stats(hyps, refs)
    assert st.shape == (4, 10)
    # hypothesis lengths and the closest reference lengths (ties go to the shorter one)
    assert st[:, 0].tolist() == [6, 7, 6, 2] and st[:, 1].tolist() == [6, 4, 6, 4]
    got = float(stats.bleu_from_stats(st.sum(0), smooth="none"))
    coco, _ = Bleu(4).compute_score({i: r for i, r in enumerate(refs)}, {i: [h] for i, h in enumerate(hyps)})
    assert got == pytest.approx(100 * coco[3], abs=0.01)
    with pytest.raises(ValueError, match="at least one reference"):
        stats.multi_reference_bleu_stats(["a"], [[]])


def test_vocab_usage_bootstrap_counts_distinct_words_of_the_resampled_units():
    words = ["<pad>", "<unk>", "a", "dog", "cat", "red", "car", "man", "runs"]
    base = word_incidence(["a dog", "a dog runs", "a <unk> car", "a man"] * 10, words)
    assert base[:4].tolist()[2] == [0, 0, 1, 0, 0, 0, 1, 0, 0]  # <unk> is never a used word
    richer = word_incidence(["a dog", "a cat runs", "a red car", "a man"] * 10, words)
    t = stats.vocab_usage_bootstrap(richer, base, n_samples=200)
    assert t["system"] == 7 and t["baseline"] == 5 and t["delta"] == 2
    assert t["delta_ci"][0] > 0 and t["p_value"] < 0.05
    same = stats.vocab_usage_bootstrap(base, base, n_samples=50)
    assert same["delta"] == 0 and same["p_value"] == 1.0


def test_vocab_usage_interval_is_bias_corrected_and_holds_the_observed_delta():
    # 200 images; the baseline says the same 3 words everywhere, the system adds one word of its own per
    # image: VU 203 vs 3, delta 200. A resample with replacement holds ~63% of the images, so the plain
    # percentile interval of resampled deltas sits near 126 and excludes 200; the corrected one holds it.
    n = 200
    base = np.zeros((n, 3 + n))
    base[:, :3] = 1
    richer = base.copy()
    richer[np.arange(n), 3 + np.arange(n)] = 1
    plain = stats.paired_bootstrap(richer, base, stats.distinct_used, n_samples=300)
    assert plain["delta"] == 200 and plain["delta_ci"][1] < 150
    t = stats.vocab_usage_bootstrap(richer, base, n_samples=300)
    lo, hi = t["delta_ci"]
    assert t["delta"] == 200 and lo < 200 < hi and hi - lo == pytest.approx(plain["delta_ci"][1] - plain["delta_ci"][0])


def test_compare_captioning_scores_tests_and_example_gallery(flickr, tmp_path, monkeypatch):
    # on a machine without Java (the diagnostics then leave METEOR out): its JVM, started once per run, was most
    # of this test's time. METEOR with Java is scored by `embtie eval` in tests/tasks/test_captioning_task.py
    # (test_tiny_run_trains_scores_bleu_evaluates_and_captions_files) and tests/data/test_mscoco_captioning.py
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if cmd == "java" else which(cmd, *a, **k))
    raw = caption_cfg(flickr, "show-tell")
    raw["data"]["image_dir"] = str(flickr / "images")
    raw["train"].update(max_steps=15, checkpoint_every=0)
    preset = write_yaml(tmp_path / "tiny-cap.yaml", raw)
    out = tmp_path / "cmp"
    argv = ["compare", preset, "--strategies", "tied,untied", "--seeds", "2", "--out", str(out), "--no-progress"]
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    diags = {(d["strategy"], d["seed"]): d for d in res["diagnostics"]}
    for (name, seed), d in diags.items():
        cap = d["captioning"]
        arrays = np.load(out / "runs" / name / f"seed{seed}" / "analysis" / "arrays.npz")
        hyps = cap["examples"]["hyps"]
        assert len(hyps) == cap["images"] == 3 and cap["beam"] == 3
        assert cap["scores"].get("meteor") is None and cap["scores"]["cider"] >= 0  # no Java: no METEOR
        # the per-image statistics add up to the corpus BLEU-4 that the COCO scorer gave
        assert float(stats.bleu_from_stats(arrays["bleu_stats"].sum(0), smooth="none")) == pytest.approx(
            cap["scores"]["bleu4"], abs=0.05
        )
        # the incidences give the vocabulary usage
        inc = arrays["word_incidence"]
        assert int(inc.any(0).sum()) == cap["vocab_usage"]["vu"]
        assert inc.sum(1).tolist() == [len(set(h.split()) - {"<unk>"}) for h in hyps]
    rows = {(r["strategy"], r["seed"]): r for r in res["rows"]}
    assert rows[("tied", 0)]["bleu"] == diags[("tied", 0)]["captioning"]["scores"]["bleu4"]
    vu = {n: np.mean([rows[(n, s)]["vu"] for s in (0, 1)]) for n in ("tied", "untied")}
    t = res["bootstrap"]["vu"]["untied"]
    assert t["delta"] == pytest.approx(vu["untied"] - vu["tied"]) and t["n_seeds"] == 2
    b = res["bootstrap"]["bleu"]["untied"]
    bleu = {n: np.mean([rows[(n, s)]["bleu"] for s in (0, 1)]) for n in ("tied", "untied")}
    assert b["delta"] == pytest.approx(bleu["untied"] - bleu["tied"], abs=0.1)
    md = (out / "report.md").read_text()
    assert "Captioning: COCO scores and vocabulary usage" in md and "vu.png" in md and "bleu4.png" in md
    tied_vu = np.mean([rows[("tied", s)]["vu"] for s in (0, 1)])
    assert f"Baseline `tied`: BLEU-4 {np.mean([rows[('tied', s)]['bleu'] for s in (0, 1)]):.2f}" in md
    assert f"Vocabulary usage: `tied`'s outputs use {tied_vu:.0f} distinct words" in md
    # the summary's VU sentence: the mean per-seed percent difference (the VU margin is relative)
    pct = np.mean([100 * (rows[("untied", s)]["vu"] / rows[("tied", s)]["vu"] - 1) for s in (0, 1)])
    assert f"{pct:+.1f}% distinct words" in md
    first = diags[("tied", 0)]["captioning"]["examples"]
    assert f"**{first['names'][0]}**" in md and f"tied: {first['hyps'][0]}" in md
    page = (out / "report.html").read_text()
    assert page.count('src="data:image/jpeg;base64,') == 3  # every example image of the 3 valid images inlined
