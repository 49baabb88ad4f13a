"""With TensorBoard installed, training also writes the metrics as TensorBoard scalars."""

import pytest

from embtie.config import load_config
from embtie.training import train
from embtie.training.metrics_log import read_metrics
from tiny_runs import TINY_GPT

pytest.importorskip("tensorboard")


def test_tensorboard_scalars_match_metrics_jsonl(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    cfg = load_config("ptb-gpt-tiny", [*TINY_GPT, "train.max_steps=20", "train.eval_every=20"])
    train(cfg, tmp_path)
    ea = EventAccumulator(str(tmp_path / "tb"))
    ea.Reload()
    assert {"train/loss", "valid/ppl"} <= set(ea.Tags()["scalars"])
    jsonl = {r["step"]: r["loss"] for r in read_metrics(tmp_path) if r["split"] == "train"}
    tb = {e.step: e.value for e in ea.Scalars("train/loss")}
    assert tb.keys() == jsonl.keys()
    for step, loss in jsonl.items():
        assert tb[step] == pytest.approx(loss, rel=1e-6)
