"""A transformers Marian as a model of the translation task (``model.name=hf-seq2seq``) through embtie's one path:
a short run on a Multi30k slice learns, its checkpoint reloads to the same validation loss, beam search decodes
and sacreBLEU scores it; two strategies draw the same body from the seed; and ``embtie compare`` runs tied vs
untied to a report."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import torch
from sacrebleu.metrics import BLEU

pytest.importorskip("transformers")

from embtie import cli, tasks
from embtie.config import config_from_dict, load_config
from embtie.rundir.loading import load_for_decoding
from embtie.training import train
from translation_configs import TINY

MARIAN = {"model_type": "marian", "d_model": 32, "encoder_layers": 1, "decoder_layers": 1,
          "encoder_attention_heads": 2, "decoder_attention_heads": 2, "encoder_ffn_dim": 64, "decoder_ffn_dim": 64,
          "max_position_embeddings": 256, "scale_embedding": True, "dropout": 0.0}  # fmt: skip
"""a 32-wide 1 + 1-layer Marian: TINY's transformer, as a transformers model."""


def _marian(folder: Path) -> str:
    path = folder / "marian.json"
    path.write_text(json.dumps(MARIAN))
    return str(path)


def test_a_short_run_learns_reloads_and_decodes_with_beam_search(tmp_path):
    raw = copy.deepcopy(TINY)
    raw["model"] = {"name": "hf-seq2seq", "hf": _marian(tmp_path)}
    raw["data"]["valid_pairs"] = 40
    raw["train"].update(max_steps=30, checkpoint_every=0)
    run = tmp_path / "run"
    summary = train(config_from_dict(raw), run)
    log = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    losses = [r["loss"] for r in log if r["split"] == "train"]
    assert losses[-1] < losses[0] - 1.0  # it learns (about 6.0 -> 4.7 here)

    r = load_for_decoding(run, None)
    assert type(r.model).__name__ == "HFSeq2Seq" and r.model.three_way_tied
    res = r.task.evaluate_translation(r.model, "valid", beam=2)
    assert res["loss"] == pytest.approx(summary["valid_loss"], rel=1e-5)  # the checkpoint is the trained model
    refs = r.task.texts("valid").ref
    assert len(res["hyps"]) == len(refs) == 40 and any(res["hyps"])
    assert res["bleu"] == pytest.approx(BLEU().corpus_score(res["hyps"], [refs]).score)
    # a sentence decoded alone is decoded as in its padded batch (the source padding is masked)
    assert r.task.translate(r.model, r.task.texts("valid").src[3:4], beam=2) == res["hyps"][3:4]


def test_two_strategies_start_from_the_same_body(tmp_path):
    """The body comes from the seed's "body" stream, the tables from "sharing": tied and untied runs of one seed
    differ only in their sharing objects."""
    over = [f"model.hf={_marian(tmp_path)}", "data.vocab_size=200", "data.train_pairs=600"]
    built = []
    for strategy in ("tied", "untied"):
        cfg = load_config("multi30k-hf-marian-tiny", [*over, f"sharing.name={strategy}"])
        built.append(tasks.get(cfg.task)(cfg).build_model())
    bodies = [{k: v for k, v in m.body.state_dict().items() if "embtie_sharing" not in k} for m in built]
    assert bodies[0].keys() == bodies[1].keys() and len(bodies[0]) > 10
    assert all(torch.equal(bodies[0][k], bodies[1][k]) for k in bodies[0])
    assert torch.equal(built[0].sharing.weight, built[1].sharing.weight)  # E: the same draw of the "sharing" stream
    assert built[1].sharing.separate_output_weight() is not None and built[0].sharing.separate_output_weight() is None


def test_compare_tied_and_untied_hf_marian_to_a_report(tmp_path):
    out = tmp_path / "cmp"
    argv = ["compare", "multi30k-hf-marian-tiny", f"model.hf={_marian(tmp_path)}", "data.vocab_size=200",
            "data.train_pairs=600", "data.valid_pairs=50", "data.max_tokens=1200", "data.beam=2", "train.max_steps=12",
            "train.epochs=null", "train.warmup_steps=5", "train.eval_batches=1", "--strategies", "tied,untied",
            "--seeds", "1", "--out", str(out), "--no-progress"]  # fmt: skip
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    rows = {r["strategy"]: r for r in res["rows"]}
    assert rows["untied"]["params_learned"] - rows["tied"]["params_learned"] == 200 * 32  # the head O (V x d)
    for d in res["diagnostics"]:
        scores = d["translation"]["scores"]
        assert scores["sentences"] == 50 and 0 <= scores["bleu"] <= 100
    md = (out / "report.md").read_text()
    assert "Translation: BLEU and vocabulary usage" in md
