"""The Slurm cluster of the ``slurm`` tests: started once per session (``slurm_cluster.start``), with
``SLURM_CONF`` set in this process for their duration (``embtie compare --launcher slurm`` runs sbatch and
squeue from here), stopped at the end. Slurm is installed first when it is missing and this process may
(root, apt-get). The tests are skipped, with the reason printed, only when the daemons cannot start."""

from __future__ import annotations

import sys

import pytest


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    from slurm_cluster import Unavailable, install, start

    try:
        installed = install()
        cluster = start(tmp_path_factory.mktemp("slurm"))
    except Unavailable as e:
        print(f"\nno Slurm cluster: {e}", file=sys.stderr)
        pytest.skip(f"a single-node Slurm cannot start here: {str(e).splitlines()[0]}")
    if installed is not None:
        print(f"\nslurm-wlm and munge installed in {installed:.0f} s", file=sys.stderr)
    print(f"\nSlurm started in {cluster.started_s:.1f} s (node {cluster.node}, {cluster.conf})", file=sys.stderr)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SLURM_CONF", str(cluster.conf))
        yield cluster
    cluster.stop()
