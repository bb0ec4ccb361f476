"""benchmarks/*: ``--out`` chooses the folder and ``--quick`` never overwrites the published results."""

from __future__ import annotations

import json
import sys

import pytest

from benchmarks import bench_secure_sum
from benchmarks import output as timing


@pytest.fixture
def published(tmp_path, monkeypatch):
    """Point the benchmarks' published-results folder at a temporary copy holding one result."""
    results = tmp_path / "results"
    results.mkdir()
    (results / "secure_sum.json").write_text('{"published": true}')
    monkeypatch.setattr(timing, "RESULTS", results)
    monkeypatch.setattr(timing, "QUICK_RESULTS", results / "quick")
    return results


def test_output_dir_rules(published, tmp_path):
    assert timing.output_dir(None, quick=False) == published
    assert timing.output_dir(None, quick=True) == published / "quick"
    assert timing.output_dir(tmp_path / "mine", quick=True) == tmp_path / "mine"
    assert (tmp_path / "mine").is_dir()
    with pytest.raises(SystemExit, match="--quick never writes into the published results"):
        timing.output_dir(published, quick=True)


def test_quick_secure_sum_leaves_published_results_alone(published, tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "argv", ["bench_secure_sum", "--quick"])
    bench_secure_sum.main()
    assert (published / "secure_sum.json").read_text() == '{"published": true}'
    assert {p.name for p in (published / "quick").iterdir()} == {"secure_sum.json", "secure_sum.png"}
    monkeypatch.setattr(sys, "argv", ["bench_secure_sum", "--quick", "--out", str(tmp_path / "elsewhere")])
    bench_secure_sum.main()
    assert (tmp_path / "elsewhere" / "secure_sum.json").exists()


@pytest.mark.slow
def test_startup_benchmark_times_both_commands_and_reads_the_runs_report(tmp_path, monkeypatch):
    pytest.importorskip("torch", reason="the baseline is `import torch.distributed`")
    from benchmarks import bench_startup

    monkeypatch.setattr(sys, "argv", ["bench_startup", "--quick", "--parties", "2", "--out", str(tmp_path)])
    bench_startup.main()
    result = json.loads((tmp_path / "startup.json").read_text())
    assert len(result["run_seconds"]) == len(result["import_torch_distributed_seconds"]) == 2
    # the protocol work is a small part of the run: the rest is start-up, which is what is measured
    assert all(
        0 < p < r for p, r in zip(result["protocol_seconds_slowest_role"], result["run_seconds"], strict=True)
    )
    assert result["run_over_import"] == pytest.approx(
        result["median_run_seconds"] / result["median_import_seconds"]
    )


def test_startup_benchmark_refuses_a_run_without_providers(tmp_path, monkeypatch, capsys):
    from benchmarks import bench_startup

    monkeypatch.setattr(sys, "argv", ["bench_startup", "--parties", "0", "--out", str(tmp_path)])
    with pytest.raises(SystemExit):
        bench_startup.main()
    assert "--parties must be at least 1, got 0" in capsys.readouterr().err
    assert not (tmp_path / "startup.json").exists()


def test_parquet_only_reads_every_row_and_reports_memory(tmp_path, monkeypatch):
    from benchmarks import bench_pppca

    monkeypatch.setattr(sys, "argv", ["bench_pppca", "--parquet-only", "--quick", "--out", str(tmp_path)])
    bench_pppca.main()
    result = json.loads((tmp_path / "parquet_memory.json").read_text())
    assert result["n_rows_read"] == result["n"] == 200_000 and result["d"] == 20
    assert result["peak_rss_above_start_bytes"] > 0 and "machine" in result
    assert not (tmp_path / "pppca_scaling.json").exists()  # only the Parquet section ran


def test_the_keystream_floor_reads_every_payload_of_a_run_from_one_stream_per_edge_end(monkeypatch):
    """The floor ``bench_pppca`` prints beside each M: M k streams, each read for the run's three payloads."""
    from benchmarks import bench_pppca
    from protocols.backends.sparse_masks import plan_graph

    reads: list[list[int]] = []  # the payload sizes read from each stream, in order

    class CountingStream(bench_pppca.RingPRG):
        def __init__(self, key):
            super().__init__(key)
            reads.append([])

        def accumulate(self, target, *, subtract=False):
            reads[-1].append(target.size)
            return super().accumulate(target, subtract=subtract)

    monkeypatch.setattr(bench_pppca, "RingPRG", CountingStream)
    m, d = 16, 30
    bench_pppca.mask_streams(m, d)()
    assert len(reads) == m * plan_graph(m).neighbours
    assert all(sizes == [d + 1, d * (d + 1) // 2, d + 2] for sizes in reads)


def test_quick_dropout_benchmark_measures_the_extra_cost_of_tolerance(tmp_path, monkeypatch):
    from benchmarks import bench_dropout

    monkeypatch.setattr(sys, "argv", ["bench_dropout", "--quick", "--out", str(tmp_path)])
    bench_dropout.main()
    rows = json.loads((tmp_path / "dropout.json").read_text())["rows"]
    assert {(r["M"], r["L"]) for r in rows} == {(3, 100), (3, 5051), (5, 100), (5, 5051)}
    for row in rows:
        plain, tolerant = row["masks_first"], row["dropout"]
        # the key and seed-share rounds cost provider0 rounds and bytes; the masked input is the same size
        assert tolerant["provider0"]["rounds"] > plain["provider0"]["rounds"]
        assert tolerant["provider0"]["bytes_sent"] > plain["provider0"]["bytes_sent"]
        assert 2 <= row["threshold"] <= row["M"]


@pytest.mark.slow
def test_setup_benchmark_counts_round_trips_over_the_emulated_wan(tmp_path, monkeypatch):
    from benchmarks import bench_setup

    monkeypatch.setattr(sys, "argv", ["bench_setup", "--quick", "--worlds", "3", "--out", str(tmp_path)])
    bench_setup.main()
    result = json.loads((tmp_path / "setup.json").read_text())
    assert (tmp_path / "setup.png").exists()
    row, static = result["rows"]
    assert (row["mode"], static["mode"]) == ("rendezvous", "static")
    for each in (row, static):
        assert each["M"] == 3 and each["rtt_seconds"] == 0.05
        assert [run["rtt_seconds"] for run in each["runs"]] == [0.0, 0.05]
    # The emulated links delay the set-up (3 + 2.5 + 0.5 round trips by the accounting; 3 without
    # the rendezvous, which the static table leaves out). Judged on the fastest of three worlds at each
    # RTT: load only adds time, so one slow world without delay cannot fake a negative count (a single
    # world each gave -6.7 round trips on a loaded machine).
    for each, least in ((row, 2.0), (static, 1.0)):
        fastest = {run["rtt_seconds"]: min(run["samples"]["setup"]) for run in each["runs"]}
        assert (fastest[0.05] - fastest[0.0]) / 0.05 > least, each
    assert result["accounting_round_trips"]["total"] == 6.0
    assert result["static_accounting_round_trips"] == 3.0


def test_setup_benchmark_refuses_zero_worlds(monkeypatch):
    from benchmarks import bench_setup

    monkeypatch.setattr(sys, "argv", ["bench_setup", "--worlds", "0"])
    with pytest.raises(SystemExit):
        bench_setup.main()


def test_quick_offline_benchmark_costs_what_the_eigensolver_asks_for(tmp_path):
    """bench_offline (issue 39): the ledger's requests of one ladder eigensolve, costed and one triple made."""
    import json

    from benchmarks import bench_offline

    bench_offline.main(["--quick", "--check", "--out", str(tmp_path)])
    payload = json.loads((tmp_path / "offline.json").read_text())
    (at_512,) = payload["by_key_size"]
    assert payload["quick"] and at_512["key_bits"] == 512
    # every recorded item is a triple or a truncation pair, and each kind is costed
    assert at_512["triples"]["requests"] + at_512["truncation_pairs"]["requests"] == payload["requests"] > 0
    assert at_512["triples"]["operations"]["exponentiations"] > 0
    assert at_512["estimated_seconds_per_provider"] == pytest.approx(
        at_512["triples"]["seconds_per_provider"] + at_512["truncation_pairs"]["seconds_per_provider"]
    )
    assert at_512["check_one_triple"]["wall_seconds"] > 0
    # truncation pairs are OTs only (no Paillier operation), and they were generated for real
    pairs = at_512["truncation_pairs"]
    assert pairs["operations"]["ot_receiver"] == 2 * pairs["operations"]["ot_sender"] > 0  # M - 1 = 2 peers
    assert pairs["operations"]["own_encryptions"] == pairs["operations"]["exponentiations"] == 0
    assert pairs["generated"]["requests"] == pairs["requests"]
    assert min(pairs["generated"]["bytes_sent"]) > 0 and pairs["generated"]["wall_seconds"] > 0
