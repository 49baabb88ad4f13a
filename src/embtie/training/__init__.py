"""Training one run directory: ``train(cfg, out_dir)`` (``api``) runs the ``Trainer`` recipe.

The parts of the loop, each readable alone:

- ``trainer``: ``Trainer``, the recipe: ``setup`` / ``fit`` (the step, validation, checkpoints) / ``finish``;
- ``state``: ``TrainState``, everything a checkpoint needs to resume the loop exactly;
- ``resume``: writing and restoring a training checkpoint (weights, optimizer, state, per-process RNG);
- ``sharded_state``: the same for an FSDP-sharded model (gathered to / scattered from the one format);
- ``preparation``: a run directory made ready (config written once, a resume must bring the same);
- ``objective``: the model and its task's loss as one module (what DDP wraps);
- ``parallel``: DDP / FSDP wrapping; ``optim``: parameter groups and learning-rate schedules;
- ``clock``: elapsed wall time across resumes and the training time (validation and checkpoints excluded);
- ``train_log`` and ``metrics_log``: the running loss, metrics.jsonl, TensorBoard and the progress bar;
- ``monitor``, ``nonfinite``, ``path_shares``, ``summary``: model selection, non-finite steps, the
  update-path probe, the summary of a finished run.
"""

from embtie.training.api import train

__all__ = ["train"]
