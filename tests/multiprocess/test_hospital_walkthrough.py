"""The five-party hospital walk-through of ``docs/tutorials/hospitals-party.md``, run as written.

The page's bash blocks (after their ``<!-- hospitals-party-NAME: ... -->``
markers) are read from the page itself: the CSV files (hospital 1's columns
permuted), the certificates, the five ``mpc-pca party`` commands as five
processes (the rendezvous on a port the kernel picked instead of 29500), the
plot of the consumer's projection and the one-process ``mpc-pca run``. The
server's model and the consumer's projected rows must equal ``run``'s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mpc_pca.deploy.local import child_environment
from mpc_pca.pppca.deployment import read_projection
from tests.helpers.markdown_blocks import page_of
from tests.helpers.socket_helpers import free_port

PAGE = Path(__file__).resolve().parents[2] / "docs" / "tutorials" / "hospitals-party.md"
#: ``mpc-pca`` in the page's commands runs this checkout's package with this interpreter.
PRELUDE = (
    f'mpc-pca() {{ "{sys.executable}" -m mpc_pca.cli "$@"; }}\npython() {{ "{sys.executable}" "$@"; }}\n'
)


#: The page's blocks this test runs or checks, by marker.
MARKERS = (
    "hospitals-party-csv", "hospitals-party-certs", "hospitals-party-parties", "hospitals-party-plot",
    "hospitals-party-run", "hospitals-party-projection",
)  # fmt: skip


def page_block(name: str) -> str:
    """The text of the block after ``<!-- hospitals-party-NAME: ... -->`` on the tutorial page."""
    marker = f"hospitals-party-{name}"
    if marker not in MARKERS:
        raise KeyError(marker)
    block = page_of(marker)
    if block.path != PAGE:
        raise LookupError(f"{marker} is on {block.path}, not on {PAGE}")
    return block.text


def run_block(marker: str, cwd: Path) -> str:
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", PRELUDE + page_block(marker)],
        cwd=cwd, env=child_environment(), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, (marker, done.stdout, done.stderr)
    return done.stdout + done.stderr


def test_the_page_has_five_party_commands_with_one_port():
    lines = page_block("parties").strip().splitlines()
    assert [line.split("--rank ")[1].split()[0] for line in lines] == ["0", "1", "2", "3", "4"]
    assert all("--master 127.0.0.1:29500" in line for line in lines)


@pytest.mark.slow
def test_five_parties_on_the_permuted_hospital_files_give_the_run_path_model_and_plot(tmp_path):
    run_block("csv", tmp_path)
    header = [pd.read_csv(tmp_path / "hospitals" / f"h{i}.csv", nrows=0).columns.tolist() for i in range(3)]
    assert header[1] == header[0][::-1] and len(header[0]) == 30  # hospital 1's columns permuted
    run_block("certs", tmp_path)
    port = str(free_port())
    lines = page_block("parties").strip().splitlines()
    processes = [
        subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", PRELUDE + line.replace("29500", port)],
            cwd=tmp_path,
            env=child_environment(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for line in lines
    ]
    outcomes = [p.communicate(timeout=300) for p in processes]
    for line, process, (out, err) in zip(lines, processes, outcomes, strict=True):
        assert process.returncode == 0, (line, out, err)
    assert "provider1: columns reordered by name to match provider0's order" in outcomes[1][1]
    said = run_block("plot", tmp_path)
    assert "figure written to hospitals-party.png" in said
    assert (tmp_path / "hospitals-party.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    run_block("run", tmp_path)

    model = json.loads((tmp_path / "model.json").read_text())
    reference = json.loads((tmp_path / "result.json").read_text())
    assert model["feature_names"] == reference["feature_names"] == header[0]
    np.testing.assert_allclose(model["components"], reference["components"], rtol=0, atol=1e-6)
    np.testing.assert_allclose(model["explained_variance"], reference["explained_variance"], rtol=1e-6)
    written = json.loads((tmp_path / "projection.json").read_text())["projection"]
    shown = " ".join(page_block("projection").split())  # the page's example shows the written columns
    assert json.dumps(written["columns"]) in shown
    labels, projected = read_projection(written)
    table = pd.read_csv(tmp_path / "proj.csv")
    assert labels == list(table["provider"])
    np.testing.assert_allclose(projected, table[["pc1", "pc2", "pc3"]].to_numpy(), rtol=0, atol=1e-6)
