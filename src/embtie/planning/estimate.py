"""What a run and a grid of runs will cost: FLOPs per token, memory per device, tokens/s and wall time.

Formulas (each stated in ``embtie plan``'s output too):

- FLOPs per training token = 6 N + 12 L_attn d T (Kaplan et al. 2020's 6N, PaLM's attention term):
  N = weights every token is multiplied with (``ModelShape.matmul_params``: learned and fixed, lookup
  tables left out), 2 FLOPs per weight forward and 4 backward; L_attn dot-product attention modules,
  each 4 d T FLOPs forward (QK^T and AV over T positions), T the mean training sequence length, d the
  width attention runs at (``ModelShape.attention_dim``: the model's width for embtie's models; heads x
  head dim, from its config, for a Hugging Face model, whose layers each hold one attention module). For a
  translation model the encoder's weights are counted per target token (source ~ target length).
- memory per device = weights (4 bytes each, learned and fixed; fp32 in both precisions, bf16 is
  autocast) + gradients (4 per learned) + optimizer state (AdamW 8, SGD with momentum 4, per learned)
  + activations: per token 17/12 values per body weight over d (a transformer layer of 12 d^2 weights
  keeps about 34 d bytes per token in 16 bits, Korthikanti et al. 2022, with flash / memory-efficient
  attention: no T^2 term), at 4 bytes (fp32) or 2 (bf16), + the logits and their gradient of one chunk of
  the memory-lean loss (``sharing.chunked_ce``'s default chunk for the device), 8 bytes each.
- tokens/s of one run: measured (``planning.measured``) where embtie has it for the preset on this
  hardware, else tokens per step / (FLOPs per step / (peak x MFU) + per-step overhead).
- grid wall time = ceil(runs / devices) x time of one run (one run per device; runs of one grid
  take about the same time); device-hours = runs x time of one run. Training only: validation,
  beam search and the analysis after each run are not included.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from embtie.config import RunConfig
from embtie.planning import measured
from embtie.planning.hardware import Hardware
from embtie.planning.model_shape import ModelShape
from embtie.sharing.chunked_ce_config import default_chunk
from embtie.tasks import Task
from embtie.training.optim import total_steps

ACTIVATION_VALUES_PER_WEIGHT = 17 / 12
"""stored activation values per token, per body weight, per unit of width (see the module docstring)."""
OPTIMIZER_BYTES = {"adamw": 8, "adam": 8, "sgd": 4}


@dataclass(frozen=True)
class RunBudget:
    """The training a run does."""

    steps: int
    tokens_per_step: float
    context: float
    """mean training sequence length (T of the attention term)."""

    @property
    def tokens(self) -> float:
        return self.steps * self.tokens_per_step


def budget(cfg: RunConfig, task: Task) -> RunBudget:
    """Steps (train.epochs / max_steps over the task's steps per epoch) and tokens of one run on one device."""
    text = task.training_text()
    per_epoch = task.steps_per_epoch()
    return RunBudget(total_steps(cfg.train, per_epoch), text.tokens / per_epoch, text.mean_length)


def flops_per_token(shape: ModelShape, context: float) -> float:
    """6 N + 12 L_attn d_attn T (training: forward and backward); a layer with a sliding window W counts
    min(T, W) keys instead of T (``ModelShape.attended``)."""
    return 6 * shape.matmul_params + 12 * shape.attention_dim * shape.attended(context)


@dataclass(frozen=True)
class Memory:
    """Bytes per device of one run."""

    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        return self.weights + self.gradients + self.optimizer + self.activations


def memory(shape: ModelShape, cfg: RunConfig, run: RunBudget, hardware: Hardware) -> Memory:
    """Weights, gradients, optimizer state and activations of one run's step (see the module docstring)."""
    body = max(shape.matmul_params - shape.vocab_size * shape.target_dim, 0)
    act_bytes = 2 if cfg.train.precision == "bf16" else 4
    per_token = ACTIVATION_VALUES_PER_WEIGHT * body / shape.dim * act_bytes
    chunk = min(run.tokens_per_step, default_chunk(shape.vocab_size, "cuda" if hardware.kind == "gpu" else "cpu"))
    return Memory(
        weights=4.0 * (shape.learned + shape.fixed),
        gradients=4.0 * shape.learned,
        optimizer=float(OPTIMIZER_BYTES.get(cfg.train.optimizer, 8) * shape.learned),
        activations=run.tokens_per_step * per_token + chunk * shape.vocab_size * 8.0,
    )


@dataclass(frozen=True)
class Throughput:
    tokens_per_s: float
    """training tokens per second of one run on one device."""
    source: str
    """"measured: <where>" or "FLOPs: <peak> x MFU <m> + <overhead> per step"."""


def throughput(
    preset: str, overrides: list[str], cfg: RunConfig, flops: float, run: RunBudget, hardware: Hardware
) -> Throughput:
    """Measured tokens/s where embtie has them for this preset and hardware, else from FLOPs and the peak."""
    precision = cfg.train.precision
    known = measured.lookup(preset, hardware.name, precision, overrides)
    if known is not None:
        return Throughput(known.tokens_per_s, f"measured: {known.source}")
    peak = hardware.peak_flops[precision]
    step_s = flops * run.tokens_per_step / (peak * hardware.mfu) + hardware.step_overhead_s
    how = f"FLOPs: {peak / 1e12:g} TFLOP/s {precision} x MFU {hardware.mfu:g}"
    if hardware.step_overhead_s:
        how += f" + {hardware.step_overhead_s * 1e3:g} ms per step"
    return Throughput(run.tokens_per_step / step_s, how)


@dataclass(frozen=True)
class GridTime:
    runs: int
    run_s: float
    devices: int

    @property
    def wall_s(self) -> float:
        """ceil(runs / devices) rounds of one run each."""
        return math.ceil(self.runs / self.devices) * self.run_s

    @property
    def device_hours(self) -> float:
        return self.runs * self.run_s / 3600

