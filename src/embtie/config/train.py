"""The ``train`` section of a run config: optimizer, schedule, length, precision, evaluation, logging."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Literal

from embtie.errors import ConfigError
from embtie.schema import Declared, Rule, Setting


def _is_device(text: str) -> bool:
    return text in ("auto", "cpu") or text.startswith("cuda")


@dataclass
class TrainConfig(Declared):
    """Optimisation, schedule, precision, evaluation and logging of one run."""

    section = "train"

    optimizer: Annotated[Literal["adamw", "sgd"], Setting("the optimizer")] = "adamw"
    lr: Annotated[float, Setting("peak learning rate (after warmup)", gt=0)] = 1e-3
    betas: Annotated[list[float], Setting("AdamW's (beta1, beta2) moment decay rates", length=2, ge=0, lt=1)] = field(
        default_factory=lambda: [0.9, 0.95]
    )
    eps: Annotated[float, Setting("AdamW's epsilon, added to the root of the second moment", gt=0)] = 1e-8
    momentum: Annotated[float, Setting("SGD momentum (sgd only)", ge=0)] = 0.0
    weight_decay: Annotated[
        float, Setting("decoupled (adamw) or L2 (sgd) decay of the model's matrices (ndim >= 2)", ge=0)
    ] = 0.0
    embedding_weight_decay: Annotated[
        float,
        Setting("decay of the strategy's vocabulary-sized matrices (E, O), in a parameter group of their own", ge=0),
    ] = 0.0
    schedule: Annotated[
        Literal["constant", "cosine", "linear", "inverse_sqrt", "step", "plateau"],
        Setting(
            "lr decay after warmup; step: times decay_factor every epoch after decay_after_epochs; plateau: "
            "times decay_factor after plateau_patience validations without improvement of monitor"
        ),
    ] = "constant"
    warmup_steps: Annotated[int, Setting("linear warmup from 0 to lr over this many optimizer steps", ge=0)] = 0
    min_lr_ratio: Annotated[float, Setting("cosine and linear decay end at lr * min_lr_ratio", ge=0)] = 0.0
    decay_factor: Annotated[float, Setting("the lr multiplier of the step and plateau schedules", gt=0)] = 0.5
    decay_after_epochs: Annotated[int, Setting("step schedule: the epochs at the full lr before decaying", ge=0)] = 4
    plateau_patience: Annotated[
        int, Setting("validations without improvement of monitor before a plateau schedule decays the lr", ge=1)
    ] = 8
    monitor: Annotated[
        Literal["loss", "bleu"],
        Setting(
            "the validation metric that picks checkpoints/best and drives the plateau schedule and early "
            "stopping: loss (lower is better) or bleu (translation: greedy decoding, higher is better)"
        ),
    ] = "loss"
    early_stop: Annotated[
        int, Setting("stop after this many validations without improvement of monitor (0: never)", ge=0)
    ] = 0
    epochs: Annotated[
        float | None,
        Setting("training length in epochs (fractions allowed); max_steps caps it", gt=0, null="max_steps decides"),
    ] = 1.0
    max_steps: Annotated[
        int | None,
        Setting(
            "cap on optimizer steps, whatever epochs says; the schedule spans the capped length", ge=1, null="no cap"
        ),
    ] = None
    grad_clip: Annotated[
        float | None, Setting("clip the global gradient norm to this value", gt=0, null="no clipping")
    ] = 1.0
    precision: Annotated[
        Literal["fp32", "bf16"], Setting("bf16: autocast matmuls to bfloat16 (weights and optimizer state stay fp32)")
    ] = "fp32"
    device: Annotated[
        str,
        Setting(
            "auto (cuda when available, else cpu), cpu, cuda or cuda:N",
            rule=Rule(_is_device, "auto, cpu, cuda or cuda:N"),
        ),
    ] = "auto"
    eval_every: Annotated[
        int,
        Setting("validate every N steps (0: at the end of each epoch only); the final validation is always done", ge=0),
    ] = 0
    eval_batches: Annotated[
        int | None,
        Setting(
            "cap on validation batches during training; the final validation is always whole",
            ge=1,
            null="the whole split",
        ),
    ] = None
    log_every: Annotated[
        int, Setting("write a train record to metrics.jsonl every N steps (their mean loss)", ge=1)
    ] = 20
    checkpoint_every: Annotated[
        int, Setting("write a checkpoint every N steps (0: only at epoch ends); one is always written at the end", ge=0)
    ] = 500
    keep_checkpoints: Annotated[
        int, Setting("keep the newest N checkpoints (checkpoint averaging, embtie average --last N, needs N)", ge=1)
    ] = 1
    accumulate: Annotated[
        int,
        Setting(
            "gradient accumulation: each optimizer step averages the gradients of this many consecutive "
            "batches (1: none); an epoch has ceil(batches / accumulate) steps, step-based options count steps",
            ge=1,
        ),
    ] = 1
    progress: Annotated[bool, Setting("show a tqdm progress bar (rank 0 only)")] = True
    compile: Annotated[bool, Setting("torch.compile the model")] = False
    parallel: Annotated[
        Literal["ddp", "fsdp"],
        Setting(
            "how a multi-process (torchrun) run spreads the model: ddp (every process holds all weights) or "
            "fsdp (FSDP2 fully_shard; checkpoints are gathered to the single-process format)"
        ),
    ] = "ddp"
    threads: Annotated[
        int | None,
        Setting(
            "CPU threads of this process (torch.set_num_threads); on a busy machine 1 can beat 2",
            ge=1,
            null="torch's default",
        ),
    ] = None
    path_probe: Annotated[
        int,
        Setting(
            "at every validation, split the gradient of this many fixed training batches into its input- and "
            "output-path parts per vocabulary row (RUN_DIR/path_shares.npz); 0: off; training is unchanged",
            ge=0,
        ),
    ] = 0
    skip_nonfinite: Annotated[
        int,
        Setting(
            "a step with a non-finite loss or gradient stops training (0); N > 0 skips up to N such steps "
            "(no update; counted in the summary) and stops at the next",
            ge=0,
        ),
    ] = 0

    def check(self) -> None:
        if self.epochs is None and self.max_steps is None:
            raise ConfigError("train.epochs and train.max_steps are both null; set at least one")
