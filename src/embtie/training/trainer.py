"""``Trainer``: the training recipe of one run directory, read top to bottom.

``setup()`` builds the task, model and optimizer and restores the newest checkpoint (or seeds a fresh
run); ``fit()`` repeats ``train_step()`` (one optimizer step) and ``after_step()`` (log record,
validation, checkpoint) until the last step; ``finish()`` makes sure the final validation exists and
writes the summary. Where new training features go:

- gradient accumulation: ``train_step`` (several micro-batches before the optimizer step);
- a schedule that reads validation metrics (plateau) and early stopping: ``on_validation``, which sees
  every validation result; its decision must be shared with every process and kept in ``TrainState``
  so that a resume continues it;
- when to validate or checkpoint: ``after_step``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import torch

from embtie import files, progress, runtime, tasks
from embtie.analysis.param_counts import count_parameters
from embtie.config import RunConfig
from embtie.sharing.base import strategy_of
from embtie.sharing.capabilities import VocabularyTables
from embtie.training import monitor, nonfinite, parallel, resume
from embtie.training.clock import Clock
from embtie.training.metrics_log import MetricsLog
from embtie.training.objective import Objective, split
from embtie.training.optim import build_optimizer, check_reach, lr_factor, set_lr, total_steps
from embtie.training.path_shares import PathShareProbe
from embtie.training.run_summary import summary_record
from embtie.training.state import TrainState
from embtie.training.train_log import TrainLog


class Trainer:
    """Trains ``cfg`` into the run directory ``out`` on the processes of ``rt`` (rank 0 writes files)."""

    def __init__(self, cfg: RunConfig, out: Path, rt: runtime.Runtime) -> None:
        self.cfg, self.out, self.rt, self.tc = cfg, out, rt, cfg.train

    # ------------------------------------------------------------------ setup
    def setup(self) -> None:
        """Task, model, optimizer, schedule length; the newest checkpoint restored, or a fresh start."""
        cfg, rt = self.cfg, self.rt
        ckpt = resume.resumable(self.out, rt.rank)  # before anything is written to the run
        torch.manual_seed(cfg.seed)
        self.task = tasks.get(cfg.task)(cfg)
        if rt.is_main:
            self.task.save(self.out)
        self.model = self.task.build_model().to(rt.device)
        self.objective = parallel.prepare(self.model, Objective(self.model, self.task), self.tc, rt)
        self.optimizer = build_optimizer(self.model, self.tc)  # after prepare: FSDP replaces the parameters
        reach = check_reach(self.model, self.tc)
        if reach is not None and rt.is_main:
            print(reach, file=sys.stderr)
        self.batches_per_epoch = self.task.steps_per_epoch(rt.world_size)
        self.steps_per_epoch = -(-self.batches_per_epoch // self.tc.accumulate)
        self.total = total_steps(self.tc, self.steps_per_epoch)
        if ckpt is None:
            self.state, self.carry = TrainState(), None
            torch.manual_seed(cfg.seed * 7919 + 1 + rt.rank)  # dropout streams differ between processes
        else:  # before the logs are opened: a checkpoint that cannot be used changes nothing in the run
            self.state, self.carry = resume.restore(ckpt, self.model, self.optimizer, self.task, rt)
        metrics = MetricsLog(self.out, enabled=rt.is_main)
        metrics.truncate(0 if ckpt is None else self.state.metrics_offset)
        self.resumed = None if ckpt is None else (ckpt.name, self.state.step)
        """(checkpoint, step) this process resumed from: a non-finite first step after it blames the checkpoint."""
        self.probe = None
        if self.tc.path_probe and rt.is_main:
            self.probe = PathShareProbe(self.task, self.model, self.out, self.tc.path_probe, rt.device)
            self.probe.resume(self.state.step if ckpt is not None else -1)
        self.step_hooks = [m.on_train_step for m in self.model.modules() if isinstance(m, VocabularyTables)]
        """the ``on_train_step(step, total, optimizer)`` of the strategy (and of any other vocabulary
        table), found once instead of at every step."""
        self.counts = count_parameters(self.model, strategy_of(self.model))
        self.clock = Clock(self.state.elapsed, rt.device)
        bar = progress.bar(total=self.total, desc=cfg.sharing.name, unit="step", leave=True, initial=self.state.step,
                           enabled=rt.is_main and self.tc.progress)  # fmt: skip
        self.log = TrainLog(metrics, self.state, rt, bar)

    # ------------------------------------------------------------------ the loop
    def fit(self) -> None:
        """Train from the current step to the last one."""
        self.model.train()
        while self.state.step < self.total and not self.state.stopped_early:
            lr = self.train_step()
            self.after_step(lr)
        self.log.bar.close()

    def train_step(self) -> float:
        """One optimizer step on the next training batch of this process (``train.accumulate``
        consecutive micro-batches); returns its learning rate."""
        st, tc, rt = self.state, self.tc, self.rt
        epoch, index = divmod(st.step, self.steps_per_epoch)
        if index == 0:
            self.carry = self.task.init_carry(self.model, rt.rank, rt.world_size, rt.device)
        for hook in self.step_hooks:  # per-step strategy hooks (tie-untie's switch)
            hook(st.step, self.total, self.optimizer)
        lr = tc.lr * lr_factor(st.step, tc, self.total, self.steps_per_epoch) * st.lr_scale
        set_lr(self.optimizer, lr)
        if tc.accumulate == 1:
            batch = self.task.train_batch(epoch, index, rt.rank, rt.world_size, rt.device)
            with runtime.autocast(rt.device, tc.precision):
                losses, ntok, self.carry = self.objective(batch, self.carry)
            obj, ce = split(losses)
            obj.backward()
        else:
            obj, ce, ntok = self._accumulate(epoch, index)
        gnorm = nonfinite.grad_norm(self.model, tc.grad_clip)
        finite = nonfinite.step_is_finite(obj, gnorm, rt)
        if finite:
            self.optimizer.step()
        else:
            self._skip_nonfinite(obj, gnorm)
        self.optimizer.zero_grad(set_to_none=True)
        if finite:
            self.log.add(ce, ntok)
        if st.step == 0:
            st.step0_loss = self.log.first_step(ce, ntok, lr, self.clock.elapsed())
        st.step += 1
        self.log.bar.update(1)
        st.tokens_seen += ntok * rt.world_size
        return lr

    def _accumulate(self, epoch: int, index: int) -> tuple[torch.Tensor, torch.Tensor, int]:
        """Forward and backward of the micro-batches of step ``index`` (batches index*k .. of the epoch,
        fewer at its end), each scaled by 1/k: the gradient is the mean of theirs, as DDP's is over
        processes. Returns (mean objective, token-weighted cross-entropy, tokens), detached."""
        rt, k = self.rt, self.tc.accumulate
        first = index * k
        parts = range(first, min(first + k, self.batches_per_epoch))
        obj_sum = nll = torch.zeros((), dtype=torch.float64, device=rt.device)
        tokens = 0
        for j, b in enumerate(parts):
            batch = self.task.train_batch(epoch, b, rt.rank, rt.world_size, rt.device)
            sync = j == len(parts) - 1 or not rt.distributed  # DDP/FSDP reduce on the last one only
            with parallel.gradient_sync(self.objective, self.model, sync):
                with runtime.autocast(rt.device, self.tc.precision):
                    losses, ntok, self.carry = self.objective(batch, self.carry)
                obj, ce = split(losses)
                (obj / len(parts)).backward()
            obj_sum = obj_sum + obj.detach().double() / len(parts)
            nll = nll + ce.detach().double() * ntok
            tokens += ntok
        return obj_sum, (nll / max(tokens, 1)).float(), tokens

    def _skip_nonfinite(self, obj: torch.Tensor, gnorm: torch.Tensor) -> None:
        """A step with a non-finite loss or gradient: no update; stop, unless ``skip_nonfinite`` allows more."""
        st = self.state
        if st.nonfinite_skipped >= self.tc.skip_nonfinite:
            self.log.bar.close()
            resumed = self.resumed[0] if self.resumed is not None and self.resumed[1] == st.step else None
            updates = st.step - st.nonfinite_skipped
            raise nonfinite.step_error(st.step, obj, gnorm, self.tc, self.out, updates, resumed)
        st.nonfinite_skipped += 1
        progress.note(self.log.bar, f"step {st.step}: non-finite loss or gradient, step skipped "
                           f"({st.nonfinite_skipped} of {self.tc.skip_nonfinite} allowed)")  # fmt: skip

    def after_step(self, lr: float) -> None:
        """The train record every ``log_every`` steps; validation and checkpoints when they are due
        (neither counts as training time)."""
        st, tc, spe = self.state, self.tc, self.steps_per_epoch
        step, last = st.step, st.step == self.total
        logged = step % tc.log_every == 0 or last
        if logged:
            self._book_training_time()
            st.last_train_loss = self.log.flush(step, spe, lr, self.clock.elapsed())
        epoch_end = step % spe == 0
        periodic = (tc.eval_every and step % tc.eval_every == 0) or (not tc.eval_every and epoch_end)
        ckpt_due = last or (tc.checkpoint_every and step % tc.checkpoint_every == 0) or (
            not tc.checkpoint_every and epoch_end
        )
        if not (last or periodic or ckpt_due):
            return
        self._book_training_time()
        if last:
            self.validate(None)
        elif periodic:
            res = self.validate(tc.eval_batches)
            if res is not None and not self.log.bar.disable:
                self.log.bar.write(f"step {step}: valid ppl {res['ppl']:.2f}")
        if st.stopped_early and not logged:
            st.last_train_loss = self.log.flush(step, spe, lr, self.clock.elapsed())
        if ckpt_due or st.stopped_early:
            self.save_checkpoint()
        self.clock.restart()

    def _book_training_time(self) -> None:
        trained = self.clock.pause()
        self.state.train_time += trained
        self.log.time += trained

    # ------------------------------------------------------------------ validation
    def validate(self, max_batches: int | None) -> dict[str, Any] | None:
        """Validate at the current step on rank 0 (``max_batches`` None: the whole split) while the
        other processes wait; returns rank 0's result (None elsewhere). A sharded (FSDP) model needs every
        process in its forward passes: then all validate alike and all get the result."""
        res = None
        if self.rt.is_main or parallel.is_sharded(self.model):
            out = self.task.evaluate(self.model, "valid", max_batches=max_batches)
            res = {"step": self.state.step, "full": max_batches is None, "loss": out["loss"], "ppl": out["ppl"],
                   "tokens": out["tokens"]}  # fmt: skip
            if "bpb" in out:  # a language model's bits per byte of the original text
                res["bpb"] = out["bpb"]
            self.on_validation(res)
            self.log.valid(self.state.step, res, self.clock.elapsed())
        runtime.barrier(self.rt)
        self._share_decisions()
        return res

    def on_validation(self, res: dict[str, Any]) -> None:
        """React to a validation result (rank 0): keep the best and the newest; score ``train.monitor``
        (added to ``res`` when it is not the loss) and apply model selection: the best checkpoint, the
        plateau schedule, early stopping (``embtie.training.monitor``)."""
        st, tc = self.state, self.tc
        if st.best_valid_ppl is None or res["ppl"] < st.best_valid_ppl:
            st.best_valid_ppl, st.best_valid_step = res["ppl"], res["step"]
        st.last_eval = res
        if self.probe is not None and (shares := self.probe.probe(res["step"])) is not None:
            res["output_path_share"] = shares["all"]
        value = self.task.score(self.model, tc.monitor, res)
        if tc.monitor != "loss":
            res[tc.monitor] = value
        decision = monitor.update(st, value, res["step"], tc)
        if decision.improved and monitor.selects_models(tc):
            resume.save_named(self.out, "best", self.model, {"step": res["step"], tc.monitor: value}, self.rt)
        if decision.decayed and self.rt.is_main:
            progress.note(self.log.bar, f"step {res['step']}: no better {tc.monitor} in {st.bad_validations} "
                          f"validations, lr x{tc.decay_factor:g} (now x{st.lr_scale:.4g})")  # fmt: skip
        if decision.stop and self.rt.is_main:
            progress.note(self.log.bar, f"step {res['step']}: early stop, no better {tc.monitor} in "
                          f"{st.bad_validations} validations (best {st.best_metric:.4g} at step "
                          f"{st.best_metric_step}, in checkpoints/best)")  # fmt: skip

    def _share_decisions(self) -> None:
        """Rank 0's plateau and early-stopping decisions, to every process (all take the same branches)."""
        if not self.rt.distributed:
            return
        st, main = self.state, self.rt.is_main
        scale, stop = runtime.all_reduce_sum([st.lr_scale if main else 0.0, float(st.stopped_early and main)], self.rt)
        st.lr_scale, st.stopped_early = scale, stop > 0

    # ------------------------------------------------------------------ checkpoints and the end
    def save_checkpoint(self) -> None:
        """Checkpoint the current step (atomically; the newest ``keep_checkpoints`` stay); weights that are
        not finite are never written (``NonFiniteError``)."""
        if not nonfinite.weights_are_finite(self.model):
            self.log.bar.close()
            raise nonfinite.weights_error(self.state.step, self.tc, self.out)
        self.state.elapsed = self.clock.elapsed()
        self.log.save_into(self.state)
        extra = {"world_size": self.rt.world_size, "steps_per_epoch": self.steps_per_epoch, "total_steps": self.total}
        resume.save(self.out, self.model, self.optimizer, self.state, self.task, self.carry, self.rt,
                           keep=self.tc.keep_checkpoints, extra=extra)  # fmt: skip

    def finish(self) -> dict[str, Any]:
        """Validate on the whole split if the last step has no such validation yet (a run resumed after
        its final checkpoint), write summary.json and return the summary (every process)."""
        last = self.state.last_eval
        missing = self.rt.is_main and (last is None or last["step"] != self.state.step or not last["full"])
        if runtime.all_reduce_sum([float(missing)], self.rt)[0] > 0:  # every rank takes the same branch
            self.validate(None)
        summary: dict[str, Any] = {}
        if self.rt.is_main:
            summary = summary_record(self.cfg, self.state, self.counts, self.state.step, self.steps_per_epoch,
                                     self.clock.elapsed(), self.rt)  # fmt: skip
            files.write_atomic(self.out / "summary.json", json.dumps(summary, indent=1))
            vocab = next((m.vocab_size for m in self.model.modules() if isinstance(m, VocabularyTables)), None)
            note = nonfinite.diverged_note(summary["valid_loss"], summary["valid_ppl"], self.tc, self.state.step0_loss,
                                           vocab)  # fmt: skip
            if note is not None:
                print(note, file=sys.stderr)
        self.log.metrics.close()
        runtime.barrier(self.rt)
        if not self.rt.is_main:
            summary = json.loads((self.out / "summary.json").read_text(encoding="utf-8"))
        return summary
