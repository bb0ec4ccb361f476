"""The network study: its arithmetic on numbers whose answer is known, its verdicts following the records, a tiny run."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mpc_pca.studies import network_claims, network_report
from mpc_pca.studies.framework import load_records, run_study
from mpc_pca.studies.network import STUDY
from mpc_pca.studies.network_model import crossover, decompose, line_crossover, traffic
from mpc_pca.studies.network_runs import EXTRAPOLATED, points
from protocols.errors import InputValidationError

# -- crossover ----------------------------------------------------------------------------------------------------


def test_crossover_of_two_lines_is_where_they_meet():
    xs = [0.0, 0.1, 0.4]  # not symmetric about the crossing: an interpolation from the wrong end fails
    slow_start = [1 + 10 * x for x in xs]  # 1 + 10x = 2 + 5x at x = 0.2
    fast_start = [2 + 5 * x for x in xs]
    assert crossover(xs, slow_start, fast_start) == pytest.approx(0.2)
    assert crossover(xs, fast_start, slow_start) == pytest.approx(0.2)
    assert line_crossover(xs, slow_start, fast_start) == pytest.approx(0.2)


def test_crossover_sorts_the_points_and_counts_an_exact_tie():
    assert crossover([0.4, 0.0, 0.1], [5, 1, 2], [4, 2, 2.5]) == pytest.approx(0.2)
    assert crossover([0, 1, 2], [1, 5, 9], [2, 5, 6]) == 1.0


def test_no_crossover_inside_the_range_but_lines_meet_beyond_it():
    xs = [0.0, 0.02, 0.1]
    ss = [0.5 + 20 * x for x in xs]  # many rounds: steep
    he = [3.0 + 5 * x for x in xs]  # few rounds: flat; equal at x = 2.5 / 15
    assert crossover(xs, ss, he) is None
    assert line_crossover(xs, ss, he) == pytest.approx(2.5 / 15)


def test_lines_that_never_meet_as_the_rtt_grows():
    xs = [0.0, 0.1]
    assert line_crossover(xs, [1, 2], [2, 3]) is None  # parallel
    assert line_crossover(xs, [1, 2], [2, 4]) is None  # met at a negative RTT


@pytest.mark.parametrize(
    ("xs", "a", "b"),
    [([0.0], [1.0], [2.0]), ([0.0, 1.0], [1.0], [2.0, 3.0]), ([0.0, float("nan")], [1.0, 2.0], [2.0, 3.0])],
)
def test_crossover_refuses_series_it_cannot_compare(xs, a, b):
    with pytest.raises(InputValidationError):
        crossover(xs, a, b)


# -- decomposition and traffic ------------------------------------------------------------------------------------


def test_decomposition_terms():
    parts = decompose(2.0, 10, 1_000_000, 0.1, 8e6, 3.0)
    assert (parts.compute, parts.latency, parts.transmission, parts.setup) == pytest.approx(
        (2.0, 0.5, 1.0, 0.3)
    )
    assert parts.total == pytest.approx(3.8)
    assert decompose(2.0, 10, 1_000_000, 0.1, None, 0.0).transmission == 0.0


@pytest.mark.parametrize(
    "args", [(-1.0, 1, 1, 0.1, None, 0.0), (1.0, -1, 1, 0.1, None, 0.0), (1.0, 1, 1, 0.1, 0.0, 0.0),
             (1.0, 1, 1, float("nan"), None, 0.0)],
)  # fmt: skip
def test_decomposition_refuses_impossible_terms(args):
    with pytest.raises(InputValidationError):
        decompose(*args)


def test_traffic_takes_the_busiest_party_and_the_busiest_holder():
    report = {
        "provider0": {"rounds": 5, "bytes_sent": 100},
        "provider1": {"rounds": 6, "bytes_sent": 90},
        "server": {"rounds": 9, "bytes_sent": 500},
    }
    t = traffic(report)
    assert (t.rounds, t.provider_rounds, t.max_bytes_sent, t.provider_bytes_sent, t.total_bytes_sent) == (
        9, 6, 500, 100, 690,
    )  # fmt: skip
    with pytest.raises(InputValidationError, match="data holder"):
        traffic({"server": {"rounds": 1, "bytes_sent": 1}})


# -- verdicts from records -------------------------------------------------------------------------------------


def _model(protocol: str, rtt: float, seconds: float, *, provider_rounds: int = 5, bw: float = 100e6) -> dict:
    spread = np.array([0.99, 1.0, 1.01])
    return {"kind": "model", "protocol": protocol, "rtt": rtt, "bandwidth": bw, "seconds": list(seconds * spread),
            "setup_seconds": 0.0, "setup_rtt": 0.0, "provider_rounds": provider_rounds, "message_depth": 10,
            "rounds": provider_rounds, "max_bytes_sent": 1000, "provider_bytes_sent": 1000, "n": 600, "d": 10}  # fmt: skip


def _compute(protocol: str, seconds: float, depth: int) -> dict:
    return {**_model(protocol, 0.0, seconds), "kind": "compute", "bandwidth": None, "message_depth": depth}


def _claim(records: list[dict], starts: str):
    (claim,) = [c for c in network_claims.claims(records) if c.text.startswith(starts)]
    return claim


def test_components_claim_follows_the_records():
    text = "hiding the covariance is round-bound"
    # 100 rounds at RTT 100 ms: the threshold is 0.8 x 100 x 0.05 = 4 s
    round_bound = [_model("ss-shares", 0.1, 1.0), _model("ss-components", 0.1, 6.0, provider_rounds=100)]
    assert _claim(round_bound, text).reproduced is True
    not_bound = [_model("ss-shares", 0.1, 1.0), _model("ss-components", 0.1, 3.0, provider_rounds=100)]
    claim = _claim(not_bound, text)
    assert claim.reproduced is False and "4.00 s" in claim.evidence
    assert _claim([_model("ss-shares", 0.1, 1.0)], text).reproduced is None


def test_ss_against_he_claim_and_its_crossover_follow_the_records():
    text = "secret sharing (PPPCA-SS, shares) beats Paillier"
    ss = [_model("ss-shares", r, 0.5 + 30 * r) for r in (0.0, 0.02, 0.1)]
    he = [_model("he", r, 2.0 + 10 * r) for r in (0.0, 0.02, 0.1)]  # equal at RTT 1.5 / 20 = 75 ms
    claim = _claim(ss + he, text)
    assert claim.reproduced is False and "cross at 75.0 ms" in claim.evidence
    he_slow = [_model("he", r, 5.0 + 5 * r) for r in (0.0, 0.02, 0.1)]
    claim = _claim(ss + he_slow, text)
    assert claim.reproduced is True and "no crossover" in claim.evidence
    (cross,) = network_report.crossovers(ss + he).values()
    assert cross[0] == pytest.approx(0.075) and cross[1] == pytest.approx(0.075)


def test_decomposition_claim_compares_measured_times_with_the_model():
    text = "the decomposition"
    compute = _compute("ss-shares", 1.0, depth=20)  # at RTT 100 ms the model says 1 + 20 x 0.05 = 2 s
    assert _claim([compute, _model("ss-shares", 0.1, 2.1)], text).reproduced is True
    claim = _claim([compute, _model("ss-shares", 0.1, 3.0)], text)
    assert claim.reproduced is False and "measured / model 1.50" in claim.evidence


def test_extrapolated_protocols_get_the_model_at_every_measured_network():
    records = [_compute("dpdpca", 4.0, depth=6), _model("ss-shares", 0.0, 1.0), _model("ss-shares", 0.1, 2.0)]
    grid = network_report.model_grid(records)
    assert grid[("dpdpca", 0.1, 100e6)] == [pytest.approx(4.0 + 6 * 0.05 + 8 * 1000 / 100e6)]
    rows = network_report.tables(records)[0].rows
    assert any("extrapolated" in row[0] and row[1] == "100" for row in rows)


def _sockets(protocol: str, rtt: float, emulator: float, threads: float, setup_rtt: float = 0.0) -> dict:
    return {"kind": "sockets", "protocol": protocol, "rtt": rtt, "bandwidth": 100e6,
            "emulator_seconds": [emulator] * 3, "seconds": [threads] * 3, "setup_seconds": setup_rtt * rtt,
            "emulator_setup_seconds": [0.3 + 5 * rtt] * 3}  # fmt: skip


def test_socket_check_subtracts_start_up_and_measures_set_up():
    # start-up 2 s at RTT 0; at RTT 100 ms the emulator spends 1 s more than threads + start-up: 10 RTT of set-up
    records = [_sockets("ss-shares", 0.0, 2.5, 0.5), _sockets("ss-shares", 0.1, 4.0, 1.0, setup_rtt=10.0)]
    zero, hundred = network_report.socket_checks(records)
    assert zero["startup"] == pytest.approx(2.0) and zero["verdict"] is None
    assert hundred["setup_rtt_measured"] == pytest.approx(10.0)
    assert hundred["setup_rtt_reported"] == pytest.approx(5.0)  # the parties' own set-up clocks
    assert hundred["model"] == pytest.approx(4.0) and hundred["verdict"].holds is True
    wrong = [_sockets("ss-shares", 0.0, 2.5, 0.5), _sockets("ss-shares", 0.1, 8.0, 1.0, setup_rtt=10.0)]
    assert _claim(wrong, "the in-process model").reproduced is False


# -- points and a tiny run ----------------------------------------------------------------------------------------


def test_points_full_size_is_the_issue_grid_and_quick_is_small():
    full = points(False, {})
    model = [p for p in full if p["kind"] == "model"]
    assert {(p["rtt"], p["bandwidth"]) for p in model} == {
        (r, b) for r in (0.0, 0.02, 0.1) for b in (10e6, 100e6, 1000e6)
    }
    assert {p["d"] for p in model} == {100} and {p["n"] for p in model} == {30_000}
    assert not any(p["protocol"] in EXTRAPOLATED for p in model)
    assert {p["protocol"] for p in full if p["kind"] == "compute"} >= set(EXTRAPOLATED)
    quick = points(True, {})
    assert {p["rtt"] for p in quick if p["kind"] == "model"} == {0.0, 0.1}
    assert len([p for p in quick if p["kind"] == "sockets"]) == 1
    with pytest.raises(InputValidationError, match="setup_rtt"):
        points(True, {"setup_rtt": "-1"})


@pytest.mark.slow
def test_a_tiny_run_measures_times_at_least_the_modelled_delays(tmp_path):
    chosen = [
        p | {"n": 60, "d": 6}
        for p in points(True, {"setup_rtt": "2"})
        if p["kind"] != "sockets" and p["protocol"] == "ss-shares"
    ]
    tiny = dataclasses.replace(STUDY, points=lambda quick, options: chosen)
    summary = run_study(tiny, tmp_path, quick=True, progress=False, log=lambda _: None)
    records = load_records(summary.results)
    (at_100ms,) = [r for r in records if r["kind"] == "model" and r["rtt"] == 0.1]
    assert at_100ms["message_depth"] >= at_100ms["provider_rounds"] >= 2
    assert min(at_100ms["seconds"]) >= at_100ms["message_depth"] * 0.05
    assert at_100ms["setup_seconds"] == pytest.approx(0.2)
    assert summary.plots and summary.plots[0].stat().st_size > 0
    claim = _claim(records, "the decomposition")
    assert claim.reproduced is not None and "1 points" in claim.evidence
