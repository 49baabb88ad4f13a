"""One builder for every task's model: the weights it draws for a config and a seed are pinned bit for bit.

The digests below were computed when each task still had its own ``build_model``; the shared builder
must draw exactly the same numbers (sharing object from the stream "sharing", the rest from "body"),
or runs trained before it could not be compared with runs trained after it. A digest covers every
entry of the state dict: its name, dtype, shape and bytes.
"""

from __future__ import annotations

import copy
import hashlib

import pytest
import torch

from embtie import tasks
from embtie.config import config_from_dict, load_config
from tiny_runs import TINY_GPT_BODY
from translation_configs import TINY


def state_digest(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in model.state_dict().items():
        t = t.detach().cpu().contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


def _built(cfg) -> torch.nn.Module:
    return tasks.get(cfg.task)(cfg).build_model()


def _translation(data: dict, **replaced) -> dict:
    """The tiny translation config with ``data`` entries changed and whole sections replaced."""
    raw = copy.deepcopy(TINY)
    return {**raw, "data": {**raw["data"], **data}, **replaced}


LM_CONFIGS = {
    "gpt-tied": ("ptb-gpt-tiny", [*TINY_GPT_BODY, "sharing.name=tied", "seed=3"]),
    "lstm-untied": ("ptb-lstm-small", ["model.emb_dim=16", "model.hidden=24", "seed=1"]),
}
LM_DIGESTS = {
    "gpt-tied": "4755c8135744acf0e77ecfb7a11bf9a4402300a6897c32bdc283e266b27f28c0",
    "lstm-untied": "426837386c557f6d18d5a47ef4a2e3657fab69630ef9f4c699c21e227a389da1",
}


@pytest.mark.parametrize("key", sorted(LM_CONFIGS))
def test_language_model_weights_are_unchanged(key):
    spec, overrides = LM_CONFIGS[key]
    assert state_digest(_built(load_config(spec, overrides))) == LM_DIGESTS[key]


TRANSLATION_CONFIGS = {
    "transformer-three-way": _translation({}),
    "rnn-separate-untied": _translation(
        {"vocab": "separate"},
        model={"name": "rnn", "dim": 16, "enc_hidden": 8, "dec_hidden": 16, "attn_dim": 8, "dropout": 0.0},
        sharing={"name": "untied", "options": {}},
        seed=2,
    ),
}
TRANSLATION_DIGESTS = {
    "transformer-three-way": "c14a7da19afe56798026f4a429ed6e621d11408fbd65942d4e1ff19b98125570",
    "rnn-separate-untied": "3dc80d2fc08bbfc61111381826b455ffad9b3df74f395de68fd01c11ea0effa0",
}


@pytest.mark.parametrize("key", sorted(TRANSLATION_CONFIGS))
def test_translation_model_weights_are_unchanged(key):
    assert state_digest(_built(config_from_dict(TRANSLATION_CONFIGS[key]))) == TRANSLATION_DIGESTS[key]


CAPTION_DIGESTS = {
    ("show-tell", "tied"): "0a903e2d1edbeca9bcaca5235415fd79b44b08e4dcc2859020b4eaa2660372a9",
    ("show-attend-tell", "untied"): "2fded5b3f159c086efc5a70e22afd3e2a242bdefa8c5351d2bb8734ce49a03a3",
}


@pytest.mark.parametrize("model,strategy", sorted(CAPTION_DIGESTS))
def test_captioning_model_weights_are_unchanged(flickr, model, strategy):
    from captioning_data import caption_cfg

    cfg = config_from_dict(caption_cfg(flickr, model, strategy))
    assert state_digest(_built(cfg)) == CAPTION_DIGESTS[(model, strategy)]
