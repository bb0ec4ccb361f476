"""``mpc-pca party`` for a DP protocol: ``--row-bound`` at each site, and ``private`` in every release's JSON.

capePCA's four parties (two sites, the aggregator, the noise generator) run
as ``python -m mpc_pca party`` processes over loopback links (``--insecure``:
the links are not what is tested here). Each site divides its digits rows by
the public bound 128 under ``--row-norm error``, so an undivided row (norm
up to 77) would stop the run; with a fixed noise seed the aggregator's
release equals ``mpc-pca run``'s on the same files, and every party that
holds the release (the sites and the aggregator) writes ``"private"`` and
``"privacy_leaks"`` as ``run`` does; the noise generator, which holds none,
writes neither.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from mpc_pca.cli import main as cli
from tests.helpers.markdown_blocks import ROOT
from tests.helpers.socket_helpers import free_port

PARTIES = ("provider0", "provider1", "aggregator", "noise-generator")
SETTINGS = ["--n-components", "3", "--epsilon", "1", "--delta", "1e-5", "--row-norm", "error"]


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("digits")
    files = []
    for i, part in enumerate(np.array_split(load_digits().data, 2)):
        files.append(folder / f"h{i}.csv")
        np.savetxt(files[-1], part, fmt="%g", delimiter=",")
    return files


def run_parties(sites: list[Path], out: Path, extra: list[str]) -> dict[str, dict]:
    """Every capePCA party as its own ``mpc-pca party`` process; each party's JSON, by name."""
    master = f"127.0.0.1:{free_port()}"
    processes = []
    for rank, name in enumerate(PARTIES):
        argv = [
            sys.executable, "-m", "mpc_pca", "party", "--protocol", "capepca", "--rank", str(rank),
            "--world-size", str(len(PARTIES)), "--master", master, "--insecure", "--timeout", "60",
            "--connect-timeout", "60", "-q", "--output", str(out / f"{name}.json"), *SETTINGS, *extra,
        ]  # fmt: skip
        if rank < len(sites):
            argv += ["--data", str(sites[rank]), "--no-header", "--row-bound", "128"]
        processes.append(
            subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        )
    for name, process in zip(PARTIES, processes, strict=True):
        _, stderr = process.communicate(timeout=180)
        assert process.returncode == 0, f"{name}: {stderr[-3000:]}"
        assert "clipped" not in stderr, stderr
    return {name: json.loads((out / f"{name}.json").read_text()) for name in PARTIES}


def test_party_sites_divide_by_the_row_bound_and_every_release_says_if_it_is_private(sites, tmp_path):
    seeded = run_parties(sites, tmp_path, ["--noise-seed", "11"])
    in_process = tmp_path / "run.json"
    argv = ["run", "--protocol", "capepca", "--data", *map(str, sites), "--no-header", *SETTINGS]
    assert cli([*argv, "--row-bound", "128", "--noise-seed", "11", "--output", str(in_process)]) == 0
    want = json.loads(in_process.read_text())
    assert np.array_equal(seeded["aggregator"]["components"], want["components"])  # rows / 128 at each site
    assert "private" not in seeded["noise-generator"] and "privacy_leaks" not in seeded["noise-generator"]
    for name in ("provider0", "provider1", "aggregator"):
        assert seeded[name]["private"] is False, name
        assert seeded[name]["privacy_leaks"] == want["privacy_leaks"], name
        assert want["privacy_leaks"][0].startswith("a fixed noise seed (11)")

    (tmp_path / "fresh").mkdir()
    fresh = run_parties(sites, tmp_path / "fresh", [])
    for name in ("provider0", "provider1", "aggregator"):
        assert fresh[name]["private"] is True and fresh[name]["privacy_leaks"] == [], name
    assert not np.array_equal(fresh["aggregator"]["components"], seeded["aggregator"]["components"])
