"""``run --transport processes`` reports the children's phases as a run in threads does (issue 25).

The children forward their phase records as text lines on their stderr
(:mod:`mpc_pca.deploy.phase_lines`); the launcher logs them again in this
process, where the progress report (line mode, no quiet time) shows them.
"""

from __future__ import annotations

import io

import numpy as np

from mpc_pca.cli.progress import phase_progress
from mpc_pca.deploy import launch_local


def test_the_parent_reports_every_phase_its_party_processes_run(wine):
    out = io.StringIO()
    with phase_progress(stream=out, tty=False, quiet_seconds=0.0):
        result = launch_local("pppca-ss", np.array_split(wine, 3), {"n_components": 2}, timeout=120)
    assert result["n_samples"] == 178
    lines = out.getvalue().splitlines()
    assert all(line.startswith("mpc-pca: progress: ") for line in lines), lines
    phases = {line.split(": ", 3)[-1] for line in lines}
    assert {"mean secure sum", "Gram secure sum", "projection"} <= phases, lines
