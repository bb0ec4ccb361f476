"""Typed schemas of the set-up messages (link HELLO, registration, the introducer's reply and address table)."""

from __future__ import annotations

import socket
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocols.errors import ProtocolError
from protocols.transport.links import handshake
from protocols.transport.mesh import connect_mesh
from protocols.transport.rendezvous import (
    MAX_NAME_CHARS,
    listen,
    parse_hello,
    parse_registration,
    parse_reply,
    send_message,
)

WHO = "a connection from 127.0.0.1:5"

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=300), st.binary(max_size=20)
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=10,
)
ports = st.one_of(st.integers(min_value=-5, max_value=70000), values)
addresses = st.one_of(st.lists(st.one_of(st.text(max_size=300), ports), max_size=3), values)
#: Mappings near the schemas: their keys (some missing, some extra) with values of any shape.
#: Waiting-room statuses near the schema.
statuses = st.dictionaries(
    st.sampled_from(["joined", "missing", "seconds_left", "x"]),
    st.one_of(values, ports, st.lists(st.one_of(st.text(max_size=300), values), max_size=3)),
    max_size=4,
)
near = st.dictionaries(
    st.sampled_from(["name", "rank", "host", "port", "refused", "error", "table", "waiting", "x"]),
    st.one_of(
        values, ports, statuses, st.dictionaries(st.one_of(st.text(max_size=300)), addresses, max_size=3)
    ),
    max_size=5,
)
messages = st.one_of(near, st.dictionaries(st.text(max_size=8), values, max_size=4))


def refused_naming(who, call, msg):
    try:
        return call(who, msg)
    except ProtocolError as exc:
        assert who in str(exc), exc
        return None


@settings(max_examples=300, deadline=None)
@given(messages)
def test_hello_of_any_shape_is_a_name_or_a_protocol_error(msg):
    name = refused_naming(WHO, parse_hello, msg)
    assert name is None or (isinstance(name, str) and len(name) <= MAX_NAME_CHARS)


@settings(max_examples=300, deadline=None)
@given(messages)
def test_registration_of_any_shape_is_typed_or_a_protocol_error(msg):
    got = refused_naming(WHO, parse_registration, msg)
    if got is not None:
        name, rank, host, port = got
        assert isinstance(name, str) and isinstance(host, str) and type(rank) is int and type(port) is int
        assert rank >= 0 and 0 < port < 65536


@settings(max_examples=400, deadline=None)
@given(messages)
def test_reply_address_table_and_status_of_any_shape_are_typed_or_a_protocol_error(msg):
    got = refused_naming("the rendezvous at 127.0.0.1:1", parse_reply, msg)
    if got is not None and got[0] == "table":
        for name, (host, port) in got[1].items():
            assert isinstance(name, str) and isinstance(host, str) and type(port) is int and 0 < port < 65536
    elif got is not None and got[0] == "waiting":
        joined, missing, left = got[1]
        assert all(isinstance(n, str) and len(n) <= MAX_NAME_CHARS for n in [*joined, *missing])
        assert type(left) is int and left >= 0
    elif got is not None:
        assert got[0] in ("refused", "error") and isinstance(got[1], str)


def test_the_schemas_accept_what_honest_parties_send():
    assert parse_hello(WHO, {"name": "a0"}) == "a0"
    assert parse_registration(WHO, {"name": "a0", "rank": 0, "host": "127.0.0.1", "port": 4000}) == (
        "a0",
        0,
        "127.0.0.1",
        4000,
    )
    assert parse_reply(WHO, {"table": {"a0": ["127.0.0.1", 4000]}}) == ("table", {"a0": ("127.0.0.1", 4000)})
    for bad in ({"table": {"a0": "127.0.0.1:4000"}}, {"table": {"a0": ["h", True]}}, {"table": [1]}, {}):
        with pytest.raises(ProtocolError, match="the rendezvous sent a malformed"):
            parse_reply("the rendezvous", bad)
    with pytest.raises(ProtocolError, match="name is a list, not a str"):
        parse_hello(WHO, {"name": ["a0"]})


def test_a_hello_whose_name_is_a_list_does_not_stop_the_acceptor():
    """A dialler sends HELLO {"name": ["a0"]}: refused, and the real a0 still connects."""
    ranks = {"a0": 0, "a1": 1}
    listeners = {name: listen("127.0.0.1", 0) for name in ranks}
    table = {name: ("127.0.0.1", sock.getsockname()[1]) for name, sock in listeners.items()}
    results = {}

    def party(name):
        try:
            results[name] = connect_mesh(
                name, ranks, table, listeners[name], client_ctx=None, server_ctx=None, timeout=5
            )
        except ProtocolError as exc:
            results[name] = exc

    a1 = threading.Thread(target=party, args=("a1",))
    a1.start()
    raw = socket.create_connection(table["a1"])
    stream, _ = handshake(raw, None, server=False, expected="a1", me="?", where="a1", timeout=5)
    send_message(stream, {"name": ["a0"]})
    a0 = threading.Thread(target=party, args=("a0",))
    a0.start()
    a0.join(15)
    a1.join(15)
    stream.close()
    assert isinstance(results["a1"], dict) and set(results["a1"]) == {"a0"}, results["a1"]
    assert isinstance(results["a0"], dict) and set(results["a0"]) == {"a1"}, results["a0"]
    for streams in results.values():
        for s in streams.values():
            s.close()
