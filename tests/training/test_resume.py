"""A run killed with SIGKILL at a random moment and resumed by running the same command again ends
with bitwise the same parameters (and the same logged losses) as an uninterrupted run, on CPU."""

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from embtie.rundir.checkpoints import latest
from embtie.training.metrics_log import read_metrics

DATA = os.environ.get("EMBTIE_DATA", str(Path(__file__).resolve().parents[3] / "shared/data"))
COMMON = [
    "train.progress=false",
    "train.threads=1",
    "train.log_every=2",
    "train.checkpoint_every=3",
    "train.eval_every=10",
    "train.max_steps=36",
    "data.train_tokens=40000",
    "data.valid_tokens=2000",
]
CASES = {
    # dropout (RNG state), shuffled window order (data position), AdamW moments, warmup + cosine
    "gpt": [
        "ptb-gpt-tiny",
        "model.dim=32",
        "model.n_layers=1",
        "model.n_heads=2",
        "model.max_len=16",
        "model.dropout=0.1",
        "data.bptt=16",
        "data.batch_size=8",
        "data.eval_batch_size=4",
        "train.warmup_steps=5",
        "sharing.name=untied",
        "sharing.options.bias=true",
    ],
    # a Hugging Face GPT-2 trained by embtie (model.name=hf): its body's tensors, its own dropout, l2norm
    "hf": [
        "ptb-hf-gpt2-tiny",
        f"model.hf={Path(__file__).resolve().parents[1] / 'fixtures/hf/gpt2-micro.json'}",
        "data.bptt=16",
        "data.batch_size=8",
        "data.eval_batch_size=4",
        "train.warmup_steps=5",
        "sharing.name=l2norm",
    ],
    # carried hidden state across batches, a projection hidden -> emb, SGD, tied-proj regulariser
    "lstm": [
        "ptb-lstm-small",
        "model.emb_dim=16",
        "model.hidden=24",
        "model.dropout=0.1",
        "data.bptt=8",
        "data.batch_size=4",
        "data.eval_batch_size=4",
        "sharing.name=tied-proj",
    ],
}


def _cmd(case: str, out: Path) -> list[str]:
    preset, *overrides = CASES[case]
    return [sys.executable, "-m", "embtie", "train", preset, *overrides, *COMMON, "--out", str(out)]


def _env() -> dict[str, str]:
    return {**os.environ, "EMBTIE_DATA": DATA, "OMP_NUM_THREADS": "1"}


def _weights(run: Path) -> dict[str, torch.Tensor]:
    ckpt = latest(run)
    assert ckpt is not None and ckpt.name == "step-00000036"
    return load_file(str(ckpt / "model.safetensors"))


@pytest.mark.parametrize(
    "case",
    # hf: 14 s on the shared 2-core machine when quiet (gpt: 10 s), 261 s under load (three processes that
    # import transformers); the fast in-process resume of model.name=hf is tests/hf/test_compare_hf.py
    [pytest.param(c, marks=pytest.mark.slow) if c == "hf" else c for c in sorted(CASES)],
)
def test_sigkill_then_resume_is_bitwise_identical(case, tmp_path):
    ref, killed = tmp_path / "ref", tmp_path / "killed"
    # The uninterrupted reference is launched exactly like the killed run (a fresh process, one thread
    # from the start), so that nothing but the kill differs between the two.
    ref_proc = subprocess.Popen(_cmd(case, ref), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    proc = subprocess.Popen(_cmd(case, killed), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:  # wait until training has started ...
        if (killed / "metrics.jsonl").exists() and read_metrics(killed):
            break
        time.sleep(0.02)
    time.sleep(random.uniform(0.0, 1.0))  # ... then kill it at a random moment
    assert proc.poll() is None, "the run finished before it could be killed; make it longer"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    subprocess.run(_cmd(case, killed), env=_env(), check=True, capture_output=True, timeout=300)
    _, err = ref_proc.communicate(timeout=300)
    assert ref_proc.returncode == 0, err.decode()[-2000:]

    a, b = _weights(ref), _weights(killed)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    ra, rb = read_metrics(ref), read_metrics(killed)
    strip = ("elapsed", "tokens_per_s")
    assert [{k: v for k, v in r.items() if k not in strip} for r in ra] == [
        {k: v for k, v in r.items() if k not in strip} for r in rb
    ]
    assert not any(p.name.startswith(".tmp") for p in (killed / "checkpoints").iterdir())
