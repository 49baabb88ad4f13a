"""Headless Chromium for the report tests: find it, and draw an HTML page into a PNG screenshot."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

MISSING = "chromium is not installed (apt-get install -y chromium); .ci/run installs it"
"""the reason the Chromium tests are skipped where it is not installed."""


def chromium() -> str | None:
    """The path of an installed Chromium or Chrome, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def render_screenshot(html_path: Path, png_path: Path, width: int = 1200, height: int = 2400) -> None:
    """Draw ``html_path`` with headless Chromium into ``png_path``."""
    exe = chromium()
    assert exe is not None
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png_path}",
            html_path.resolve().as_uri(),
        ]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120, env={**os.environ, "HOME": profile})
