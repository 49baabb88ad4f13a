"""The ``train`` section of a run config: optimizer, schedule, length, precision, evaluation, logging."""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field, fields, replace
from typing import Annotated, ClassVar, Literal

from embtie.errors import ConfigError
from embtie.schema import TRAINING_STEPS, Declared, Rule, Setting


def _is_device(text: str) -> bool:
    return text in ("auto", "cpu") or text.startswith("cuda")


@dataclass
class TrainConfig(Declared):
    """Optimisation, schedule, precision, evaluation and logging of one run."""

    section = "train"

    optimizer: Annotated[
        Literal["adamw", "sgd", "muon"],
        Setting(
            "the optimizer; muon: torch.optim.Muon for the body's 2-D matrices (nn.Linear weights outside the "
            "strategy), AdamW (betas, eps) for everything else (modded-nanogpt)"
        ),
    ] = "adamw"
    lr: Annotated[
        float, Setting("peak learning rate (after warmup); the presets reach 35 (SGD on LSTMs)", gt=0, le=100)
    ] = 1e-3
    betas: Annotated[list[float], Setting("AdamW's (beta1, beta2) moment decay rates", length=2, ge=0, lt=1)] = field(
        default_factory=lambda: [0.9, 0.95]
    )
    eps: Annotated[float, Setting("AdamW's epsilon, added to the root of the second moment", gt=0, le=1)] = 1e-8
    momentum: Annotated[float, Setting("SGD momentum (sgd only); 1 or more never decays the velocity", ge=0, lt=1)] = (
        0.0
    )
    weight_decay: Annotated[
        float, Setting("decoupled (adamw) or L2 (sgd) decay of the model's matrices (ndim >= 2)", ge=0)
    ] = 0.0
    embedding_weight_decay: Annotated[
        float,
        Setting("decay of the strategy's vocabulary-sized matrices (E, O), in a parameter group of their own", ge=0),
    ] = 0.0
    embedding_lr: Annotated[
        float | None,
        Setting(
            "peak lr of the input tables (E; a tied E is both tables), on the same schedule as train.lr",
            gt=0,
            le=100,
            null="train.lr",
        ),
    ] = None
    embedding_betas: Annotated[
        list[float] | None,
        Setting("AdamW's (beta1, beta2) for the input tables", length=2, ge=0, lt=1, null="train.betas"),
    ] = None
    head_lr: Annotated[
        float | None,
        Setting(
            "peak lr of a separate learned head O (untied, tie-untie); refused for a strategy without one",
            gt=0,
            le=100,
            null="embedding_lr",
        ),
    ] = None
    head_betas: Annotated[
        list[float] | None,
        Setting("AdamW's (beta1, beta2) for a separate head O", length=2, ge=0, lt=1, null="embedding_betas"),
    ] = None
    head_weight_decay: Annotated[
        float | None, Setting("decay of a separate head O", ge=0, null="embedding_weight_decay")
    ] = None
    muon_lr: Annotated[
        float | None,
        Setting("peak lr of the Muon group (optimizer muon), on train.lr's schedule", gt=0, le=100, null="train.lr"),
    ] = None
    muon_momentum: Annotated[float, Setting("Muon's momentum (optimizer muon; Nesterov)", ge=0, lt=1)] = 0.95
    muon_adjust_lr: Annotated[
        Literal["original", "match_rms_adamw"],
        Setting(
            "Muon's lr scaling per matrix shape: original (Keller Jordan: sqrt(max(1, rows/cols))) or "
            "match_rms_adamw (Moonshot: 0.2 sqrt(max(rows, cols)), so AdamW's lr and decay carry over)"
        ),
    ] = "match_rms_adamw"
    schedule: Annotated[
        Literal["constant", "cosine", "linear", "inverse_sqrt", "step", "plateau"],
        Setting(
            "lr decay after warmup; step: times decay_factor every epoch after decay_after_epochs; plateau: "
            "times decay_factor after plateau_patience validations without improvement of monitor"
        ),
    ] = "constant"
    warmup_steps: Annotated[int, Setting("linear warmup from 0 to lr over this many optimizer steps", ge=0)] = 0
    min_lr_ratio: Annotated[float, Setting("cosine and linear decay end at lr * min_lr_ratio", ge=0, le=1)] = 0.0
    decay_factor: Annotated[
        float, Setting("the lr multiplier of the step and plateau schedules (1: no decay)", gt=0, le=1)
    ] = 0.5
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
        replace(
            TRAINING_STEPS,
            help="cap on optimizer steps, whatever epochs says; the schedule spans the capped length",
            null="no cap",
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
    compile: Annotated[
        bool,
        Setting(
            "torch.compile the training step (model and loss; inductor): the first steps compile (a minute or more "
            "on a small CPU); dropout draws other masks than eager"
        ),
    ] = False
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
        betas = [k for k, v in (("embedding_betas", self.embedding_betas), ("head_betas", self.head_betas)) if v]
        if self.optimizer == "sgd" and betas:
            raise ConfigError(f"train.{betas[0]} is set but train.optimizer=sgd has no betas; drop it or use adamw")
        if self.optimizer == "muon" and self.parallel == "fsdp":
            raise ConfigError(
                "train.optimizer=muon orthogonalises whole matrices, which train.parallel=fsdp splits across "
                "processes; use train.parallel=ddp with muon"
            )
        if self.optimizer != "muon" and self.muon_lr is not None:
            raise ConfigError(f"train.muon_lr is set but train.optimizer={self.optimizer}; set train.optimizer=muon")

    UNUSED_BY: ClassVar[dict[str, tuple[str, ...]]] = {
        "momentum": ("adamw", "muon"),
        "betas": ("sgd",),
        "eps": ("sgd",),
        "muon_momentum": ("sgd", "adamw"),
        "muon_adjust_lr": ("sgd", "adamw"),
    }
    """key -> the optimizers that never read it (``check_given``)."""

    def differs(self, key: str) -> bool:
        """Whether ``train.<key>`` holds another value than its default (a whole config written by
        ``to_yaml`` spells every default out; False for a key that is not one)."""
        f = next((f for f in fields(self) if f.name == key), None)
        if f is None:
            return False
        default = f.default_factory() if f.default_factory is not MISSING else f.default
        return bool(getattr(self, key) != default)

    def check_given(self, keys: list[str]) -> None:
        """A one-line ConfigError when the user gave (``keys``: the ``train.*`` keys of their overrides or
        their own YAML file) a key that ``optimizer`` never reads: it would change nothing, and a variant that
        differs by it alone would be compared with itself. A preset's own values (AdamW betas that stay when a
        user switches to sgd) are not the user's and pass."""
        for key in keys:
            unused = self.UNUSED_BY.get(key.removeprefix("train."), ()) if key.startswith("train.") else ()
            if self.optimizer in unused:
                readers = sorted({"sgd", "adamw", "muon"} - set(unused))
                verb = "does" if len(readers) == 1 else "do"
                raise ConfigError(
                    f"{key} is set but train.optimizer={self.optimizer} does not use it (only {' and '.join(readers)} "
                    f"{verb}): drop it, or set train.optimizer={readers[0]}"
                )

    def head_keys(self) -> list[str]:
        """The ``train.head_*`` keys this config sets (not null)."""
        given = (
            ("head_lr", self.head_lr),
            ("head_betas", self.head_betas),
            ("head_weight_decay", self.head_weight_decay),
        )
        return [f"train.{k}" for k, v in given if v is not None]

    def check_head(self, has_head: bool, owner: str) -> None:
        """A one-line ConfigError when a ``head_*`` key is set and the model has no separate learned head (its
        output layer is the input table, or fixed): the setting would apply to nothing."""
        keys = self.head_keys()
        if keys and not has_head:
            raise ConfigError(
                f"{keys[0]} is set but {owner} has no separate learned head (its output layer is the "
                "input table E or a fixed matrix, which takes the train.embedding_* settings); drop "
                f"{keys[0]} and set the train.embedding_* key, or use a strategy with its own head (untied, tie-untie)"
            )
