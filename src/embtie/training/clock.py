"""``Clock``: wall time since the run started (across resumes) and the training time between marks."""

from __future__ import annotations

import time

import torch


class Clock:
    """``pause()`` returns the seconds trained since the last mark and sets a new mark; ``restart()``
    sets the mark after non-training work (validation, checkpoints) so that it is not counted."""

    def __init__(self, elapsed_before: float, device: torch.device) -> None:
        self.device = device
        self.elapsed_before = elapsed_before
        self.session_start = time.perf_counter()
        self.mark = self.session_start

    def elapsed(self) -> float:
        """Wall seconds since the run started, earlier sessions of a resumed run included."""
        return self.elapsed_before + time.perf_counter() - self.session_start

    def pause(self) -> float:
        """Seconds since the last mark (after the device finished its queued work); the mark moves to now."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        now = time.perf_counter()
        trained, self.mark = now - self.mark, now
        return trained

    def restart(self) -> None:
        self.mark = time.perf_counter()
