"""Run directories on disk: the checkpoint format and its atomic writes (``checkpoints``), loading a
trained run back (``loading``) and checkpoint averaging (``averaging``)."""
