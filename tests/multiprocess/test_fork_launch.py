"""The launcher's fork-server parties (PythonEntry): exit codes, error lines, kills, no re-import."""

from __future__ import annotations

import json
import os

from mpc_pca.deploy.local import PARTY_PRELOAD
from protocols.runtime.launcher import PythonEntry, launch

HELPERS = "tests.helpers.forked_entries"


def test_parties_are_children_of_one_preloaded_fork_server(tmp_path):
    names = ("a", "b", "c")
    commands = {
        n: PythonEntry(HELPERS, "describe", (str(tmp_path / f"{n}.json"), *PARTY_PRELOAD)) for n in names
    }
    environment = {**os.environ, "MPC_PCA_TEST_MARK": "from the launcher"}
    outcomes = launch(commands, timeout=30, env=environment, preload=PARTY_PRELOAD)
    assert all(o.ok for o in outcomes.values()), {n: o.stderr for n, o in outcomes.items()}
    reports = [json.loads((tmp_path / f"{n}.json").read_text()) for n in names]
    # one fork server forked them all, and it is not this (multi-threaded) launcher
    assert len({r["ppid"] for r in reports}) == 1 and reports[0]["ppid"] != os.getpid()
    # the party code was imported once, in the server, before any party started
    assert "mpc_pca.pppca.deployment" in PARTY_PRELOAD and "mpc_pca.deploy.party" in PARTY_PRELOAD
    assert all(all(r["loaded"].values()) for r in reports), reports
    # the launch's environment reaches forked parties as it reaches new interpreters
    assert all(r["mark"] == "from the launcher" for r in reports), reports


def test_a_failing_party_reports_its_error_line_and_a_hanging_one_is_killed(tmp_path):
    commands = {
        "bad": PythonEntry(HELPERS, "fail", ("peer provider1 sent a malformed frame",)),
        "stuck": PythonEntry(HELPERS, "hang", ("300",)),
    }
    outcomes = launch(commands, timeout=1, grace=1, preload=PARTY_PRELOAD)
    assert outcomes["bad"].returncode == 4
    assert outcomes["bad"].error_line() == "protocol failure: peer provider1 sent a malformed frame"
    assert outcomes["stuck"].killed_by_launcher and outcomes["stuck"].returncode == -9
    assert outcomes["stuck"].seconds < 60
