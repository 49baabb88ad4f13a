"""The file the update-path probe writes, ``RUN_DIR/path_shares.npz`` (``embtie.training.path_shares``
writes it during training), and what the report reads from it: the arrays and each row's output-path
share over the whole run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

FILE = "path_shares.npz"


def read(run_dir: Path) -> dict[str, np.ndarray]:
    """The arrays of ``RUN_DIR/path_shares.npz``: records (P, 5) [step, all, frequent, middle, rare],
    cum_in/cum_out (V,) per-row sums of gradient norms, in_hist/out_hist (P, V) the sums after each probe."""
    with np.load(Path(run_dir) / FILE) as z:
        return {k: z[k] for k in z.files}


def row_output_shares(data: dict[str, np.ndarray]) -> np.ndarray:
    """(V,) out_i / (in_i + out_i) over the whole run (nan for rows that never got a gradient)."""
    tot = data["cum_in"] + data["cum_out"]
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(tot > 0, data["cum_out"] / tot, np.nan)
