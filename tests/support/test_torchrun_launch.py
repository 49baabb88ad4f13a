"""The multi-process tests' launcher (tests/support/torchrun_launch.py): a launch that never exits is aborted with
every process's stacks in the report, and tried once more."""

import os
import textwrap

import pytest

from torchrun_launch import torchrun

WORKER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    marker = Path(sys.argv[1])
    if os.environ["RANK"] == "0" and not marker.exists():
        marker.write_text("hung once")
        while True:  # the first launch never exits
            time.sleep(0.1)
    sys.stdout.write(f"rank {os.environ['RANK']} done\\n")  # one write (python -u): the ranks share a pipe
    """
)


@pytest.mark.slow
@pytest.mark.distributed
def test_a_hung_launch_is_aborted_with_stacks_and_retried(tmp_path):
    worker = tmp_path / "hangs_once.py"
    worker.write_text(WORKER)
    marker, junk = tmp_path / "marker", tmp_path / "out"
    junk.mkdir()
    with pytest.warns(UserWarning, match="did not exit within 10 s") as caught:
        out = torchrun([str(worker), str(marker)], dict(os.environ), [junk], timeout=10)
    assert "rank 0 done" in out and "rank 1 done" in out
    report = str(caught[0].message)
    assert f'File "{worker}", line 8 in <module>' in report  # faulthandler: the hung rank's stack
    assert not junk.exists()  # the first attempt's output was cleared before the second


def test_a_failing_launch_fails_with_its_output(tmp_path):
    worker = tmp_path / "fails.py"
    worker.write_text("import sys\nprint('bad input here', flush=True)\nsys.exit(3)\n")
    with pytest.raises(AssertionError, match="bad input here"):
        torchrun([str(worker)], dict(os.environ), [], timeout=60)
