"""How the ``embtie`` process ends; free of torch so that ``embtie --version`` starts fast."""

from __future__ import annotations

import os
import sys
from typing import NoReturn


def exit_process(code: int) -> NoReturn:
    """End the process with ``code``. In a process torchrun started (WORLD_SIZE > 1) the interpreter's
    own shutdown is skipped after flushing stdout/stderr: its destructors of gloo's native threads
    sometimes abort ("terminate called without an active exception") or never return, turning a
    finished run into a failed or hung launch (seen on CI, twice, torch 2.13 CPU; pytorch/pytorch#75097).
    Every file embtie writes is closed (and checkpoints renamed into place) before this is reached."""
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
