"""An ``embtie.hf.apply``-ed model under FSDP2 on 2 CPU processes (gloo): it trains like 1 process on the
same global batch, its gathered state dict saved with ``save_pretrained`` reloads with ``embtie.hf.load``
to identical logits, the tie intact. Accelerate's own FSDP launcher is checked too, and skipped (with the
reason measured in the run) where accelerate will not use FSDP on CPU processes."""

import os
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

import embtie.hf as eh
from embtie.hf.tiny import tiny_model
from hf_fsdp_worker import NO_DROPOUT, V
from torchrun_launch import torchrun

pytestmark = [pytest.mark.slow, pytest.mark.distributed]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("hf_fsdp")
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(SUPPORT), os.environ.get("PYTHONPATH", "")]),
    }
    worker = SUPPORT / "hf_fsdp_worker.py"
    torchrun([str(worker), str(out)], env, [out / "model"])
    return out


SUPPORT = Path(__file__).resolve().parents[1] / "support"


def test_fsdp_trained_model_reloads_with_identical_logits(run):
    saved = torch.load(run / "logits.pt")
    model = eh.load(run / "model")
    with torch.no_grad():
        logits = model(input_ids=saved["ids"]).logits
    assert torch.equal(logits, saved["logits"])
    s = eh.sharing_of(model)
    assert model.get_input_embeddings().weight is s.weight and model.get_output_embeddings().sharing is s


def test_fsdp_training_matches_one_process(run):
    torch.manual_seed(0)
    model = eh.apply(tiny_model("gpt2", V, **NO_DROPOUT), "tied").train()
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    ids = torch.load(run / "logits.pt")["ids"]
    for _ in range(3):  # the global batch: both processes' halves, the mean loss over all its tokens
        model(input_ids=ids, labels=ids).loss.backward()
        opt.step()
        opt.zero_grad()
    reloaded = eh.load(run / "model")
    torch.manual_seed(0)
    init = eh.apply(tiny_model("gpt2", V, **NO_DROPOUT), "tied")
    for (n, a), (_, b) in zip(model.named_parameters(), reloaded.named_parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5, msg=n)
    assert not torch.allclose(eh.sharing_of(init).weight, eh.sharing_of(reloaded).weight)  # it did train


def test_accelerate_fsdp_on_cpu(run):
    picked = (run / "accelerate.txt").read_text()
    if picked != "DistributedType.FSDP":
        pytest.skip(f"accelerate runs these 2 CPU processes as {picked}, not FSDP: it enables FSDP only for GPU-like "
                    "backends (accelerate/state.py), so an FSDP plugin on CPU is ignored; torch's fully_shard is "
                    "tested above instead")  # fmt: skip
    assert picked == "DistributedType.FSDP"
