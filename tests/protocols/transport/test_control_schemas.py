"""Typed schemas of the STATUS and ABORT frames a peer sends: any other shape is a ProtocolError naming it."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.transport.certs import write_credentials
from protocols.transport.socket_frames import (
    MAX_LABEL_CHARS,
    MAX_REASON_CHARS,
    STATUS,
    parse_abort,
    parse_status,
)
from protocols.transport.wire import encode_message
from tests.helpers.hypothesis_budget import examples
from tests.helpers.socket_helpers import run_socket_world

NAMES = frozenset({"a0", "a1", "r"})
SENDER = "'a1' (rank 1)"

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=300),
    st.binary(max_size=40),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
#: Mappings near the schemas: the expected keys (some missing, some extra) with values of any shape.
near = st.dictionaries(
    st.sampled_from(["phase", "waiting", "reason", "extra", ""]),
    st.one_of(values, st.sampled_from(sorted(NAMES)), st.text(min_size=250, max_size=70000)),
    max_size=4,
)


def check_status(payload: bytes) -> None:
    try:
        value = parse_status(SENDER, payload, NAMES)
    except ProtocolError as exc:
        assert SENDER in str(exc) and "status frame" in str(exc), exc
        return
    assert set(value) == {"phase", "waiting"}
    assert value["phase"] is None or (
        isinstance(value["phase"], str) and len(value["phase"]) <= MAX_LABEL_CHARS
    )
    assert value["waiting"] is None or value["waiting"] in NAMES


def check_abort(payload: bytes) -> None:
    try:
        reason = parse_abort(SENDER, payload)
    except ProtocolError as exc:
        assert SENDER in str(exc) and "abort frame" in str(exc), exc
        return
    assert isinstance(reason, str) and len(reason) <= MAX_REASON_CHARS


@settings(max_examples=400, deadline=None)
@given(st.one_of(values, near))
def test_status_of_any_shape_is_parsed_or_refused_naming_the_sender(value):
    check_status(encode_message(value))


@settings(max_examples=400, deadline=None)
@given(st.one_of(values, near))
def test_abort_of_any_shape_is_parsed_or_refused_naming_the_sender(value):
    check_abort(encode_message(value))


@settings(max_examples=examples(300), deadline=None)  # a quarter outside CI (tests/helpers)
@given(st.binary(max_size=200))
def test_status_and_abort_from_arbitrary_bytes_are_protocol_errors_at_worst(payload):
    check_status(payload)
    check_abort(payload)


def test_the_schemas_accept_what_honest_parties_send_and_refuse_the_rest():
    assert parse_status(SENDER, encode_message({"phase": "sum", "waiting": "a0"}), NAMES) == {
        "phase": "sum",
        "waiting": "a0",
    }
    assert parse_status(SENDER, encode_message({"phase": None, "waiting": None}), NAMES)["phase"] is None
    assert parse_abort(SENDER, encode_message({"reason": "party 'a1' failed"})) == "party 'a1' failed"
    for bad, needle in [
        ({"phase": "sum"}, "keys"),
        ({"phase": "sum", "waiting": None, "extra": 1}, "keys"),
        ({"phase": ["sum"], "waiting": None}, "phase"),
        ({"phase": "sum", "waiting": ["a0"]}, "waiting"),
        ({"phase": "sum", "waiting": "mallory"}, "not a party of this run"),
        ({"phase": "x" * (MAX_LABEL_CHARS + 1), "waiting": None}, f"at most {MAX_LABEL_CHARS}"),
        (["phase", "waiting"], "mapping"),
    ]:
        with pytest.raises(ProtocolError, match=needle):
            parse_status(SENDER, encode_message(bad), NAMES)
    for bad, needle in [
        ({"reason": b"bytes"}, "reason"),
        ({"reason": "x" * (MAX_REASON_CHARS + 1)}, f"at most {MAX_REASON_CHARS}"),
        ({"reason": "r", "blame": "a0"}, "keys"),
    ]:
        with pytest.raises(ProtocolError, match=needle):
            parse_abort(SENDER, encode_message(bad))


def test_a_malformed_status_ends_the_run_naming_its_sender(tmp_path):
    write_credentials(["a0", "a1", "r"], tmp_path)

    def rogue(party):
        party.channel._broadcast(STATUS, {"phase": ["sum"], "waiting": {"a0": 1}})

    def waiter(party):
        return party.recv("a1")

    results = run_socket_world({"a0": waiter, "a1": rogue, "r": waiter}, tmp_path, timeout=5)
    for name in ("a0", "r"):
        error = results[name]
        assert isinstance(error, ProtocolError), (name, error)
        assert "'a1' (rank 1) sent a malformed status frame" in str(error), error
