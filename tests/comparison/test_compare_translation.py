"""`embtie compare` on a tiny translation config: BLEU per sentence, the paired bootstrap against tied,
vocabulary usage, and the translation section of the report."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml
from sacrebleu.metrics import BLEU

from embtie import cli
from translation_configs import TINY


@pytest.mark.slow
def test_compare_translation_report(tmp_path):
    raw = copy.deepcopy(TINY)
    raw["sharing"] = {"name": "tied", "options": {}}
    raw["train"].update(max_steps=12, checkpoint_every=0, eval_batches=1)
    raw["data"]["beam"] = 1
    preset = tmp_path / "tiny-mt.yaml"
    preset.write_text(yaml.safe_dump(raw), encoding="utf-8")
    out = tmp_path / "cmp"
    argv = ["compare", str(preset), "--strategies", "tied,fixed", "--seeds", "1", "--out", str(out), "--no-progress"]
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    diag = {d["strategy"]: d for d in res["diagnostics"]}
    for name in ("tied", "fixed"):
        mt = diag[name]["translation"]
        assert 0 <= mt["scores"]["bleu"] <= 100 and mt["vocab_usage"]["vu"] >= 1
        assert 0 <= mt["unk_share"] <= 1
        # the per-sentence statistics add up to the corpus BLEU that the task reported
        arrays = np.load(out / "runs" / name / "seed0" / "analysis" / "arrays.npz")
        st = arrays["bleu_stats"]
        assert st.shape[0] == 1014
        assert BLEU()._compute_score_from_stats([round(v) for v in st.sum(0)]).score == pytest.approx(
            mt["scores"]["bleu"]
        )
        # one incidence row per sentence; its used columns are the distinct training words of the outputs
        inc = arrays["word_incidence"]
        assert inc.shape[0] == 1014 and 1 <= int((inc.sum(0) > 0).sum()) <= mt["vocab_usage"]["vu"]
    t = res["bootstrap"]["bleu"]["fixed"]
    assert t["delta"] == pytest.approx(
        diag["fixed"]["translation"]["scores"]["bleu"] - diag["tied"]["translation"]["scores"]["bleu"]
    )
    vu = {n: int((np.load(out / "runs" / n / "seed0" / "analysis" / "arrays.npz")["word_incidence"].sum(0) > 0).sum())
          for n in ("tied", "fixed")}  # fmt: skip
    assert res["bootstrap"]["vu"]["fixed"]["delta"] == vu["fixed"] - vu["tied"]
    md = (out / "report.md").read_text()
    assert "Translation: BLEU and vocabulary usage" in md and "bleu.png" in md
    assert "Δ VU vs tied" in md and "`<unk>` share" in md and "detokenized, cased" in md
    # Liu et al.'s score (multi-bleu.perl on tokenized text) has its own column, from the same runs
    assert "tok-BLEU: mean ± std" in md
    for name in ("tied", "fixed"):
        tok = diag[name]["translation"]["scores"]["bleu_tok"]
        assert f"{tok:.2f} (1 seed)" in md
