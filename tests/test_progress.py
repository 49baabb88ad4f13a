"""Progress bars: shown on a terminal, off when stderr is not one or with --quiet (restored after)."""

from __future__ import annotations

import os
import sys

import pytest

from embtie import progress
from embtie.cli import main


@pytest.fixture
def terminal(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    monkeypatch.delenv(progress.QUIET_ENV, raising=False)


def test_bars_show_on_a_terminal_only(terminal, monkeypatch):
    assert not progress.bar(range(3)).disable
    assert progress.bar(range(3), enabled=False).disable
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    assert progress.bar(range(3)).disable


def test_quiet_flag_hides_bars_for_the_command_and_restores(terminal, monkeypatch):
    seen = {}

    def fake_run(args):
        seen["interactive"] = progress.interactive()
        return 0

    from embtie.commands import strategies

    monkeypatch.setattr(strategies, "run", fake_run)
    assert main(["strategies", "--quiet"]) == 0 and seen["interactive"] is False
    assert progress.QUIET_ENV not in os.environ and progress.interactive()
    assert main(["strategies"]) == 0 and seen["interactive"] is True
