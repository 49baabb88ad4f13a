"""Press & Wolf's update dynamics: the Procrustes similarity, the output-path share
probe during training (exact, does not change training, resumes), and the report section."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch

from embtie import cli, sharing
from embtie.analysis import path_share_file, procrustes
from embtie.analysis.row_updates import split_row_gradients
from embtie.config import load_config
from embtie.training import path_shares, train
from tiny_runs import TINY_GPT_BODY


# --------------------------------------------------------------------------- Procrustes
def test_rotated_copy_is_fully_similar_and_noise_is_not():
    g = torch.Generator().manual_seed(0)
    a = torch.randn(300, 16, generator=g, dtype=torch.float64)
    q, _ = torch.linalg.qr(torch.randn(16, 16, generator=g, dtype=torch.float64))
    assert procrustes.aligned_row_cosines(a, a @ q).min() > 1 - 1e-10
    noise = torch.randn(300, 16, generator=g, dtype=torch.float64)
    # unrelated matrices: the best rotation fits 16x16 parameters to 300 rows, a small mean cosine
    assert abs(float(procrustes.aligned_row_cosines(a, noise).mean())) < 0.35


def test_rotation_is_the_least_squares_orthogonal_map():
    g = torch.Generator().manual_seed(1)
    a = torch.randn(50, 4, generator=g, dtype=torch.float64)
    b = torch.randn(50, 4, generator=g, dtype=torch.float64)
    r = procrustes.procrustes_rotation(a, b)
    assert torch.allclose(r @ r.T, torch.eye(4, dtype=torch.float64), atol=1e-12)
    best = float((b @ r - a).norm())
    for _ in range(200):  # no random orthogonal map does better
        q, _ = torch.linalg.qr(torch.randn(4, 4, generator=g, dtype=torch.float64))
        assert float((b @ q - a).norm()) >= best - 1e-9


def test_similarity_of_frequent_rows_uses_the_counts():
    g = torch.Generator().manual_seed(2)
    a = torch.randn(40, 3, generator=g, dtype=torch.float64)
    b = a.clone()
    b[20:] = torch.randn(20, 3, generator=g, dtype=torch.float64)  # the rare half differs
    counts = np.r_[np.full(20, 100), np.full(20, 1)]
    s = procrustes.similarity(a, b, counts, top=20)
    cos = procrustes.aligned_row_cosines(a, b).numpy()
    assert s["frequent"] == pytest.approx(cos[:20].mean()) and s["all"] == pytest.approx(cos.mean())
    assert s["frequent"] > s["all"]


# --------------------------------------------------------------------------- gradient norms per path
def test_row_norms_and_share_match_a_manual_split():
    torch.manual_seed(0)
    s = sharing.build("tied", vocab_size=11, dim=4)
    lin = torch.nn.Linear(4, 4)
    ids, tgt = torch.tensor([[1, 2, 3, 2]]), torch.tensor([[2, 3, 2, 5]])

    def loss_fn(_):
        return s.loss(lin(s.embed(ids)).reshape(-1, 4), tgt.reshape(-1))

    grads = split_row_gradients(s, loss_fn, None)
    g_in = path_shares.row_gradient_norms(grads["input"], 11)
    g_out = path_shares.row_gradient_norms(grads["output"], 11)
    # by hand: the output path with a detached input, the input path with a detached output matrix
    w = s.weight
    x = torch.nn.functional.embedding(ids, w)
    h = lin(x).reshape(-1, 4)
    out_only = torch.autograd.grad(torch.nn.functional.cross_entropy(h.detach() @ w.T, tgt.reshape(-1)), w)[0]
    in_only = torch.autograd.grad(torch.nn.functional.cross_entropy(h @ w.detach().T, tgt.reshape(-1)), w)[0]
    assert np.allclose(g_out, out_only.norm(dim=1).numpy(), atol=1e-6)
    assert np.allclose(g_in, in_only.norm(dim=1).numpy(), atol=1e-6)
    assert np.count_nonzero(g_in) == 3  # only tokens 1, 2, 3 are inputs; every row has an output gradient
    assert np.count_nonzero(g_out) == 11
    assert path_shares.output_share(g_in, g_out) == pytest.approx(g_out.sum() / (g_in.sum() + g_out.sum()))


def test_frequency_bands_split_by_count():
    bands = path_shares.frequency_bands(np.array([5, 50, 1, 20, 0, 9]), 6)
    assert [b.tolist() for b in bands] == [[1, 3], [0, 5], [2, 4]]


# --------------------------------------------------------------------------- during training
def _cfg(strategy: str, *extra: str):
    over = [*TINY_GPT_BODY, "train.max_steps=6", "train.eval_every=2", "train.eval_batches=2", "train.warmup_steps=0",
            "train.checkpoint_every=2", *extra]  # fmt: skip
    return load_config("ptb-gpt-tiny", [f"sharing.name={strategy}", *over])


def _weights(run_dir):
    from safetensors.torch import load_file

    from embtie.rundir import checkpoints

    return load_file(checkpoints.readable(run_dir, ("model.safetensors",), "test") / "model.safetensors")


def test_probing_does_not_change_training_and_records_every_validation(tmp_path):
    train(_cfg("tied"), tmp_path / "plain")
    train(_cfg("tied", "train.path_probe=2"), tmp_path / "probed")
    a, b = _weights(tmp_path / "plain"), _weights(tmp_path / "probed")
    assert all(torch.equal(a[k], b[k]) for k in a)
    data = path_share_file.read(tmp_path / "probed")
    assert data["records"][:, 0].tolist() == [2, 4, 6]
    assert np.all((data["records"][:, 1:] > 0) & (data["records"][:, 1:] < 1))
    # a tied model: every row gets output-path gradient, only rows of seen tokens an input-path one
    shares = path_share_file.row_output_shares(data)
    assert np.nanmin(shares) < 1 and np.nanmax(shares) == 1.0
    metrics = [json.loads(x) for x in (tmp_path / "probed" / "metrics.jsonl").read_text().splitlines()]
    probed = [m["output_path_share"] for m in metrics if "output_path_share" in m]
    assert probed == pytest.approx(data["records"][:, 1].tolist())


def test_untied_rows_are_split_between_the_two_matrices(tmp_path):
    train(_cfg("untied", "train.path_probe=1", "train.max_steps=2"), tmp_path / "u")
    data = path_share_file.read(tmp_path / "u")
    # the probe sees both matrices (leading dim V): the shares are strictly between 0 and 1
    assert 0 < data["records"][-1, 1] < 1


def test_a_resumed_run_drops_probes_after_its_checkpoint(tmp_path):
    import shutil

    full = tmp_path / "full"
    train(_cfg("tied", "train.path_probe=2", "train.keep_checkpoints=3"), full)
    part = tmp_path / "part"
    shutil.copytree(full, part)
    # as if the process had died after the step-6 probe, with step 2 the newest checkpoint
    for c in (part / "checkpoints").glob("step-*"):
        if c.name != "step-00000002":
            shutil.rmtree(c)
    (part / "summary.json").unlink()
    assert path_share_file.read(part)["records"][:, 0].tolist() == [2, 4, 6]
    train(_cfg("tied", "train.path_probe=2", "train.keep_checkpoints=3"), part)
    a, b = path_share_file.read(full), path_share_file.read(part)
    assert b["records"][:, 0].tolist() == [2, 4, 6]
    assert np.array_equal(a["records"], b["records"])
    assert np.array_equal(a["cum_in"], b["cum_in"]) and np.array_equal(a["cum_out"], b["cum_out"])


# --------------------------------------------------------------------------- the report
def test_compare_report_has_the_update_dynamics_section(tmp_path):
    out = tmp_path / "cmp"
    argv = ["compare", "ptb-gpt-tiny", "--strategies", "tied,untied", "--seeds", "1", "--first-seed", "3",
            "--out", str(out), "--no-progress", "--analysis", "full", *_over_for_compare()]  # fmt: skip
    assert cli.main(argv) == 0
    res = json.loads((out / "results.json").read_text())
    (row,) = res["update_dynamics"]
    assert row["seed"] == 3
    assert row["strategy"] == "tied" and all(-1 <= row[k] <= 1 for k in ("to_input", "to_output"))
    assert math.isfinite(row["to_output_frequent"])
    md = (out / "report.md").read_text()
    assert "Update dynamics" in md and "output-path share" in md
    assert (out / "output_path_shares.png").is_file() and (out / "update_dynamics.json").is_file()
    # the plot's re-run command is the comparison's own (path_probe=2), not a second, different probe flag
    assert "train.path_probe=4" not in md and "train.path_probe=2" in md
    # the report opens with the budget and the plain-language summary; --first-seed names the seeds
    assert md.index("## Summary") < md.index("Validation perplexity") and "Budget: every run trained 4 optimizer" in md
    assert (out / "runs" / "tied" / "seed3" / "summary.json").is_file() and "--first-seed 3" in md


def _over_for_compare() -> list[str]:
    return [*TINY_GPT_BODY, "train.max_steps=4", "train.eval_every=2", "train.eval_batches=2", "train.warmup_steps=0",
            "train.checkpoint_every=0", "train.path_probe=2"]  # fmt: skip


def test_a_strategy_without_vocabulary_rows_gets_empty_splits():
    s = sharing.build("adaptive", vocab_size=40, dim=8, cutoffs=[10, 20])
    ids = torch.tensor([[1, 2, 30]])

    def loss_fn(_):
        return s.loss(s.embed(ids).reshape(-1, 8), torch.tensor([2, 30, 5]))

    assert split_row_gradients(s, loss_fn, None) == {"input": {}, "output": {}}
    from embtie.analysis.row_updates import row_update_counts

    counts = row_update_counts(s, loss_fn, [None, None])
    assert counts["input_counts"].sum() == 0 and counts["parameters"] == []
