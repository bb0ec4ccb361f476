"""Smoke test of ``benchmarks/bench_flower.py --quick``: 3 SuperNodes, one round of each aggregator.

Skipped without the ``flower`` extra. Runs Flower's real SuperLink and
SuperNodes twice (about two minutes on a loaded 2-core machine: Flower
starts a ClientApp process per message). Checks what the published run
relies on: both aggregators complete over all three nodes, ours within its
stated fixed-point bound of the plain mean, and the byte counts include at
least the float64 parameters every node is sent.
"""

from __future__ import annotations

import json

import matplotlib
import pytest

pytest.importorskip("flwr", reason='needs the flower extra (pip install "mpc-pca[flower]")')
pytestmark = pytest.mark.slow

from benchmarks import bench_flower  # noqa: E402

matplotlib.use("Agg")


def test_the_quick_run_measures_ours_and_secaggplus_on_the_same_app(tmp_path):
    # --timeout 0: every stage waits for all replies (no node is killed here; a loaded machine is slow).
    payload = bench_flower.main(["--quick", "--timeout", "0", "--out", str(tmp_path)])
    assert payload["finished"] and json.loads((tmp_path / "flower.json").read_text()) == payload
    assert (tmp_path / "flower.png").stat().st_size > 0
    ours, secagg = payload["configs"]
    assert (ours["config"]["aggregator"], secagg["config"]["aggregator"]) == ("ours", "secagg")
    for result in (ours, secagg):
        (round_,) = result["rounds"]
        assert round_["completed"] and round_["did_not_count"] == {}, round_["did_not_count"]
        assert len(round_["plain_mean_over"]) == 3
        assert round_["bytes_per_client_mean"] >= 8 * 1000  # the 10^3 float64 parameters sent to each node
        assert round_["bytes_at_server"] >= 3 * round_["bytes_per_client_mean"] - 3
    (mine,) = ours["rounds"]
    assert 0 <= mine["max_error_vs_plain_mean"] <= mine["error_bound"] < 1e-10
    # SecAgg+ quantizes: exact agreement with the plain mean would mean the plain vectors were summed.
    assert secagg["rounds"][0]["max_error_vs_plain_mean"] > 0
