"""The update-path probe's frequency bands come from the task's training counts of the output
vocabulary, for translation as for language modelling (the probe once asked translation tasks for an
attribute none defines and fell back to bands by token id)."""

from __future__ import annotations

import copy

import numpy as np
import torch

from embtie.config import config_from_dict
from embtie.tasks.translation import TranslationTask
from embtie.training.path_shares import PathShareProbe, frequency_bands
from translation_configs import TINY


def test_translation_probe_bands_follow_target_training_counts(tmp_path):
    task = TranslationTask(config_from_dict(copy.deepcopy(TINY)))
    model = task.build_model()
    counts = task.output_token_counts()
    v = model.sharing.vocab_size
    assert counts.shape == (v,) and counts.dtype == np.int64
    # every target token of the (encoded) training pairs is counted once
    assert counts.sum() == sum(len(ids) for ids in task.tgt_sw.encode_batch(task.texts("train").ref))
    probe = PathShareProbe(task, model, tmp_path, n_batches=1, device=torch.device("cpu"))
    frequent = probe.bands[0]
    assert [b.tolist() for b in probe.bands] == [b.tolist() for b in frequency_bands(counts, v)]
    assert [b.tolist() for b in probe.bands] != [b.tolist() for b in frequency_bands(None, v)]
    # the frequent third holds the most counted tokens
    assert counts[frequent].min() >= np.median(counts)
