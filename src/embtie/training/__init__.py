"""The parts of the training loop, each readable alone (``embtie.train.train`` is the entry point):

- ``state``: ``TrainState``, everything a checkpoint needs to resume the loop exactly;
- ``clock``: elapsed wall time across resumes and the training time (validation and checkpoints excluded);
- ``train_log``: the running training loss between log records, metrics.jsonl and the progress bar;
- ``checkpointing``: writing and restoring a checkpoint (weights, optimizer, state, per-process RNG);
- ``objective``: the model and its task's loss as one module (what DDP wraps);
- ``trainer``: ``Trainer``, the recipe: ``setup`` / ``fit`` (the step, validation, checkpoints) / ``summary``.
"""
