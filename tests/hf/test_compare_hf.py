"""Hugging Face causal LMs as models of the lm task (``model.name=hf``): `embtie compare` gives an HF GPT-2,
an HF Llama and a pretrained local checkpoint paired seeds, verdicts and the report; the checkpoint's start
under each strategy (keep / re-tie / untie / re-parametrise) and its step-0 loss; resume, a Slurm launch and
the stop on a non-finite step, as for gpt."""

from __future__ import annotations

import json
import math

import pytest
import torch

pytest.importorskip("transformers")

import transformers

from embtie import cli, tasks
from embtie.config import load_config
from embtie.errors import ConfigError, DataError
from hf_checkpoint import make_checkpoint
from tiny_runs import overridden

GPT2 = {"model_type": "gpt2", "n_embd": 16, "n_layer": 1, "n_head": 2, "n_positions": 16,
        "resid_pdrop": 0.0, "embd_pdrop": 0.0, "attn_pdrop": 0.0}  # fmt: skip
LLAMA = {"model_type": "llama", "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
         "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 16}  # fmt: skip
SMALL = ["data.bptt=16", "data.batch_size=4", "data.eval_batch_size=8", "data.train_tokens=4000",
         "data.valid_tokens=512", "train.max_steps=6", "train.warmup_steps=0", "train.eval_every=3",
         "train.log_every=2", "train.checkpoint_every=0", "train.threads=1", "train.progress=false"]  # fmt: skip
PRESET = "ptb-hf-gpt2-tiny"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A tiny GPT-2 trained on WikiText-2 (tied), saved with its word-level tokenizer."""
    return make_checkpoint(tmp_path_factory.mktemp("ckpt"))


def _config_file(tmp_path, raw: dict) -> str:
    path = tmp_path / f"{raw['model_type']}.json"
    path.write_text(json.dumps(raw))
    return str(path)


def _test_file(tmp_path):
    """40 lines of PTB's validation text, as a user's test file."""
    import os
    from pathlib import Path

    lines = Path(os.environ["EMBTIE_DATA"], "ptb", "ptb.valid.txt").read_text().splitlines()[:40]
    path = tmp_path / "test.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _compare(out, model_hf: str, strategies: str, *extra: str) -> dict:
    argv = ["compare", PRESET, f"model.hf={model_hf}", *SMALL, *extra, "--strategies", strategies, "--seeds", "3",
            "--out", str(out), "--no-progress", "--analysis", "light"]  # fmt: skip
    assert cli.main(argv) == 0
    return json.loads((out / "results.json").read_text())


def _verdicts(out) -> list[str]:
    report = (out / "report.md").read_text()
    return [v for v in ("better", "worse", "equivalent", "undecided") if v in report]


@pytest.mark.parametrize("raw", [GPT2, LLAMA], ids=["gpt2", "llama"])
def test_compare_runs_an_hf_model_to_a_report_with_verdicts(tmp_path, raw):
    """GPT-2 and Llama, 2 strategies x 3 seeds; Llama also on a test file (--test)."""
    out = tmp_path / "grid"
    test = ["--test", "--test-file", str(_test_file(tmp_path))] if raw is LLAMA else []
    _compare(out, _config_file(tmp_path, raw), "tied,l2norm", *test)
    if test:  # every run evaluated on the file; the report gives test verdicts beside the validation ones
        tested = [json.loads((run / "test.json").read_text()) for run in (out / "runs").glob("*/seed*")]
        assert len(tested) == 6 and all(t["test_file"] == test[2] and 1 < t["ppl"] < 1e5 for t in tested)
        assert len({t["tokens"] for t in tested}) == 1
        assert "test perplexity, margin ±1%: " in (out / "report.md").read_text()
    rows = list((out / "results.csv").read_text().splitlines())
    assert len(rows) == 1 + 6  # header + 2 strategies x 3 seeds
    assert _verdicts(out), "the report names no verdict"
    cfg = load_config(str(out / "runs/l2norm/seed2/config.yaml"))
    assert (cfg.model.name, cfg.sharing.name, cfg.seed, cfg.model.embedding_dim) == ("hf", "l2norm", 2, 16)
    summary = json.loads((out / "runs/tied/seed0/summary.json").read_text())
    assert summary["steps"] == 6 and 1 < summary["valid_ppl"] < 1e5


def test_a_fresh_hf_model_takes_the_sharing_object_as_drawn(tmp_path):
    """E keeps the strategy's init (std dim**-0.5), not GPT-2's 0.02, and the body is the seed's own."""
    cfg = load_config(PRESET, [f"model.hf={_config_file(tmp_path, GPT2)}", *SMALL])
    task = tasks.get("lm")(cfg)
    a, b = task.build_model(), task.build_model()
    assert a.body.get_input_embeddings().sharing is a.sharing and a.body.get_output_embeddings().sharing is a.sharing
    assert abs(float(a.sharing.weight.detach().std()) - 16**-0.5) < 0.02
    for (name, p), q in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        assert torch.equal(p, q), name
    ids = torch.randint(0, 100, (2, 8))
    expected = a.body.embtie_sharing.logits(a(ids))
    torch.testing.assert_close(a.body(input_ids=ids).logits, expected)


def _model(checkpoint, strategy: str):
    cfg = load_config(PRESET, [f"model.hf={checkpoint}", f"sharing.name={strategy}", *SMALL])
    return tasks.get("lm")(cfg).build_model(), tasks.get("lm")(cfg)


def test_a_checkpoint_keeps_its_rows_under_the_tasks_vocabulary(checkpoint):
    """tied on a tied checkpoint is the checkpoint itself: each PTB word's logit is the checkpoint's logit of
    the same word; words it never saw start at the mean row."""
    model, task = _model(checkpoint, "tied")
    stock = transformers.AutoModelForCausalLM.from_pretrained(str(checkpoint)).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(checkpoint))
    table = tokenizer.get_vocab()
    words = [w for w in task.vocab.itos[:400] if w in table][:50]
    assert len(words) > 40 and 0 < model.missing_tokens < len(task.vocab)
    ours = torch.tensor([task.vocab.stoi[w] for w in words])
    theirs = torch.tensor([table[w] for w in words])
    model.eval()
    with torch.no_grad():
        got = model.sharing.logits(model(ours[None]))[0][:, ours]
        want = stock(input_ids=theirs[None]).logits[0][:, theirs]
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    unseen = next(i for i, w in enumerate(task.vocab.itos) if w not in table and w not in ("<eos>", "<unk>"))
    mean = stock.get_input_embeddings().weight.mean(0)
    torch.testing.assert_close(model.sharing.weight[unseen].detach(), mean.detach())


def test_the_starting_points_of_a_checkpoint_and_their_step0_loss(tmp_path, checkpoint):
    """compare continues the WikiText-2 checkpoint on PTB: kept tied, it starts well below ln V (a fresh
    model starts near it); l2norm re-parametrises it and starts elsewhere; untied copies the shared matrix
    into a new head, so it starts exactly where tied does."""
    out = tmp_path / "grid"
    _compare(out, str(checkpoint), "tied,l2norm")
    rows = json.loads((out / "results.json").read_text())["rows"]
    step0 = {(r["strategy"], r["seed"]): r["step0_loss"] for r in rows}
    v = len(json.loads((out / "runs/tied/seed0/vocab.json").read_text())["itos"])
    for seed in range(3):
        assert step0[("tied", seed)] < math.log(v) - 1.0
        assert abs(step0[("l2norm", seed)] - step0[("tied", seed)]) > 0.05
    assert "| step-0 loss |" in (out / "report.md").read_text() and _verdicts(out)
    tied, task = _model(checkpoint, "tied")
    untied, _ = _model(checkpoint, "untied")
    torch.testing.assert_close(untied.sharing.out_weight, untied.sharing.weight)
    assert untied.sharing.out_weight is not untied.sharing.weight
    ids = task.train_batch(0, 0, 0, 1, torch.device("cpu"))
    with torch.no_grad():
        losses = [m.sharing.loss(m.eval()(ids.inputs), ids.targets) for m in (tied, untied)]
    torch.testing.assert_close(losses[0], losses[1])


def test_an_untied_checkpoint_is_kept_or_re_tied(tmp_path):
    folder = make_checkpoint(tmp_path / "untied", steps=5, tied=False)
    stock = transformers.AutoModelForCausalLM.from_pretrained(str(folder))
    kept, task = _model(folder, "untied")
    retied, _ = _model(folder, "tied")
    ours, theirs = task.vocab.stoi["the"], transformers.AutoTokenizer.from_pretrained(str(folder)).get_vocab()["the"]
    torch.testing.assert_close(kept.sharing.out_weight[ours], stock.lm_head.weight[theirs])
    torch.testing.assert_close(retied.sharing.weight[ours], stock.get_input_embeddings().weight[theirs])
    assert retied.sharing.separate_output_weight() is None


def test_a_folder_without_tokenizer_or_config_is_one_line(tmp_path, capsys):
    folder = tmp_path / "bare"
    transformers.GPT2LMHeadModel(transformers.GPT2Config(**{k: v for k, v in GPT2.items() if k != "model_type"},
                                                         vocab_size=50)).save_pretrained(folder)  # fmt: skip
    argv = ["train", PRESET, f"model.hf={folder}", *SMALL, "--out", str(tmp_path / "run")]
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds no tokenizer" in err[0] and "tokenizer.save_pretrained" in err[0], err
    with pytest.raises(DataError, match=r"has no config\.json"):
        load_config(PRESET, [f"model.hf={tmp_path}"])
    with pytest.raises(ConfigError, match="unknown model config 'gpt3-tiny'"):
        load_config(PRESET, ["model.hf=gpt3-tiny"])
    import embtie.hf

    patched = embtie.hf.apply(transformers.AutoModelForCausalLM.from_pretrained(str(folder)), "l2norm")
    patched.save_pretrained(tmp_path / "patched")
    with pytest.raises(ConfigError, match=r"after embtie\.hf\.apply; write stock weights with embtie\.hf\.export"):
        load_config(PRESET, [f"model.hf={tmp_path / 'patched'}"])


def test_a_huge_learning_rate_stops_at_the_first_non_finite_step(tmp_path, capsys):
    argv = ["train", PRESET, f"model.hf={_config_file(tmp_path, LLAMA)}",
            *overridden(SMALL, "train.optimizer=sgd", "train.lr=100", "train.grad_clip=null", "train.max_steps=20"),
            "--out", str(tmp_path / "run")]  # fmt: skip
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not finite" in err[0] and "train.lr=100," in err[0], err
    assert not (tmp_path / "run" / "summary.json").exists()


@pytest.fixture
def fake_sbatch(tmp_path, monkeypatch):
    """sbatch (answers "Submitted batch job 99", runs nothing) and squeue (job 99 pending) on PATH."""
    pytest.importorskip("submitit")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    queue = "printf '99_0|PENDING\\n99_1|PENDING\\n'"
    for name, body in {"sbatch": "echo 'Submitted batch job 99'", "srun": "exit 0", "squeue": queue}.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")


def test_a_slurm_launch_submits_the_hf_runs(tmp_path, capsys, fake_sbatch):
    import pickle

    out = tmp_path / "grid"
    argv = ["compare", PRESET, f"model.hf={_config_file(tmp_path, GPT2)}", *SMALL, "--strategies", "tied,l2norm",
            "--seeds", "1", "--out", str(out), "--launcher", "slurm", "--no-progress"]  # fmt: skip
    assert cli.main([*argv, "--dry-run"]) == 0
    plan = capsys.readouterr().out.strip().splitlines()
    assert plan[0] == "plan: 2 runs with --launcher slurm; nothing is trained or submitted"
    assert cli.main([*argv, "--no-wait"]) == 0
    assert "submitted 2 runs to Slurm as array job 99 (2 tasks)" in capsys.readouterr().out
    assert "#SBATCH --cpus-per-task=1\n" in (out / "slurm" / "99_submission.sh").read_text()
    with open(out / "slurm" / "99_0_submitted.pkl", "rb") as f:
        job = pickle.load(f).function  # what the Slurm task runs: embtie's training of this run
    cfg = job.cfg
    assert (cfg.model.name, cfg.model.hf, cfg.sharing.name) == ("hf", str(tmp_path / "gpt2.json"), "tied")
    assert job.run_dir == out / "runs" / "tied" / "seed0"


def test_an_interrupted_hf_run_resumes_to_the_same_weights(tmp_path, monkeypatch):
    """Stopped after its step-3 checkpoint and run again, an hf run ends bitwise where an uninterrupted one
    does (AdamW moments, data position, the body's dropout stream)."""
    from safetensors.torch import load_file

    from embtie.rundir.checkpoints import latest
    from embtie.training import objective, train

    raw = {**GPT2, "resid_pdrop": 0.1, "embd_pdrop": 0.1, "attn_pdrop": 0.1}
    overrides = [f"model.hf={_config_file(tmp_path, raw)}", *SMALL, "train.checkpoint_every=3", "sharing.name=untied"]
    cfg = load_config(PRESET, overrides)
    train(cfg, tmp_path / "ref")
    forward, calls = objective.Objective.forward, {"n": 0}

    def interrupted(self, batch, carry):
        calls["n"] += 1
        if calls["n"] == 5:
            raise KeyboardInterrupt
        return forward(self, batch, carry)

    with monkeypatch.context() as m:
        m.setattr(objective.Objective, "forward", interrupted)
        with pytest.raises(KeyboardInterrupt):
            train(load_config(PRESET, overrides), tmp_path / "resumed")
    assert latest(tmp_path / "resumed").name == "step-00000003"
    train(load_config(PRESET, overrides), tmp_path / "resumed")
    a = load_file(str(latest(tmp_path / "ref") / "model.safetensors"))
    b = load_file(str(latest(tmp_path / "resumed") / "model.safetensors"))
    assert a.keys() == b.keys() and any(k.startswith("body.") for k in a)
    for k in a:
        assert torch.equal(a[k], b[k]), k
