"""Fixed link addresses (--listen, --advertise) and the rendezvous's waiting room (parties as threads, TLS).

The waiting room: the rendezvous logs who has joined and who is missing at a
steady interval and tells the registered parties; a party whose connection
drops, or that registers again, replaces its registration until the table is
sent (at most ``max_rejoins`` times); after that a registration is refused
with a message saying the run has started.
"""

from __future__ import annotations

import argparse
import logging
import socket
import threading
import time
from typing import Any

import pytest

import protocols.runtime.network as network
from mpc_pca.cli.party import link_addresses
from protocols.errors import InputValidationError, PeerTimeoutError, ProtocolError
from protocols.runtime.parties import LinkOptions
from protocols.runtime.runner import parse_duration
from protocols.transport.certs import write_credentials
from protocols.transport.rendezvous import (
    INTRODUCER_NAME,
    Introducer,
    dial,
    parse_endpoint,
    parse_reply,
    read_message,
    register,
    send_message,
    waiting_line,
)
from protocols.transport.tls import AuthenticationError, Credentials, client_context, server_context
from tests.helpers.socket_helpers import free_port

RANKS = {"a0": 0, "a1": 1, "a2": 2}
VALUES = {"a0": 3, "a1": 5, "a2": 11}
WINDOW = 20.0
LOGGER = "mpc_pca.transport"


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials([*RANKS, INTRODUCER_NAME], directory)
    return directory


def exchange(party):
    for peer in party.channel.peers:
        party.send(peer, VALUES[party.name])
    return VALUES[party.name] + sum(party.recv(peer) for peer in party.channel.peers)


_HOSTED: list[Introducer] = []


@pytest.fixture(autouse=True)
def _close_introducers():
    yield
    while _HOSTED:
        _HOSTED.pop().close()


def host(tls_dir, window: float = WINDOW, **kwargs: Any) -> Introducer:
    ctx = server_context(Credentials.from_dir(tls_dir, INTRODUCER_NAME))
    _HOSTED.append(Introducer("127.0.0.1:0", RANKS, ctx, window, **kwargs))
    return _HOSTED[-1]


def raw_register(tls_dir, port: int, name: str, address: tuple[str, Any] = ("127.0.0.1", 1)):
    """Register ``name`` by hand; return the open stream and the rendezvous's first answer."""
    stream = dial(
        ("127.0.0.1", port), client_context(Credentials.from_dir(tls_dir, name)), expected=INTRODUCER_NAME,
        me=name, where="the rendezvous", deadline=time.monotonic() + 10, retry_unreachable=True, what=name,
    )  # fmt: skip
    send_message(stream, {"name": name, "rank": RANKS[name], "host": address[0], "port": address[1]})
    stream.sock.settimeout(10)
    return stream, parse_reply("the rendezvous", read_message(stream, "the rendezvous"))


def run_parties(tls_dir, port: int, names=tuple(RANKS), **options: Any) -> dict[str, Any]:
    """Every party in ``names`` in a thread (open_links, then an exchange); results or exceptions."""
    results: dict[str, Any] = {}

    def party(name: str) -> None:
        try:
            channel = network.open_links(
                name, RANKS, f"127.0.0.1:{port}", credentials=Credentials.from_dir(tls_dir, name),
                timeout=10, connect_timeout=WINDOW, host_rendezvous=False, **options.get(name, {}),
            )  # fmt: skip
            results[name] = network.run_role(channel, exchange)[0]
        except Exception as exc:  # collected for the test to inspect
            results[name] = exc

    threads = [threading.Thread(target=party, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(3 * WINDOW)
    return results


def wait_for(condition, seconds: float = 10.0) -> None:
    end = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < end, "condition not met in time"
        time.sleep(0.05)


# -- parsing ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "required", "expected"),
    [
        ("10.0.0.2:29501", True, ("10.0.0.2", 29501)),
        ("[2001:db8::1]:443", True, ("2001:db8::1", 443)),
        ("host.example.org:1", True, ("host.example.org", 1)),
        ("10.0.0.2", False, ("10.0.0.2", 0)),
        ("fe80::1", False, ("fe80::1", 0)),
        ("[::1]", False, ("::1", 0)),
        ("0.0.0.0:0", False, ("0.0.0.0", 0)),
    ],
)
def test_endpoints_parse(text, required, expected):
    assert parse_endpoint(text, "x", port_required=required) == expected


@pytest.mark.parametrize(
    ("text", "required", "message"),
    [
        ("10.0.0.2:http", True, r"advertise '10\.0\.0\.2:http': port 'http' .* is not an integer"),
        ("10.0.0.2:70000", True, r"advertise '10\.0\.0\.2:70000': port 70000 .* out of range"),
        ("10.0.0.2", True, r"advertise '10\.0\.0\.2' has no port"),
        ("10.0.0.2:0", True, r"advertise '10\.0\.0\.2:0': port 0 cannot be dialled"),
        (":5000", True, r"advertise ':5000'"),
        ("a b:5000", True, r"advertise 'a b:5000' is not HOST:PORT"),
    ],
)
def test_bad_endpoints_name_the_option_and_value(text, required, message):
    with pytest.raises(InputValidationError, match=message):
        parse_endpoint(text, "advertise", port_required=required)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400), ("1.5h", 5400)],
)
def test_join_windows_parse(text, seconds):
    assert parse_duration(text, "join_window") == seconds


@pytest.mark.parametrize("text", ["", "2x", "1h30", "-5", "h", "0"])
def test_bad_join_windows_name_the_value(text):
    with pytest.raises(InputValidationError, match=f"join_window {text!r}"):
        parse_duration(text, "join_window")


def test_the_party_command_parses_its_link_options():
    args = argparse.Namespace(
        listen="0.0.0.0:29501", advertise="203.0.113.7:443", join_window="2h", waiting_log_interval=5.0
    )
    assert link_addresses(args) == {
        "listen": ("0.0.0.0", 29501),
        "advertise": ("203.0.113.7", 443),
        "join_window": 7200.0,
        "waiting_log_interval": 5.0,
    }
    args.listen = "10.0.0.2"  # no port: the advertised one
    assert link_addresses(args)["listen"] == ("10.0.0.2", 443)
    args.listen, args.advertise = "fe80::1", None
    assert link_addresses(args)["listen"] == ("fe80::1", 0)
    args.listen = "10.0.0.2:x"
    with pytest.raises(InputValidationError, match=r"--listen '10\.0\.0\.2:x'"):
        link_addresses(args)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"listen": ("127.0.0.1", 70000)}, r"listen=\('127.0.0.1', 70000\) is invalid"),
        ({"advertise": ("127.0.0.1", 0)}, r"advertise=\('127.0.0.1', 0\) is invalid; .* 1 \.\. 65535"),
        ({"listen": ("127.0.0.1", 1), "listen_host": "127.0.0.1"}, "not both"),
        ({"join_window": 0}, "a0: join_window=0 is invalid"),
        ({"waiting_log_interval": float("nan")}, "a0: waiting_log_interval=nan is invalid"),
    ],
)
def test_link_options_refuse_bad_addresses(options, message):
    with pytest.raises(InputValidationError, match=message):
        LinkOptions("127.0.0.1:1", insecure=True, **options).check("a0")


def test_a_port_in_use_is_named():
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    try:
        with pytest.raises(InputValidationError, match=f"'a1' cannot listen on 127.0.0.1:{port}: .*in use"):
            network.open_links(
                "a1", RANKS, "127.0.0.1:1", credentials=None, listen_at=("127.0.0.1", port),
                host_rendezvous=False, connect_timeout=1,
            )  # fmt: skip
    finally:
        taken.close()


def test_waiting_room_statuses_are_typed():
    assert parse_reply("r", {"waiting": {"joined": ["a0"], "missing": ["a1"], "seconds_left": 3}}) == (
        "waiting",
        (["a0"], ["a1"], 3),
    )
    for bad in (
        {"joined": ["a0"], "missing": ["a1"]},
        {"joined": "a0", "missing": [], "seconds_left": 3},
        {"joined": [1], "missing": [], "seconds_left": 3},
        {"joined": [], "missing": [], "seconds_left": -1},
        {"joined": [], "missing": [], "seconds_left": True},
        [],
    ):
        with pytest.raises(ProtocolError, match="the rendezvous at x sent a malformed waiting-room status"):
            parse_reply("the rendezvous at x", {"waiting": bad})
    assert (
        waiting_line(["a0", "server"], ["a1"], 59.2)
        == "waiting room: joined [a0, server]; missing [a1] (60 s left)"
    )


# -- fixed addresses ----------------------------------------------------------------------------


def test_fixed_listen_and_advertised_addresses_give_the_same_result(tls_dir, caplog):
    """a0 listens on a fixed port, a1 on every interface advertising loopback, a2 advertises only a port."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    ports = [free_port() for _ in RANKS]
    introducer = host(tls_dir)
    options = {
        "a0": {"listen_at": ("127.0.0.1", ports[0])},
        "a1": {"listen_at": ("0.0.0.0", ports[1]), "advertise": ("127.0.0.1", ports[1])},
        "a2": {"advertise": ("localhost", ports[2])},  # listens on that port of the route to the master
    }
    results = run_parties(tls_dir, introducer.port, **options)
    assert results == {name: sum(VALUES.values()) for name in RANKS}, results
    text = caplog.text
    assert "'a0' (rank 0) joined from 127.0.0.1:" in text and f"advertising 127.0.0.1:{ports[0]}" in text
    assert f"a1: rank 1 listening on 0.0.0.0:{ports[1]}, advertising 127.0.0.1:{ports[1]}" in text, text
    assert f"a2: rank 2 listening on 127.0.0.1:{ports[2]}, advertising localhost:{ports[2]}" in text, text


def test_a_malformed_advertised_address_is_refused_naming_the_sender(tls_dir):
    introducer = host(tls_dir, 5)
    for address, reason in ((("127.0.0.1", 0), "port 0 is not an integer in 1 .. 65535"),
                            (("x" * 300, 5), "host has 300 characters")):  # fmt: skip
        stream, (key, value) = raw_register(tls_dir, introducer.port, "a1", address)
        stream.close()
        assert key == "refused", value
        assert "a connection from 127.0.0.1:" in value and reason in value, value


# -- the waiting room ---------------------------------------------------------------------------


def test_the_waiting_room_logs_who_joined_and_who_is_missing(tls_dir, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    introducer = host(tls_dir, log_interval=0.2)
    results = {}
    thread = threading.Thread(
        target=lambda: results.update(a0=run_parties(tls_dir, introducer.port, ("a0",)))
    )
    thread.start()
    wait_for(lambda: "waiting room: joined [a0]; missing [a1, a2] (" in caplog.text)
    wait_for(lambda: "'a0': waiting room: joined [a0]; missing [a1, a2] (" in caplog.text)
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("waiting room: joined")]
    assert all(line.endswith(" s left)") for line in lines), lines
    rest = run_parties(tls_dir, introducer.port, ("a1", "a2"))
    thread.join(3 * WINDOW)
    assert {**results["a0"], **rest} == {name: sum(VALUES.values()) for name in RANKS}
    assert "waiting room: all 3 parties joined; sending the address table" in caplog.text


def test_a_party_whose_connection_dropped_rejoins_and_the_run_completes(tls_dir, caplog):
    caplog.set_level(logging.INFO, logger=LOGGER)
    introducer = host(tls_dir, log_interval=0.2)
    stream, (key, _) = raw_register(tls_dir, introducer.port, "a1")
    assert key == "waiting"
    stream.close()  # the process died
    wait_for(lambda: "'a1' (rank 1) left: its connection closed; it can register again" in caplog.text)
    results = run_parties(tls_dir, introducer.port)
    assert results == {name: sum(VALUES.values()) for name in RANKS}, results
    assert introducer.rejoins == {"a0": 0, "a1": 1, "a2": 0}


def test_a_restarted_party_replaces_its_registration_and_the_old_connection_is_told(tls_dir, caplog):
    """The old registration (a dead address) is still connected when the new process registers."""
    caplog.set_level(logging.INFO, logger=LOGGER)
    introducer = host(tls_dir, log_interval=60)
    old, (key, _) = raw_register(tls_dir, introducer.port, "a1", ("127.0.0.1", 1))
    assert key == "waiting"
    replaced = "its earlier registration (advertising 127.0.0.1:1) is replaced and that connection closed"
    # The restarted a1 registers before a0 and a2 do: had both of them come first, the room would be full
    # with the old registration and the table would carry its dead address (a race, not the feature).
    results = {}
    restarted = threading.Thread(
        target=lambda: results.update(run_parties(tls_dir, introducer.port, ("a1",)))
    )
    restarted.start()
    wait_for(lambda: replaced in caplog.text)
    results.update(run_parties(tls_dir, introducer.port, ("a0", "a2")))
    restarted.join(3 * WINDOW)
    assert results == {name: sum(VALUES.values()) for name in RANKS}, results
    key, value = parse_reply("the rendezvous", read_message(old, "the rendezvous"))
    assert key == "refused" and "'a1' registered again from a connection from 127.0.0.1:" in value, value
    old.close()


def test_a_registration_after_the_table_was_sent_is_refused(tls_dir):
    introducer = host(tls_dir)
    results = run_parties(tls_dir, introducer.port)
    assert results == {name: sum(VALUES.values()) for name in RANKS}, results
    with pytest.raises(
        AuthenticationError, match="after the rendezvous had sent the address table: the run has started"
    ):
        register(
            f"127.0.0.1:{introducer.port}", "a1", 1, ("127.0.0.1", 5),
            client_context(Credentials.from_dir(tls_dir, "a1")), INTRODUCER_NAME, 5,
        )  # fmt: skip


def test_re_registrations_are_bounded_per_name(tls_dir):
    introducer = host(tls_dir, 10, max_rejoins=2)
    streams = []
    for _ in range(3):  # the first registration and two re-registrations
        stream, (key, value) = raw_register(tls_dir, introducer.port, "a1")
        assert key == "waiting", value
        streams.append(stream)
    stream, (key, value) = raw_register(tls_dir, introducer.port, "a1")
    assert key == "refused", value
    assert "'a1' has already registered again 2 times, the most the rendezvous accepts" in value, value
    stream.close()
    # the latest accepted registration stands: a2 (another name) still joins normally
    other, (key, _) = raw_register(tls_dir, introducer.port, "a2")
    assert key == "waiting"
    assert introducer.rejoins == {"a1": 2, "a2": 0}
    for s in [*streams, other]:
        s.close()


def test_a_party_gives_up_after_its_join_window(tls_dir):
    introducer = host(tls_dir, 1.0, log_interval=0.2)
    results = run_parties(tls_dir, introducer.port, ("a0",), a0={"join_window": 1.0})
    assert isinstance(results["a0"], PeerTimeoutError), results
    assert "'a1' (rank 1), 'a2' (rank 2) did not join" in str(results["a0"])


def test_closing_the_room_tells_the_registered_parties(tls_dir):
    introducer = host(tls_dir)
    stream, (key, _) = raw_register(tls_dir, introducer.port, "a0")
    assert key == "waiting"
    introducer.close()
    key, value = parse_reply("the rendezvous", read_message(stream, "the rendezvous"))
    assert (
        key == "error" and "the rendezvous was closed, but 'a1' (rank 1), 'a2' (rank 2) did not join" in value
    )
    stream.close()
