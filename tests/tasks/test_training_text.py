"""``Task.training_text()``: the target tokens and sequences of one pass over the training data, the same
counts training sees (``embtie plan`` sizes a run with it)."""

from __future__ import annotations

import pytest
import torch

from embtie import tasks
from embtie.config import config_from_dict, load_config
from embtie.data.subwords import PAD
from translation_configs import TINY


def test_lm_counts_every_window_of_an_epoch():
    cfg = load_config("ptb-gpt-tiny", ["data.train_tokens=20000", "data.batch_size=4", "data.bptt=32"])
    task = tasks.get(cfg.task)(cfg)
    text = task.training_text()
    assert text.sequences == 4 * task.steps_per_epoch() and text.tokens == text.sequences * 32
    assert text.mean_length == 32
    seen = sum(task.train_batch(0, i, 0, 1, torch.device("cpu")).targets.numel() for i in range(task.steps_per_epoch()))
    assert seen == text.tokens


def test_translation_counts_the_target_tokens_of_the_epochs_batches():
    cfg = config_from_dict(TINY)
    task = tasks.get(cfg.task)(cfg)
    text = task.training_text()
    batches = [task.train_batch(0, i, 0, 1, torch.device("cpu")) for i in range(task.steps_per_epoch())]
    assert text.tokens == sum(b.num_target_tokens for b in batches)
    assert text.sequences == sum(b.tgt_out.shape[0] for b in batches) == 600


def test_captioning_counts_captions_and_their_end_tokens(flickr):
    pytest.importorskip("PIL.Image")
    from captioning_data import caption_cfg

    cfg = config_from_dict(caption_cfg(flickr))
    task = tasks.get(cfg.task)(cfg)
    text = task.training_text()
    batches = [task.train_batch(0, i, 0, 1, torch.device("cpu")) for i in range(task.steps_per_epoch())]
    assert text.sequences == sum(b.tgt_out.shape[0] for b in batches) == len(task.pairs("train")[1])
    assert text.tokens == sum(int((b.tgt_out != PAD).sum()) for b in batches)
