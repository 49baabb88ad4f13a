"""Train one small transformers model per sharing strategy with the Hugging Face Trainer and report
validation perplexity: the example of ``embtie.hf.apply`` in a training loop that is not embtie's (one seed,
no verdicts; ``embtie compare`` with ``model.name=hf`` is the comparison, and ``embtie hf-compare`` runs it).

Every strategy starts from the same body (drawn with the same seed). E is the strategy's own init
(``init="strategy"``, the default, as embtie's models draw it) or the model's own initial embedding copied
by ``apply`` (``init="model"``). The latter is not neutral: GPT-2 draws its embedding with std 0.02, which
makes tied's step-0 logits nearly flat while a row-normalising strategy (l2norm) does not see the scale;
it is how l2norm once looked 45% better than tied here (docs/hf-agreement.md).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from embtie import sharing as catalogue
from embtie.analysis.param_counts import count_parameters
from embtie.data.lm_corpora import EOS, Corpus
from embtie.errors import ConfigError
from embtie.hf._require import require_transformers
from embtie.hf.lm_data import lm_datasets
from embtie.hf.patch import apply, sharing_of
from embtie.hf.sources import build_model, model_config, read_model_config


@dataclass
class HFCompareConfig:
    """One ``embtie hf-compare`` run."""

    model_config: str
    """a packaged config name (``gpt2-tiny``, ``llama-tiny``) or the path of a transformers config JSON with
    ``model_type`` (a decoder-only family); vocab_size is set to the dataset's vocabulary."""
    strategies: list[str] = field(default_factory=lambda: ["tied", "l2norm", "fixed"])
    options: dict[str, dict[str, Any]] = field(default_factory=dict)
    """strategy name -> options for ``embtie.hf.apply`` (e.g. {"fixed": {"logit_scale": "learned"}})."""
    out: str = "runs/hf-compare"
    dataset: str | Corpus = "ptb"
    """a catalogue dataset (ptb, wikitext-2) or the user's corpus and tokenizer."""
    steps: int = 300
    block: int = 64
    """tokens per training example (each block of block+1 tokens predicts block tokens)."""
    batch_size: int = 16
    eval_batch_size: int = 32
    lr: float = 3e-3
    warmup_steps: int = 30
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    seed: int = 0
    init: str = "strategy"
    """"strategy": the strategy's own init of E (e.g. std d**-0.5; tied-loginit's ln(V)/d), as embtie's
    models; "model": E starts as the model's own initial embedding (same for every strategy; GPT-2's std
    0.02 favours row-normalising strategies, docs/hf-agreement.md)."""
    device: str = "auto"
    """auto (what the Trainer picks), or cpu."""
    train_tokens: int | None = None
    """use only this many training tokens (quick runs); None: the whole split."""
    valid_tokens: int | None = None
    save_models: bool = False
    """save_pretrained each trained model into OUT/STRATEGY/model (load with embtie.hf.load)."""

    def validate(self) -> None:
        if not self.strategies:
            raise ConfigError("give at least one strategy, e.g. --strategies tied,l2norm,fixed")
        for name in [*self.strategies, *self.options]:
            catalogue.get(name)  # ConfigError listing the valid names
        for key in ("steps", "block", "batch_size", "eval_batch_size"):
            if getattr(self, key) < 1:
                raise ConfigError(f"{key.replace('_', '-')}={getattr(self, key)} must be >= 1")
        if self.init not in ("model", "strategy"):
            raise ConfigError(f"init={self.init!r} must be 'model' or 'strategy'")
        if self.device not in ("auto", "cpu"):
            raise ConfigError(f"device={self.device!r} must be 'auto' or 'cpu'")


def _train_one(cfg: HFCompareConfig, raw: dict[str, Any], strategy: str, data, out: Path, log) -> dict[str, Any]:
    transformers = require_transformers()
    vocab, train_ds, valid_ds = data
    options = dict(cfg.options.get(strategy, {}))
    torch.manual_seed(cfg.seed)
    model = build_model(model_config(raw, len(vocab), vocab.stoi.get(EOS)))
    # prediction_loss_only evaluation: no logits with the loss, in eval mode too (memory-lean throughout)
    apply(model, strategy, copy_weights=cfg.init == "model", logits_with_labels=False, **options)
    model.train()
    args = transformers.TrainingArguments(
        output_dir=str(out / "trainer"),
        max_steps=cfg.steps,
        per_device_train_batch_size=cfg.batch_size,
        per_device_eval_batch_size=cfg.eval_batch_size,
        learning_rate=cfg.lr,
        warmup_steps=cfg.warmup_steps,
        lr_scheduler_type="cosine",
        weight_decay=cfg.weight_decay,
        adam_beta2=0.95,
        max_grad_norm=cfg.grad_clip,
        logging_steps=max(1, cfg.steps // 20),
        save_strategy="no",
        report_to=[],
        seed=cfg.seed,
        data_seed=cfg.seed,
        disable_tqdm=True,
        prediction_loss_only=True,
        use_cpu=cfg.device == "cpu",
        dataloader_num_workers=0,
        dataloader_pin_memory=torch.cuda.is_available(),
    )
    from embtie.hf.callback import EmbtieCallback

    trainer = transformers.Trainer(model=model, args=args, train_dataset=train_ds, eval_dataset=valid_ds)
    trainer.remove_callback(transformers.trainer_callback.PrinterCallback)
    trainer.add_callback(_progress_callback(transformers, log))
    trainer.add_callback(_finite_callback(transformers, sharing_of(model), strategy, cfg.lr))
    trainer.add_callback(EmbtieCallback())  # the strategy's step hooks (tie-untie's switch)
    start = trainer.evaluate()["eval_loss"]
    t0 = time.perf_counter()
    trainer.train()
    seconds = time.perf_counter() - t0
    end = trainer.evaluate()["eval_loss"]
    if not math.isfinite(end):
        from embtie.training.nonfinite import NonFiniteError

        raise NonFiniteError(
            f"strategy {strategy}: the validation loss after training is {end} (training diverged); lower --lr "
            f"(now {cfg.lr:g}), then run the command again"
        )
    log = [(h["step"], h["loss"]) for h in trainer.state.log_history if "loss" in h]
    s = sharing_of(model)
    result = {
        "strategy": strategy,
        "options": model.config.embtie["options"],
        "conventions": model.config.embtie["conventions"],
        "steps": trainer.state.global_step,
        "valid_loss_start": start,
        "valid_loss": end,
        "valid_ppl_start": _ppl(start),
        "valid_ppl": _ppl(end),
        "train_loss_first": log[0][1] if log else None,
        "train_loss_last": log[-1][1] if log else None,
        "train_log": log,
        "sharing_params": s.parameter_counts(),
        "model_params_learned": count_parameters(model, s).learned,
        "train_seconds": seconds,
        "device": str(trainer.args.device),
    }
    if cfg.save_models:
        model.save_pretrained(out / "model")
    return result


def _ppl(loss: float) -> float:
    """exp(loss), inf past what a float holds (a diverged run's perplexity, not an OverflowError)."""
    return math.exp(loss) if loss < 709 else math.inf


def _finite_callback(transformers, shared, strategy: str, lr: float):
    """Stop on the first step after which the output matrix is not finite (a non-finite loss or gradient
    reaches every weight in that step), as ``embtie train`` does: a NonFiniteError naming the step and the
    fix, never results of NaN with exit status 0."""
    from embtie.training.nonfinite import NonFiniteError

    class Finite(transformers.TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if not bool(torch.isfinite(shared.weight).all()):
                raise NonFiniteError(
                    f"strategy {strategy}: the weights are not finite after step {state.global_step} (the loss or "
                    f"its gradient diverged); nothing was written for it: lower --lr (now {lr:g}) or the warmup's "
                    "peak, then run the command again"
                )

    return Finite()


def _progress_callback(transformers, log):
    class Progress(transformers.TrainerCallback):
        """One line per logging step: step, train loss, seconds so far."""

        def on_train_begin(self, args, state, control, **kwargs):
            self.t0 = time.perf_counter()

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs and state.is_world_process_zero:
                secs = time.perf_counter() - self.t0
                log(f"    step {state.global_step}/{state.max_steps} train loss {logs['loss']:.3f} ({secs:.0f} s)")

    return Progress()


def run_hf_compare(cfg: HFCompareConfig, log=print) -> dict[str, Any]:
    """Train every strategy of ``cfg``; write OUT/results.json and OUT/results.md; return the results."""
    require_transformers()
    cfg.validate()
    raw = read_model_config(cfg.model_config)
    model_config(raw, 2, 0)  # refuse a bad model config before loading data
    data = lm_datasets(cfg.dataset, cfg.block, cfg.train_tokens, cfg.valid_tokens)
    vocab, train_ds, valid_ds = data
    out = Path(cfg.out)
    out.mkdir(parents=True, exist_ok=True)
    log(
        f"hf-compare: {raw['model_type']} from {cfg.model_config}, {cfg.dataset} (V={len(vocab)}, "
        f"{train_ds.predicted_tokens} train / {valid_ds.predicted_tokens} valid tokens), {cfg.steps} steps"
    )
    results = []
    for strategy in cfg.strategies:
        r = _train_one(cfg, raw, strategy, data, out / strategy, log)
        results.append(r)
        (out / strategy).mkdir(parents=True, exist_ok=True)
        (out / strategy / "result.json").write_text(json.dumps(r, indent=2))
        log(
            f"  {strategy}: train loss {r['train_loss_first']:.3f} -> {r['train_loss_last']:.3f}, "
            f"valid ppl {r['valid_ppl_start']:.1f} -> {r['valid_ppl']:.2f} ({r['train_seconds']:.0f} s)"
        )
    report = {
        "config": asdict(cfg),
        "model_config": raw,
        "vocab_size": len(vocab),
        "valid_tokens": valid_ds.predicted_tokens,
        "results": results,
    }
    (out / "results.json").write_text(json.dumps(report, indent=2))
    table = results_table(results)
    (out / "results.md").write_text(table + "\n")
    log(table)
    return report


def results_table(results: list[dict[str, Any]]) -> str:
    """A Markdown table: one row per strategy."""
    lines = [
        "| strategy | valid ppl | valid ppl at step 0 | train loss first -> last | sharing params | seconds |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['strategy']} | {r['valid_ppl']:.2f} | {r['valid_ppl_start']:.1f} | "
            f"{r['train_loss_first']:.3f} -> {r['train_loss_last']:.3f} | {r['sharing_params']['learned']:,} | "
            f"{r['train_seconds']:.0f} |"
        )
    return "\n".join(lines)
