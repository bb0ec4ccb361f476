"""Smoke test of the relay benchmark (``python -m benchmarks.bench_relay --quick``)."""

from __future__ import annotations

import json
import sys

import pytest

pytestmark = pytest.mark.slow


def test_relay_benchmark_times_both_modes_and_writes_its_ratios(tmp_path, monkeypatch):
    from benchmarks import bench_relay

    monkeypatch.setattr(sys, "argv", ["bench_relay", "--quick", "--out", str(tmp_path)])
    bench_relay.main()
    result = json.loads((tmp_path / "relay.json").read_text())
    assert [(row["d"], row["M"]) for row in result["rows"]] == [(20, 2), (60, 2)]
    for row in result["rows"]:
        for mode in ("direct", "relay"):
            assert len(row[mode]["protocol_seconds"]) == row["worlds_per_mode"] == 1
            # the protocol runs inside the processes' lifetime
            assert 0 < row[mode]["median_protocol_seconds"] < row[mode]["median_run_seconds"]
        assert row["relay_over_direct_protocol_seconds"] == pytest.approx(
            row["relay"]["median_protocol_seconds"] / row["direct"]["median_protocol_seconds"]
        )
    assert (tmp_path / "relay.png").stat().st_size > 0


def test_relay_benchmark_refuses_zero_worlds(tmp_path, monkeypatch, capsys):
    from benchmarks import bench_relay

    monkeypatch.setattr(sys, "argv", ["bench_relay", "--worlds", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench_relay.main()
    assert "--worlds must be at least 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "relay.json").exists()
