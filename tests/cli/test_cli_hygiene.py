"""CLI hygiene (issue 25): phase progress on stderr, one --insecure warning, 0600 output files."""

from __future__ import annotations

import io
import json
import logging
import stat
import subprocess
import sys

import numpy as np
import pytest

from mpc_pca.cli import main
from mpc_pca.cli.progress import PhaseProgress, phase_progress
from mpc_pca.deploy import run_threads
from mpc_pca.deploy.local import child_environment
from mpc_pca.files import write_atomic
from tests.helpers.socket_helpers import free_port


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_progress_lines_start_after_the_quiet_time_once_per_phase():
    clock, out = Clock(), io.StringIO()
    progress = PhaseProgress(out, tty=False, quiet_seconds=3.0, clock=clock)
    progress.started("mean secure sum")
    clock.now += 2.0
    progress.tick()
    assert out.getvalue() == ""  # a quick command prints nothing
    clock.now += 1.5
    progress.tick()
    progress.started("Gram secure sum")
    progress.started("Gram secure sum")  # another party, the same phase
    progress.tick()
    progress.finish()
    assert out.getvalue() == (
        "mpc-pca: progress: 3.5 s: mean secure sum\nmpc-pca: progress: 3.5 s: Gram secure sum\n"
    )


def test_on_a_terminal_progress_is_one_line_rewritten_and_closed():
    clock, out = Clock(), io.StringIO()
    progress = PhaseProgress(out, tty=True, quiet_seconds=3.0, clock=clock)
    progress.started("mean secure sum")
    clock.now += 4.0
    progress.tick()
    clock.now += 1.0
    progress.started("projection")
    progress.finish()
    assert out.getvalue() == (
        "\r\x1b[Kmpc-pca:   4.0 s: mean secure sum\r\x1b[Kmpc-pca:   5.0 s: projection\n"
    )


def test_a_run_reports_its_phases_without_adding_them_to_the_log(wine, caplog):
    out = io.StringIO()
    logger = logging.getLogger("mpc_pca.protocol")
    level = logger.level
    with caplog.at_level(logging.WARNING), phase_progress(stream=out, tty=False, quiet_seconds=0.0):
        run_threads("pppca-ss", np.array_split(wine, 3), {"n_components": 2})
    lines = out.getvalue().splitlines()
    phases = [line.split(": ", 3)[-1] for line in lines]
    assert {"mean secure sum", "Gram secure sum", "projection"} <= set(phases)
    assert len(phases) == len(set(phases))  # one line per phase, whichever party starts it first
    assert all(line.startswith("mpc-pca: progress: ") for line in lines)
    assert not [r for r in caplog.records if "secure sum" in r.getMessage()]
    assert logger.level == level and not logger.filters
    quiet = io.StringIO()
    with phase_progress(enabled=False, stream=quiet) as progress:
        run_threads("pppca-ss", np.array_split(wine, 3), {"n_components": 2})
    assert progress is None and quiet.getvalue() == ""


@pytest.mark.slow  # a party process: about 3 s of imports and its connect timeout
def test_party_insecure_warns_once(tmp_path):
    argv = ["party", "--protocol", "pppca-ss", "--rank", "3", "--world-size", "5", "--insecure"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mpc_pca.cli",
            *argv,
            "--master",
            f"127.0.0.1:{free_port()}",
            "--connect-timeout",
            "1",
        ],
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 4, done.stderr  # nobody hosts the rendezvous
    assert done.stderr.count("neither encrypted nor authenticated") == 1, done.stderr


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_output_file_is_owner_only_whatever_the_umask(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import os

    old = os.umask(0o022)
    try:
        out, proj, fig = tmp_path / "r.json", tmp_path / "p.csv", tmp_path / "f.png"
        argv = ["run", "--protocol", "pppca-ss", "--data", "builtin:iris", "--output", str(out)]
        assert main([*argv, "--transform-output", str(proj)]) == 0
        assert main(["plot", str(out), "--projection", str(proj), "--out", str(fig)]) == 0
        party = tmp_path / "model.json"
        write_atomic(party, json.dumps({"a": 1}))  # what run_party writes to PartySpec.output
        assert {p.name: mode(p) for p in (out, proj, fig, party)} == dict.fromkeys(
            ["r.json", "p.csv", "f.png", "model.json"], 0o600
        )
        assert json.loads(party.read_text()) == {"a": 1}
        assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    finally:
        os.umask(old)
