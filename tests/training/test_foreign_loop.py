"""Every strategy trains inside a loop embtie did not write, in the style of nanoGPT: the test's own GPT
block, its own init (``apply(_init_weights)``, then the strategy's ``reset_parameters``), its own AdamW
grouping (2-D parameters decay) and its own lr schedule, with the one per-step call docs/your-loop.md asks
for (``on_train_step``). Eager and compiled (``torch.compile``, aot_eager backend: AOTAutograd traces
forward and backward as inductor would, without code generation) give the same losses step for step,
and tie-untie unties in both."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from embtie import sharing

V, D, HEADS, T, B, STEPS = 48, 16, 2, 8, 4, 4


class Block(nn.Module):
    """nanoGPT's block: pre-LayerNorm causal self-attention and a GELU MLP."""

    def __init__(self) -> None:
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.c_attn, self.c_proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x: Tensor) -> Tensor:
        q, k, v = self.c_attn(self.ln_1(x)).split(D, dim=2)
        q, k, v = (t.view(x.shape[0], T, HEADS, D // HEADS).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(x.shape)
        x = x + self.c_proj(y)
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's model with embtie's strategy in place of wte / lm_head (the 25-line change)."""

    def __init__(self, name: str, options: dict[str, object]) -> None:
        super().__init__()
        self.sharing = sharing.build(name, vocab_size=V, dim=D, **options)
        self.wpe = nn.Embedding(T, D)
        self.h = nn.ModuleList(Block() for _ in range(2))
        self.ln_f = nn.LayerNorm(D)
        self.apply(self._init_weights)
        self.sharing.reset_parameters()  # after the host's init: the strategy's own init stands

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: Tensor, targets: Tensor) -> Tensor:
        x = self.sharing.embed(idx) + self.wpe(torch.arange(T, device=idx.device))
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.sharing.loss(x, targets) + self.sharing.regularization()


def configure_optimizers(model: nn.Module) -> torch.optim.AdamW:
    """nanoGPT's grouping: every 2-D parameter decays, the rest does not."""
    params = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in params if p.dim() >= 2]
    nodecay = [p for p in params if p.dim() < 2]
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": nodecay, "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.95))


def train(model: GPT, compiled: bool) -> list[float]:
    """STEPS steps of nanoGPT's loop on one fixed batch (so that the loss must fall); the losses."""
    forward = torch.compile(model, fullgraph=True, backend="aot_eager") if compiled else model
    optimizer = configure_optimizers(model)
    idx, targets = torch.randint(0, V, (2, B, T), generator=torch.Generator().manual_seed(3))
    losses = []
    for step in range(STEPS):
        lr = 1e-2 * 0.5 * (1 + math.cos(math.pi * step / STEPS))  # nanoGPT's cosine
        for group in optimizer.param_groups:
            group["lr"] = lr
        model.sharing.on_train_step(step, STEPS, optimizer)  # the one embtie call
        loss = forward(idx, targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss))
    return losses


def _options(name: str) -> dict[str, object]:
    return {"cutoffs": [16, 32]} if name == "adaptive" else {}


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("name", sharing.names())
def test_every_strategy_trains_in_a_nanogpt_loop_eager_and_compiled_alike(name):
    torch.manual_seed(0)
    eager = GPT(name, _options(name))
    twin = GPT(name, _options(name))
    twin.load_state_dict(eager.state_dict())
    want = train(eager, compiled=False)
    got = train(twin, compiled=True)
    assert all(math.isfinite(x) for x in want)
    assert want[-1] < want[0]  # it learns
    assert got == pytest.approx(want, rel=1e-4, abs=1e-5)
    for key, w in eager.state_dict().items():  # the same updates were made
        torch.testing.assert_close(twin.state_dict()[key], w, rtol=1e-3, atol=1e-4)


def test_tie_untie_unties_in_a_foreign_loop():
    torch.manual_seed(0)
    model = GPT("tie-untie", {})
    assert not model.sharing.is_untied
    train(model, compiled=True)
    s = model.sharing
    assert s.is_untied and s.untie_step(STEPS) == 3
    assert not torch.equal(s.out_weight, s.weight)  # O learned on its own after the copy
