"""Translation end to end on a tiny config: train a few steps -> average -> translate -> BLEU; and
checkpoint averaging that keeps three-way tied embeddings one tensor."""

import json

import pytest
import torch
from safetensors.torch import save_model

from embtie import sharing
from embtie.cli import main
from embtie.config import config_from_dict
from embtie.models.transformer_mt import TransformerMT, TransformerMTConfig
from embtie.rundir import checkpoints
from embtie.rundir.averaging import average_checkpoints
from embtie.rundir.loading import load_for_decoding
from embtie.training import train
from translation_configs import TINY


def tiny_transformer(seed: int) -> TransformerMT:
    torch.manual_seed(seed)
    s = sharing.build("tied", vocab_size=30, dim=8)
    return TransformerMT(TransformerMTConfig(dim=8, enc_layers=1, dec_layers=1, heads=2, ffn_dim=16), s)


def test_averaging_keeps_tied_embeddings_tied(tmp_path):
    models = [tiny_transformer(seed) for seed in range(3)]
    for step, m in enumerate(models, start=1):
        d = tmp_path / checkpoints.CKPT / f"step-{step:08d}"
        d.mkdir(parents=True)
        save_model(m, str(d / "model.safetensors"))
        (d / "state.json").write_text("{}", encoding="utf-8")
    out = average_checkpoints(tmp_path, last=2)
    fresh = tiny_transformer(7)
    checkpoints.load_weights(fresh, out)
    assert fresh.src_embed is fresh.sharing and fresh.src_embed.weight is fresh.sharing.weight
    mean = (models[1].sharing.weight + models[2].sharing.weight) / 2
    assert torch.allclose(fresh.sharing.weight, mean)
    lin = fresh.decoder[0].ffn.fc1.weight
    assert torch.allclose(lin, (models[1].decoder[0].ffn.fc1.weight + models[2].decoder[0].ffn.fc1.weight) / 2)
    assert json.loads((out / "sources.json").read_text())["averaged"] == ["step-00000002", "step-00000003"]




def test_train_average_translate_bleu(tmp_path, capsys):
    run = tmp_path / "run"
    summary = train(config_from_dict(TINY), run)
    log = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    train_losses = [r["loss"] for r in log if r["split"] == "train"]
    assert train_losses[-1] < train_losses[0] - 1.0  # it learns
    assert summary["valid_ppl"] < 200
    assert (run / "spm.model").is_file()

    assert main(["average", str(run), "--last", "3"]) == 0
    capsys.readouterr()
    src = tmp_path / "src.de"
    ref = tmp_path / "ref.en"
    src.write_text("Ein Mann.\nZwei Hunde spielen im Schnee.\n", encoding="utf-8")
    ref.write_text("A man.\nTwo dogs play in the snow.\n", encoding="utf-8")
    assert main(["translate", str(run), "--beam", "2", "--checkpoint", "avg-last3", "--input", str(src)]) == 0
    hyps = capsys.readouterr().out.splitlines()
    assert len(hyps) == 2

    # beam 1 == greedy through the task, and the averaged model translates the same through the API
    r = load_for_decoding(run, "avg-last3")
    assert r.task.translate(r.model, ["Ein Mann."], beam=2) == hyps[:1]
    res = r.task.evaluate_translation(r.model, src_file=src, ref_file=ref, beam=2)
    assert res["hyps"] == hyps
    assert 0.0 <= res["bleu"] <= 100.0 and "nrefs:1|case:mixed" in res["bleu_signature"]
    assert res["chrf"] > 0.0

    # embtie eval on user files writes BLEU/chrF with signatures to eval.json
    args = [
        "eval",
        str(run),
        "--src-file",
        str(src),
        "--ref-file",
        str(ref),
        "--beam",
        "2",
        "--checkpoint",
        "avg-last3",
    ]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "sacreBLEU nrefs:1|case:mixed" in out
    saved = json.loads((run / "eval.json").read_text())["test@avg-last3"]
    assert saved["bleu"] == pytest.approx(res["bleu"]) and saved["checkpoint"] == "avg-last3"
    assert (run / "hyps.test@avg-last3.txt").read_text().splitlines() == hyps


def test_separate_vocabularies_tie_only_the_decoder(tmp_path):
    raw = json.loads(json.dumps(TINY))
    raw["data"].update(vocab="separate", train_pairs=300)
    raw["train"].update(max_steps=2, checkpoint_every=0, keep_checkpoints=1)
    raw["sharing"] = {"name": "tied", "options": {}}
    cfg = config_from_dict(raw)
    train(cfg, tmp_path / "sep")
    r = load_for_decoding(tmp_path / "sep")
    assert r.model.src_embed is not r.model.sharing
    assert r.model.src_embed.weight.shape[0] == len(r.task.src_sw) != 0
    assert (tmp_path / "sep" / "spm.src.model").is_file() and (tmp_path / "sep" / "spm.tgt.model").is_file()
    assert len(r.task.translate(r.model, ["Ein Hund."], beam=1)) == 1


@pytest.mark.parametrize("model", ["rnn"])
def test_rnn_trains_through_the_loop(tmp_path, model):
    raw = json.loads(json.dumps(TINY))
    raw["model"] = {"name": model, "dim": 16, "enc_hidden": 16, "dec_hidden": 24, "attn_dim": 16, "dropout": 0.0}
    raw["train"].update(max_steps=6, checkpoint_every=0, keep_checkpoints=1)
    s = train(config_from_dict(raw), tmp_path / model)
    assert s["train_loss"] < s["step0_loss"]
