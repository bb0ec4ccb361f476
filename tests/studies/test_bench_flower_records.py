"""``benchmarks/bench_flower.py`` without Flower: a failed configuration is recorded and the run goes on.

The published run is long (16 configurations, about an hour); one configuration
that fails (a SuperLink that dies under load, a node that never registers)
must not lose the others. These tests replace the Flower run by functions that
fail or succeed, so they need no ``flwr``.
"""

from __future__ import annotations

import json
from dataclasses import asdict

import pytest

from benchmarks import bench_flower
from benchmarks.flower_measure import Config, table

GOOD = {
    "round": 1,
    "seconds": 2.5,
    "completed": True,
    "max_error_vs_plain_mean": 1e-15,
    "plain_mean_over": ["1", "2", "3"],
    "bytes_per_client_mean": 4000.0,
    "bytes_per_client_max": 4000,
    "bytes_at_server": 12000,
    "did_not_count": {},
}


def fake_run_one(config: Config, work, timeout: float) -> dict:
    if config.aggregator == "secagg":
        raise RuntimeError(f"{config.name} wrote no result\nSuperLink: database is locked")
    return {"config": asdict(config), "summary": {"name": config.name}, "rounds": [GOOD]}


@pytest.fixture(autouse=True)
def no_flower_needed(monkeypatch):
    monkeypatch.setattr(bench_flower, "flower_version", lambda: "1.42.0")


def test_a_failed_configuration_is_recorded_with_its_reason_and_the_next_one_runs(tmp_path, monkeypatch):
    monkeypatch.setattr(bench_flower, "run_one", fake_run_one)
    monkeypatch.setattr(bench_flower, "plot", lambda results, path: path.write_bytes(b"png"))
    payload = bench_flower.main(["--quick", "--out", str(tmp_path)])
    ours, secagg = payload["configs"]
    assert "failed" not in ours and ours["rounds"] == [GOOD]
    assert secagg["failed"].startswith("RuntimeError: secagg/vector-1e+03/n3 wrote no result")
    assert "database is locked" in secagg["failed"]
    assert payload["finished"] and json.loads((tmp_path / "flower.json").read_text()) == payload
    rows = table(payload).splitlines()
    assert rows[2].startswith("| ours/vector-1e+03/n3 | 2.5 | 4.0 | 12.0 | 1.0e-15 | 1: 3 of 3 |")
    assert (
        rows[3]
        == "| secagg/vector-1e+03/n3 | failed: RuntimeError: secagg/vector-1e+03/n3 wrote no result | | | | |"
    )


def test_an_unexpected_error_is_not_swallowed(tmp_path, monkeypatch):
    def broken(config, work, timeout):
        raise ZeroDivisionError("a bug in the benchmark itself")

    monkeypatch.setattr(bench_flower, "run_one", broken)
    with pytest.raises(ZeroDivisionError):
        bench_flower.main(["--quick", "--out", str(tmp_path)])


def test_the_large_run_uses_the_simulation_engine_and_both_mask_graphs():
    large = bench_flower.configurations(False, 10, "large", 100)
    assert [(c.aggregator, c.nodes, c.engine) for c in large] == [
        ("ours", 100, "simulation"),
        ("ours-sparse", 100, "simulation"),
        ("secagg", 100, "simulation"),
    ]
    assert [c.name for c in large][1] == "ours-sparse/digits/n100/sim"
    assert all(c.engine == "deployment" for c in bench_flower.configurations(False, 10, "clean", 100))


def test_a_zero_stage_timeout_still_waits_for_every_reply():
    assert bench_flower.stage_timeout(0.0, 3) == 0.0
    assert bench_flower.stage_timeout(60.0, 10) == 60.0
    assert bench_flower.stage_timeout(60.0, 100) == 200.0


def test_a_simulated_configuration_without_ray_names_the_extra(monkeypatch):
    monkeypatch.setattr(bench_flower.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(SystemExit, match=r'pip install "mpc-pca\[bench-flower\]"'):
        bench_flower.check_simulation_runtime(bench_flower.configurations(False, 10, "large", 100))
    bench_flower.check_simulation_runtime(bench_flower.configurations(False, 10, "clean", 100))
