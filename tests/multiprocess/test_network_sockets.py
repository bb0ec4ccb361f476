"""The network study's socket check: processes over the WAN emulator take at least the links' delays."""

from __future__ import annotations

import numpy as np

from mpc_pca.deploy.local import run_threads
from mpc_pca.studies.network_runs import data, measure, points
from mpc_pca.studies.network_sockets import run_over_emulator
from protocols.testing.link_model import LinkProfile


def test_processes_over_the_emulator_give_the_threads_result_and_pay_the_round_trips():
    parts = data(60, 6)
    settings = {"n_components": 2}
    profile = LinkProfile(0.06, 100e6)
    seconds, over_sockets = run_over_emulator("pppca-ss", parts, settings, profile)
    threads = run_threads("pppca-ss", parts, settings, link_profile=profile)
    # the covariance mode reveals the exact fixed-point sum: both ways give the same components
    assert np.array_equal(np.asarray(over_sockets["components"]), np.asarray(threads["components"]))
    # every message's one-way delay on the critical path, plus at least one handshake round trip
    assert seconds >= threads["links"]["message_depth"] * 0.03 + 0.06


def test_a_sockets_point_records_both_ways():
    (point,) = [p for p in points(True, {}) if p["kind"] == "sockets"]
    record = measure(point | {"n": 60, "d": 6, "rtt": 0.04})
    assert len(record["emulator_seconds"]) == len(record["seconds"]) == point["repeats"]
    assert min(record["seconds"]) >= record["message_depth"] * 0.02
    assert min(record["emulator_seconds"]) >= record["message_depth"] * 0.02
