"""One training loop for every task (language modelling now, translation through its own Task).

Public API::

    from embtie.config import load_config
    from embtie.train import train, load_run

    cfg = load_config("ptb-gpt-tiny", ["sharing.name=l2norm", "train.max_steps=200"])
    summary = train(cfg, "runs/l2norm")      # dict, also in runs/l2norm/summary.json
    run = load_run("runs/l2norm")            # run.config, run.model (run.model.sharing), run.task.vocab
    run.task.evaluate(run.model, "valid")    # {"loss", "ppl", "tokens", ...}

A run directory holds config.yaml (the whole config), vocab.json, metrics.jsonl, checkpoints/ (see
``embtie.checkpoint``) and, once finished, summary.json. Calling ``train`` again on the same
directory resumes from the newest checkpoint (bitwise the same result as an uninterrupted run on
CPU); on a finished run it returns the summary without training.

Under ``torchrun`` every process calls ``train``; the global batch is split across processes (DDP,
gloo on CPU, nccl on GPU) and only rank 0 writes files and validates.
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import yaml
from torch import nn
from torch.nn.parallel import DistributedDataParallel
from tqdm import tqdm

from embtie import checkpoint, runtime, tasks
from embtie.config import RunConfig, config_from_dict
from embtie.errors import ConfigError
from embtie.metrics import perplexity
from embtie.optim import build_optimizer, lr_factor, set_lr, total_steps
from embtie.progress import MetricsLog
from embtie.tasks.base import Task

RESUME_IGNORED = {"train.progress"}
"""config keys that may differ between the first call and a resuming call on the same run directory."""


class Objective(nn.Module):
    """The model and its task's loss as one module, so that DDP sees the whole forward pass."""

    def __init__(self, model: nn.Module, task: Task) -> None:
        super().__init__()
        self.model = model
        self.task = task

    def forward(self, batch: Any, carry: Any) -> tuple[torch.Tensor, torch.Tensor, int, Any]:
        out, carry = self.task.loss(self.model, batch, carry)
        return out.objective, out.ce, out.tokens, carry


@dataclass
class Run:
    """A trained run loaded back: its config, model (strategy at ``model.sharing``), task and summary."""

    config: RunConfig
    model: nn.Module
    task: Task
    summary: dict[str, Any] | None
    checkpoint: Path


def param_counts(model: nn.Module) -> dict[str, int]:
    """Learned elements of the whole model (shared tensors once) and fixed elements of its strategy."""
    learned = sum(p.numel() for p in model.parameters() if p.requires_grad)
    strategy = getattr(model, "sharing", None)
    counts = strategy.parameter_counts() if strategy is not None else {"learned": 0, "fixed": 0}
    return {"params_learned": learned, "params_fixed": counts["fixed"], "params_sharing_learned": counts["learned"]}


def _flatten(d: dict, prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def _config_diff(a: dict, b: dict) -> list[str]:
    """``key: old -> new`` for every dotted key whose value differs (RESUME_IGNORED left out)."""
    fa, fb = _flatten(a), _flatten(b)
    return [
        f"{k}: {fa.get(k)!r} -> {fb.get(k)!r}"
        for k in sorted(set(fa) | set(fb))
        if k not in RESUME_IGNORED and fa.get(k) != fb.get(k)
    ]


def _prepare_dir(cfg: RunConfig, out: Path, rt: runtime.Runtime) -> None:
    path = out / "config.yaml"
    if path.is_file():
        old = config_from_dict(yaml.safe_load(path.read_text(encoding="utf-8")))
        diff = _config_diff(old.to_dict(), cfg.to_dict())
        if diff:
            raise ConfigError(
                f"{out} holds a run with another config ({diff[0]}); resume with the same config, or pass a new --out"
            )
    elif rt.is_main:
        out.mkdir(parents=True, exist_ok=True)
        checkpoint.write_atomic(path, cfg.to_yaml())


def _fresh_state() -> dict[str, Any]:
    return {
        "step": 0,
        "step0_loss": None,
        "tokens_seen": 0,
        "train_time": 0.0,
        "elapsed": 0.0,
        "best_valid_ppl": None,
        "best_valid_step": None,
        "last_eval": None,
        "last_train_loss": None,
        "log_nll": 0.0,
        "log_tokens": 0,
        "log_time": 0.0,
        "metrics_offset": 0,
    }


def train(cfg: RunConfig, out_dir: str | Path) -> dict[str, Any]:
    """Train ``cfg`` into ``out_dir`` (resuming from its newest checkpoint) and return the summary.

    The summary (also RUN_DIR/summary.json) has at least: valid_loss, valid_ppl, best_valid_ppl,
    step0_loss (training loss of the first batch, before any update), train_loss, params_learned,
    params_fixed, tokens_per_s (training tokens per second, all processes), steps, epochs.
    A finished run is not retrained: its summary is returned as it is.
    """
    out = Path(out_dir)
    done = out / "summary.json"
    rt = runtime.setup(cfg.train.device)
    threads = torch.get_num_threads()
    if cfg.train.threads is not None:
        torch.set_num_threads(cfg.train.threads)
    try:
        _prepare_dir(cfg, out, rt)
        if done.is_file():
            summary = json.loads(done.read_text(encoding="utf-8"))
            if summary.get("finished"):
                return summary
        return _train(cfg, out, rt)
    finally:
        torch.set_num_threads(threads)
        runtime.teardown(rt)


def _train(cfg: RunConfig, out: Path, rt: runtime.Runtime) -> dict[str, Any]:
    tc = cfg.train
    dev = rt.device
    torch.manual_seed(cfg.seed)
    task = tasks.get(cfg.task)(cfg)
    if rt.is_main:
        task.save(out)
    model = task.build_model().to(dev)
    optimizer = build_optimizer(model, tc)
    spe = task.steps_per_epoch(rt.world_size)
    total = total_steps(tc, spe)
    log = MetricsLog(out, enabled=rt.is_main)

    st = _fresh_state()
    carry: Any = None
    ckpt = checkpoint.latest(out)
    if ckpt is not None:
        checkpoint.load_weights(model, ckpt)
        st = checkpoint.load_state(ckpt)
        if st.get("world_size", 1) != rt.world_size:
            raise ConfigError(
                f"{out} was trained with {st.get('world_size')} processes; resume it with the same number"
            )
        checkpoint.load_optimizer(optimizer, ckpt, st)
        mine = checkpoint.load_rank(ckpt, rt.rank)
        torch.set_rng_state(mine["rng.cpu"])
        if dev.type == "cuda" and "rng.cuda" in mine:
            torch.cuda.set_rng_state(mine["rng.cuda"], dev)
        carry = task.carry_from_tensors(mine, dev)
        log.truncate(st["metrics_offset"])
    else:
        log.truncate(0)
        torch.manual_seed(cfg.seed * 7919 + 1 + rt.rank)  # dropout streams differ between processes

    objective: nn.Module = Objective(model, task)
    if rt.distributed:
        objective = DistributedDataParallel(objective, device_ids=[dev.index] if dev.type == "cuda" else None)
    if tc.compile:
        objective = torch.compile(objective)

    counts = param_counts(model)
    session_start = time.perf_counter()
    elapsed0 = st["elapsed"]

    def elapsed() -> float:
        return elapsed0 + time.perf_counter() - session_start

    log_nll = torch.tensor(st["log_nll"], dtype=torch.float64, device=dev)
    log_tokens = st["log_tokens"]
    log_time = st["log_time"]
    t_log = time.perf_counter()

    def pause_clock() -> None:
        """Book the training time since the last mark (evaluation and checkpoints are not training)."""
        nonlocal t_log, log_time
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        now = time.perf_counter()
        log_time += now - t_log
        st["train_time"] += now - t_log
        t_log = now

    def do_eval(step: int, max_batches: int | None) -> dict[str, Any] | None:
        res = None
        if rt.is_main:
            res = task.evaluate(model, "valid", max_batches=max_batches)
            res = {"step": step, "full": max_batches is None, "loss": res["loss"], "ppl": res["ppl"],
                   "tokens": res["tokens"]}  # fmt: skip
            log.write({"step": step, "split": "valid", "loss": res["loss"], "ppl": res["ppl"],
                       "tokens": res["tokens"], "elapsed": elapsed()})  # fmt: skip
            if st["best_valid_ppl"] is None or res["ppl"] < st["best_valid_ppl"]:
                st["best_valid_ppl"], st["best_valid_step"] = res["ppl"], step
            st["last_eval"] = res
        runtime.barrier(rt)
        return res

    def save_checkpoint(step: int) -> None:
        nonlocal log_nll
        d = checkpoint.tmp_dir(out, step)
        if rt.is_main:
            checkpoint.begin(out, step)
        runtime.barrier(rt)
        mine = {"rng.cpu": torch.get_rng_state(), **task.carry_to_tensors(carry)}
        if dev.type == "cuda":
            mine["rng.cuda"] = torch.cuda.get_rng_state(dev)
        checkpoint.save_rank(d, rt.rank, mine)
        runtime.barrier(rt)
        if rt.is_main:
            state = {**st, "step": step, "elapsed": elapsed(), "log_nll": float(log_nll), "log_tokens": log_tokens,
                     "log_time": log_time, "metrics_offset": log.offset(), "world_size": rt.world_size,
                     "steps_per_epoch": spe, "total_steps": total}  # fmt: skip
            checkpoint.commit(out, step, model, optimizer, state, keep=tc.keep_checkpoints)
        runtime.barrier(rt)

    bar = tqdm(
        total=total,
        initial=st["step"],
        disable=not (rt.is_main and tc.progress),
        desc=f"{cfg.sharing.name}",
        dynamic_ncols=True,
        leave=True,
    )
    step = st["step"]
    model.train()
    while step < total:
        epoch, index = divmod(step, spe)
        if index == 0:
            carry = task.init_carry(model, rt.rank, rt.world_size, dev)
        batch = task.train_batch(epoch, index, rt.rank, rt.world_size, dev)
        lr = tc.lr * lr_factor(step, tc, total, spe)
        set_lr(optimizer, lr)
        with runtime.autocast(dev, tc.precision):
            obj, ce, ntok, carry = objective(batch, carry)
        obj.backward()
        if tc.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), tc.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        log_nll += ce.detach().double() * ntok
        log_tokens += ntok
        if step == 0:
            nll0, tok0 = runtime.all_reduce_sum([float(ce) * ntok, float(ntok)], rt)
            st["step0_loss"] = nll0 / tok0
            log.write({"step": 0, "split": "train", "loss": st["step0_loss"], "ppl": perplexity(nll0, int(tok0)),
                       "lr": lr, "tokens_per_s": None, "elapsed": elapsed()})  # fmt: skip
        step += 1
        bar.update(1)
        st["tokens_seen"] += ntok * rt.world_size

        if step % tc.log_every == 0 or step == total:
            pause_clock()
            nll, toks = runtime.all_reduce_sum([float(log_nll), float(log_tokens)], rt)
            loss = nll / toks
            tps = toks / log_time if log_time > 0 else None
            st["last_train_loss"] = loss
            log.write({"step": step, "split": "train", "epoch": round(step / spe, 4), "loss": loss,
                       "ppl": perplexity(nll, int(toks)), "lr": lr, "tokens_per_s": tps,
                       "elapsed": elapsed()})  # fmt: skip
            bar.set_postfix(loss=f"{loss:.3f}", ppl=f"{math.exp(min(loss, 700)):.1f}", tok_s=f"{tps or 0:.0f}")
            log_nll.zero_()
            log_tokens, log_time = 0, 0.0

        epoch_end = step % spe == 0
        periodic = (tc.eval_every and step % tc.eval_every == 0) or (not tc.eval_every and epoch_end)
        ckpt_now = (
            step == total
            or (tc.checkpoint_every and step % tc.checkpoint_every == 0)
            or (not tc.checkpoint_every and epoch_end)
        )
        if step == total or periodic or ckpt_now:
            pause_clock()
        if step == total:
            do_eval(step, None)
        elif periodic:
            res = do_eval(step, tc.eval_batches)
            if res is not None:
                bar.write(f"step {step}: valid ppl {res['ppl']:.2f}")
        if ckpt_now:
            save_checkpoint(step)
        if step == total or periodic or ckpt_now:
            t_log = time.perf_counter()
    bar.close()

    last = st["last_eval"]
    missing = rt.is_main and (last is None or last["step"] != total or not last["full"])
    if runtime.all_reduce_sum([float(missing)], rt)[0] > 0:  # every rank takes the same branch
        do_eval(total, None)  # resumed after the final checkpoint but without a final evaluation
        last = st["last_eval"]
    summary: dict[str, Any] = {}
    if rt.is_main:
        assert last is not None
        tokens_per_s = st["tokens_seen"] / st["train_time"] if st["train_time"] > 0 else None
        summary = {
            "task": cfg.task,
            "model": cfg.model.name,
            "strategy": cfg.sharing.name,
            "valid_loss": last["loss"],
            "valid_ppl": last["ppl"],
            "best_valid_ppl": st["best_valid_ppl"],
            "best_valid_step": st["best_valid_step"],
            "step0_loss": st["step0_loss"],
            "train_loss": st["last_train_loss"],
            **counts,
            "tokens_per_s": tokens_per_s,
            "tokens_seen": st["tokens_seen"],
            "steps": total,
            "epochs": total / spe,
            "train_time_s": st["train_time"],
            "elapsed_s": elapsed(),
            "world_size": rt.world_size,
            "device": str(dev),
            "finished": True,
        }
        checkpoint.write_atomic(out / "summary.json", json.dumps(summary, indent=1))
    log.close()
    runtime.barrier(rt)
    if not rt.is_main:
        summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    return summary


def load_run(run_dir: str | Path, device: str | torch.device = "cpu") -> Run:
    """Load a run directory: its config, its task (vocabulary from vocab.json) and its model with the
    newest checkpoint's weights (tied tensors stay one tensor), in eval mode on ``device``."""
    d = Path(run_dir)
    cfg_path = d / "config.yaml"
    if not cfg_path.is_file():
        raise ConfigError(f"{d} is not a run directory (no config.yaml); give the --out folder of `embtie train`")
    cfg = config_from_dict(yaml.safe_load(cfg_path.read_text(encoding="utf-8")))
    ckpt = checkpoint.latest(d)
    if ckpt is None:
        raise ConfigError(f"{d} has no checkpoint yet; train it first with `embtie train ... --out {d}`")
    task = tasks.get(cfg.task).load(cfg, d)
    model = task.build_model()
    checkpoint.load_weights(model, ckpt)
    model.to(device).eval()
    summary_path = d / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.is_file() else None
    return Run(config=cfg, model=model, task=task, summary=summary, checkpoint=ckpt)
