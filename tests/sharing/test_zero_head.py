"""Option zero_head (modded-nanogpt): a separate learned head O starts at zero, so every logit is 0 and the
loss of the first step is exactly ln V, on real PTB batches; strategies whose head is E, normalised rows of E
or a fixed matrix refuse it with the reason."""

from __future__ import annotations

import math

import pytest
import torch

from embtie import sharing, tasks
from embtie.config import load_config
from embtie.errors import ConfigError
from tiny_runs import TINY_GPT_BODY


def _first_batch_losses(options: list[str]) -> tuple[list[float], int]:
    cfg = load_config("ptb-gpt-tiny", [*TINY_GPT_BODY, "model.dropout=0", *options])
    torch.manual_seed(cfg.seed)
    task = tasks.get(cfg.task)(cfg)
    model = task.build_model()
    cpu = torch.device("cpu")
    losses = []
    for index in range(3):  # the first three training batches of the first epoch
        batch = task.train_batch(0, index, 0, 1, cpu)
        with torch.no_grad():
            out, _ = task.loss(model, batch, task.init_carry(model, 0, 1, cpu))
        losses.append(float(out.ce))
    return losses, model.sharing.vocab_size


@pytest.mark.parametrize("bias", ["false", "true"])
def test_a_zero_head_gives_loss_ln_v_at_step_0_on_ptb(bias):
    options = ["sharing.name=untied", "sharing.options.zero_head=true", f"sharing.options.bias={bias}"]
    losses, v = _first_batch_losses(options)
    assert v == 10000  # PTB's vocabulary
    assert losses == pytest.approx([math.log(v)] * 3, abs=1e-5)  # every batch: all logits are 0
    default, _ = _first_batch_losses(["sharing.name=untied"])
    assert min(abs(x - math.log(v)) for x in default) > 1e-2  # the default init does not start at ln V


def test_only_o_starts_at_zero():
    torch.manual_seed(0)
    s = sharing.build("untied", vocab_size=20, dim=8, zero_head=True)
    assert torch.count_nonzero(s.out_weight) == 0 and torch.count_nonzero(s.weight) == s.weight.numel()
    s.reset_parameters()
    assert torch.count_nonzero(s.out_weight) == 0


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("tied", "a zero E would zero every input vector too"),
        ("l2norm", "a zero row has no direction"),
        ("cosine", "a zero row has no direction"),
        ("ngpt", "a zero row has no direction"),
        ("fixed", "fixed \\(never trained\\) head"),
        ("tie-untie", "a zero O would never be used"),
    ],
)
def test_strategies_without_a_separate_learned_head_refuse_it(name, reason):
    with pytest.raises(ConfigError, match=f"option zero_head: strategy '{name}' .*{reason}"):
        sharing.build(name, vocab_size=20, dim=8, zero_head=True)
    with pytest.raises(ConfigError, match="zero_head"):  # when the config is read, before anything runs
        load_config("ptb-gpt-tiny", [f"sharing.name={name}", "sharing.options.zero_head=true"])
