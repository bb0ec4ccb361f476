"""The conformance kit (protocols.testing): every backend passes it; each broken backend is flagged."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from protocols.backends import make_backend
from protocols.encoding import FixedPointCodec
from protocols.errors import ProtocolError
from protocols.prg import RingPRG
from protocols.runtime import run_inprocess
from protocols.testing import (
    PROPERTIES,
    ConformanceError,
    Recorder,
    check_secure_sum_backend,
    check_view_independence,
    mangle,
    run_recorded,
)
from protocols.testing import strategies as kst
from tests.helpers import broken_backends as broken

IN_PROCESS = {
    "additive": {},
    "additive-masks": {},
    "paillier": {"key_bits": 512, "allow_insecure_key_size": True},
}


@pytest.mark.parametrize("name", sorted(IN_PROCESS))
def test_every_in_process_backend_passes_the_kit(check_secure_sum_backend, name):
    report = check_secure_sum_backend(make_backend(name, **IN_PROCESS[name]))
    assert report.passed == list(PROPERTIES)
    assert report.views is not None and report.views.tests  # the view test did test something


def test_crypten_backend_is_outside_the_in_process_kit():
    """The kit runs parties as threads; the crypten backend refuses them, naming what it needs."""
    from protocols.backends.crypten import CrypTenBackend

    backend = CrypTenBackend()

    def contributor(party):
        return backend.secure_sum(party, np.ones(3), contributors=("a", "b"), receiver="b")

    with pytest.raises(
        ProtocolError, match=r"needs parties that are processes over torch.distributed|needs torch"
    ):
        run_inprocess({"a": contributor, "b": contributor}, timeout=30)


@pytest.mark.parametrize("frac_bits", [8, 32, 48])
@pytest.mark.parametrize("name", ["additive", "additive-masks"])
def test_secure_sum_properties_hold_over_several_frac_bits(check_secure_sum_backend, name, frac_bits):
    backend = make_backend(name, frac_bits=frac_bits)
    checks = ["correctness", "receiver-only output", "validation before sending", "two groups in one run"]
    assert check_secure_sum_backend(backend, checks=checks).passed == checks


def test_paillier_properties_hold_with_few_frac_bits(check_secure_sum_backend):
    backend = make_backend("paillier", frac_bits=8, key_bits=512, allow_insecure_key_size=True)
    assert check_secure_sum_backend(backend, checks=["correctness"]).passed == ["correctness"]


def test_a_subclass_overriding_the_public_secure_sum_is_checked_through_it(check_secure_sum_backend):
    calls = []

    class Counting(type(make_backend("additive"))):
        def secure_sum(self, party, value, **kwargs):
            calls.append(party.name)
            return super().secure_sum(party, value, **kwargs)

    check_secure_sum_backend(Counting(), checks=["correctness", "two groups in one run"], max_examples=5)
    assert "server" in calls and "p0" in calls


# -- each broken backend is flagged, naming its property --------------------------------------

BROKEN = [
    (broken.OffsetAtReceiver, "correctness", "more than the stated bound"),
    (broken.ForwardsTheSum, "receiver-only output", "non-receiver 'p0' was sent the sum by 'server'"),
    (broken.AnnouncesShapeFirst, "validation before sending", "sent 1 message\\(s\\) before refusing it"),
    (broken.FrozenMaskCounter, "fresh randomness", "randomness reused across sums"),
    (broken.ZeroOnFailure, "dead peer", "instead of raising a ProtocolError"),
    (broken.TrustsItsPeers, "malformed peer", "instead of a ProtocolError"),
    (broken.ShortMasks, "view independence", "chi-square"),
]


@pytest.mark.parametrize(("backend_class", "prop", "detail"), BROKEN, ids=[b[1] for b in BROKEN])
def test_the_kit_flags_a_broken_backend_by_its_property(backend_class, prop, detail):
    """The whole kit runs; the first property that fails is the one the backend breaks."""
    with pytest.raises(ConformanceError, match=detail) as caught:
        check_secure_sum_backend(backend_class(), fault_timeout=0.5)
    assert caught.value.property == prop
    assert str(caught.value).startswith(f"secure-sum conformance: property {prop!r} failed")
    assert isinstance(caught.value, AssertionError)


def test_short_masks_fail_on_the_servers_view_and_uniformity():
    with pytest.raises(ConformanceError) as caught:
        check_secure_sum_backend(broken.ShortMasks(), checks=["view independence"])
    message = str(caught.value)
    assert "party 'server'" in message
    assert "uniformity of byte 4" in message and "homogeneity of byte 4" in message
    assert "byte 0 of" not in message  # the masked low half is uniform and does not depend on the input


def test_unknown_property_and_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="unknown properties"):
        check_secure_sum_backend(make_backend("additive"), checks=["speed"])
    with pytest.raises(ValueError, match="at least 2"):
        check_secure_sum_backend(make_backend("additive"), n_contributors=1)
    with pytest.raises(TypeError, match="SecureSumBackend"):
        check_secure_sum_backend(object())


# -- recording -------------------------------------------------------------------------------


def test_recorder_keeps_every_delivered_message_even_unread_ones():
    recorder = Recorder()
    payload = np.arange(3, dtype=np.uint64)

    def alice(party):
        party.send("bob", payload)
        payload[:] += np.uint64(10)  # the sender's later in-place change must not alter the record
        party.send("bob", b"second")
        party.send("carol", {"k": [1, 2]})

    roles = {"alice": alice, "bob": lambda party: party.recv("alice"), "carol": lambda party: None}
    run = run_inprocess(roles, wrap_channel=recorder.wrap)
    assert np.array_equal(run.outputs["bob"], [0, 1, 2])
    view = recorder.view("bob")
    assert list(view) == [("alice", 0), ("alice", 1)]
    assert np.array_equal(view[("alice", 0)], [0, 1, 2]) and view[("alice", 1)] == b"second"
    assert recorder.view("carol") == {("alice", 0): {"k": [1, 2]}}  # never read, still delivered
    assert [d.receiver for d in recorder.sent_by("alice")] == ["bob", "bob", "carol"]
    assert run.reports["alice"].messages_sent == 3  # the wrapper keeps the meter


def test_faults_replace_what_a_party_sends_and_the_record_holds_the_corrupted_message():
    roles = {"a": lambda party: party.send("b", np.zeros(4, np.uint64)), "b": lambda party: party.recv("a")}
    run = run_recorded(roles, faults={"a": mangle})
    assert run.outputs["b"].shape == (3,)
    assert run.recorder.view("b")[("a", 0)].shape == (3,)
    assert mangle("x", b"abc") == b"ab" and mangle("x", {"a": 1, "b": 2}) == {"b": 2}
    assert mangle("x", [1]) == [1, 0] and mangle("x", 5) == "garbage"
    assert mangle("x", np.zeros((), np.uint64)).shape == (0,)


def test_run_recorded_captures_each_partys_exception():
    def dies(party):
        raise RuntimeError("boom")

    run = run_recorded({"a": dies, "b": lambda party: party.recv("a")}, timeout=5)
    assert run.failed and isinstance(run.errors["a"], RuntimeError)
    assert isinstance(run.errors["b"], ProtocolError) and run.result is None


# -- view independence on role functions that are not a secure sum ----------------------------

CODEC = FixedPointCodec(20)


def _two_party_roles(x, y, leak: bool):
    """alice and carol send bob x + y; honest: one-time pads from a seed they share."""

    def alice(party):
        seed = party.recv("carol")
        pad = RingPRG(seed).ring_elements(x.shape)
        party.send("bob", CODEC.encode(x, 2) if leak else CODEC.encode(x, 2) + pad)

    def carol(party):
        import secrets

        seed = secrets.token_bytes(32)
        party.send("alice", seed)
        pad = RingPRG(seed).ring_elements(y.shape)
        party.send("bob", CODEC.encode(y, 2) if leak else CODEC.encode(y, 2) - pad)

    def bob(party):
        return CODEC.decode(party.recv("alice") + party.recv("carol"))

    return {"alice": alice, "carol": carol, "bob": bob}


def _inputs():
    c = np.round(np.random.default_rng(1).uniform(-1e3, 1e3, 3000) * CODEC.scale) / CODEC.scale
    return (np.zeros(3000), c), (c, np.zeros(3000))


def test_view_independence_accepts_one_time_pads_and_states_its_tests():
    (xa, ya), (xb, yb) = _inputs()
    report = check_view_independence(
        _two_party_roles(xa, ya, False), _two_party_roles(xb, yb, False), repeats=2
    )
    assert report.alpha == 1e-6 and report.repeats == 2
    bob_tests = [t for t in report.tests if t.party == "bob"]
    assert len(bob_tests) == 2 * 8 * 2  # 2 messages x 8 byte positions x (homogeneity, uniformity)
    # 3000 words per run, 2 runs per input set: 6000 per sample, 12000 pooled for uniformity
    assert {t.n for t in bob_tests if "homogeneity" in t.test} == {6000}
    assert {t.n for t in bob_tests if "uniformity" in t.test} == {12000}
    assert any("alice" in s for s in report.skipped)  # a 32-byte seed per run is too little to test


def test_view_independence_rejects_a_protocol_that_sends_inputs_in_the_clear():
    (xa, ya), (xb, yb) = _inputs()
    with pytest.raises(
        AssertionError, match=r"(?s)view independence failed: .* party 'bob', message 0 from 'alice'"
    ):
        check_view_independence(_two_party_roles(xa, ya, True), _two_party_roles(xb, yb, True), repeats=1)


def test_view_independence_refuses_inputs_with_different_outputs():
    (xa, ya), _ = _inputs()
    with pytest.raises(AssertionError, match="same outputs, but party 'bob'"):
        check_view_independence(_two_party_roles(xa, ya, False), _two_party_roles(xa, xa, False))


# -- strategies ------------------------------------------------------------------------------


@given(data=st.data(), m=st.integers(1, 6), f=kst.frac_bits(0, 52))
def test_summands_fit_the_ring_budget_for_m_summands(data, m, f):
    codec = FixedPointCodec(f)
    arrays = data.draw(kst.summands(codec, m))
    assert len(arrays) == m and len({a.shape for a in arrays}) == 1
    total = np.zeros(arrays[0].shape, dtype=np.uint64)
    for array in arrays:
        total += codec.encode(array, n_summands=m)  # never raises
    # correctly rounded real sum (a float64 np.sum cancels: -7.7e17 + 1 + 7.7e17 gives 0)
    exact = np.array([math.fsum(column) for column in zip(*(a.ravel() for a in arrays), strict=True)])
    exact = exact.reshape(arrays[0].shape)
    assert np.allclose(codec.decode(total), exact, rtol=2.0**-50, atol=m * codec.resolution)


def test_summands_reach_the_edge_of_the_budget():
    from hypothesis import find

    codec = FixedPointCodec(20)
    edge = kst.budget(codec, 3)
    assert edge < codec.max_abs(3)
    found = find(
        kst.summands(codec, 3, shape=(2,)), lambda arrays: any(np.any(np.abs(a) == edge) for a in arrays)
    )
    assert any(np.any(np.abs(a) == edge) for a in found)


@given(n=st.integers(1, 40), data=st.data())
def test_row_splits_cover_every_row_with_at_least_one_each(n, data):
    k = data.draw(st.integers(1, n))
    sizes = data.draw(kst.row_splits(n, k))
    assert len(sizes) == k and sum(sizes) == n and min(sizes) >= 1


def test_row_splits_go_down_to_one_row_and_refuse_too_many_parties():
    from hypothesis import find

    assert find(kst.row_splits(10, 3), lambda s: s.count(1) == 2) in ([1, 1, 8], [1, 8, 1], [8, 1, 1])
    with pytest.raises(ValueError, match="cannot split 2 rows among 3"):
        find(kst.row_splits(2, 3), lambda s: True)


@given(names=kst.party_names(2, 5), backend=kst.backends())
def test_party_names_and_backends_run_a_secure_sum(names, backend):
    from protocols.secure_sum import run_secure_sum

    values = {name: np.full(2, 0.5) for name in names}
    receiver = "rx" if "rx" not in names else names[0]
    total, _ = run_secure_sum(values, receiver=receiver, backend=backend)
    assert np.allclose(total, 0.5 * len(names), atol=backend.sum_error_bound(len(names)))


def test_only_the_kit_imports_hypothesis():
    import subprocess
    import sys

    code = (
        "import sys, protocols, protocols.backends.paillier, protocols.secure_sum, protocols.runtime\n"
        "assert 'hypothesis' not in sys.modules, 'imported hypothesis'\n"
        "import protocols.testing.link_model, protocols.testing.wan_emulator\n"
        "assert 'hypothesis' not in sys.modules, 'the network emulation imported hypothesis'\n"
        "from protocols.testing import check_secure_sum_backend\n"
        "assert 'hypothesis' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
