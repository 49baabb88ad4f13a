"""FSDP2 (``train.parallel=fsdp``): 2 CPU processes under torchrun (gloo) follow the same losses and reach
the same weights as 1 process with the same global batch, for tied, l2norm, fixed and untied; their
checkpoints have the single-process format (a 1-process eval gives the logged validation loss); a run
resumed from an earlier checkpoint ends with the same weights; the tie stays one sharded tensor whose
gradient is the sum of the input- and output-side gradients."""

import json
import os
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtie.rundir.checkpoints import latest, load_state
from embtie.rundir.loading import load_run
from embtie.tasks import get as get_task
from embtie.training import train
from embtie.training.metrics_log import read_metrics
from embtie.training.objective import Objective, split
from fsdp_worker import config
from torchrun_launch import torchrun

pytestmark = [pytest.mark.slow, pytest.mark.distributed]

SUPPORT = Path(__file__).resolve().parents[1] / "support"
DATA = os.environ.get("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
STRATEGIES = ["tied", "l2norm", "fixed", "untied"]
LOSS_TOL = 1e-5
"""fp32 tolerance on the logged losses (measured worst over the 4 strategies: 1.9e-6)."""
WEIGHT_TOL = 5e-5
"""fp32 tolerance on the weights after 12 AdamW steps (measured worst: 1.2e-5, one row of untied's input
E whose tiny gradient Adam scales up to a full-size update; every other tensor within 7e-6)."""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(1-process runs, 2-process FSDP runs): one folder per strategy in each."""
    root = tmp_path_factory.mktemp("fsdp")
    one, two = root / "one", root / "two"
    env = {
        **os.environ,
        "EMBTIE_DATA": DATA,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    worker = SUPPORT / "fsdp_worker.py"

    def meanwhile() -> None:  # in this process, while the 2-process runs work
        for s in STRATEGIES:
            train(config(s, "ddp"), one / s)
        train(config("tied", "ddp", accumulate=2), one / "tied-acc2")

    torchrun([str(worker), str(two), *STRATEGIES], env, [two], meanwhile=meanwhile)
    return one, two


def _weights(run: Path) -> dict[str, torch.Tensor]:
    return load_file(str(latest(run) / "model.safetensors"))


@pytest.mark.parametrize("strategy", [*STRATEGIES, "tied-acc2"])  # acc2: reduce-scatter on the 2nd micro-batch
def test_two_fsdp_processes_match_one_process(runs, strategy):
    one, two = runs[0] / strategy, runs[1] / strategy
    ra, rb = read_metrics(one), read_metrics(two)
    assert [(r["step"], r["split"]) for r in ra] == [(r["step"], r["split"]) for r in rb]
    la, lb = torch.tensor([r["loss"] for r in ra]), torch.tensor([r["loss"] for r in rb])
    assert len(la) == 13 + 2  # steps 0..12 and validations at 6 and 12
    assert torch.allclose(la, lb, rtol=0, atol=LOSS_TOL), (la - lb).abs().max()
    wa, wb = _weights(one), _weights(two)
    assert wa.keys() == wb.keys()  # the same file: names of the unsharded model, a tie stored once
    for k in wa:
        assert wa[k].shape == wb[k].shape and torch.allclose(wa[k], wb[k], rtol=0, atol=WEIGHT_TOL), k
    if strategy == "fixed":  # the fixed target matrix is a buffer: never sharded, never trained
        assert torch.equal(wa["sharing.fixed_weight"], wb["sharing.fixed_weight"])


@pytest.mark.parametrize("strategy", ["tied", "untied"])
def test_fsdp_optimizer_file_has_the_single_process_format(runs, strategy):
    one, two = latest(runs[0] / strategy), latest(runs[1] / strategy)
    oa, ob = load_file(str(one / "optim.safetensors")), load_file(str(two / "optim.safetensors"))
    assert oa.keys() == ob.keys()  # parameter index . moment name
    for k in oa:
        assert torch.allclose(oa[k].double(), ob[k].double(), rtol=1e-3, atol=1e-7), k
    ma, mb = load_state(one)["optimizer"], load_state(two)["optimizer"]
    assert [g["params"] for g in ma["param_groups"]] == [g["params"] for g in mb["param_groups"]]
    assert load_state(two)["world_size"] == 2


def test_fsdp_checkpoint_evaluates_on_one_process(runs):
    two = runs[1] / "tied"
    logged = [r for r in read_metrics(two) if r["split"] == "valid"][-1]
    run = load_run(two)  # one process, no process group, the single-process loader
    res = run.task.evaluate(run.model, "valid")
    assert res["tokens"] == logged["tokens"]
    assert res["loss"] == pytest.approx(logged["loss"], rel=0, abs=1e-6)
    summary = json.loads((two / "summary.json").read_text())
    assert summary["world_size"] == 2 and summary["valid_loss"] == pytest.approx(res["loss"], abs=1e-6)


def test_fsdp_resume_is_exact(runs):
    two = runs[1]
    done, resumed = _weights(two / "tied"), _weights(two / "tied-resumed")
    assert latest(two / "tied-resumed").name == "step-00000012"
    for k in done:
        assert torch.equal(done[k], resumed[k]), k
    la = [(r["step"], r["split"], r["loss"]) for r in read_metrics(two / "tied")]
    lb = [(r["step"], r["split"], r["loss"]) for r in read_metrics(two / "tied-resumed")]
    assert la == lb


def test_tie_is_one_sharded_tensor_after_resume(runs):
    probe = torch.load(runs[1] / "probe.pt")
    shards = probe["shards"]
    assert list(shards) == ["weight"]  # tied: E is the strategy's only parameter, the head reads it
    full, local, placements = shards["weight"]
    assert local == (full[0] // 2 + full[0] % 2, full[1]) and "Shard(dim=0)" in placements  # half the rows
    # the sharded gradient (averaged over the 2 processes) equals the 1-process gradient of the same
    # global batch on the same weights: input-side and output-side parts summed into the one tensor
    cfg = config("tied", "ddp")
    task = get_task("lm")(cfg)
    model = task.build_model()
    model.load_state_dict(probe["weights"])
    batch = task.train_batch(0, 0, 0, 1, torch.device("cpu"))
    obj, _ = split(Objective(model, task)(batch, None)[0])
    obj.backward()
    for n, p in model.named_parameters():
        assert torch.allclose(p.grad, probe["grads"][n], rtol=1e-4, atol=1e-7), n
    g = probe["grads"]["sharing.weight"]
    unseen = torch.ones(g.shape[0], dtype=torch.bool)
    unseen[batch.inputs.unique()] = False
    assert g[unseen].abs().sum() > 0 and g[~unseen].abs().sum() > 0  # output side reaches every row
