"""Relay mode with parties as threads: same results as direct links, tampering caught and named, bounds.

The relay (:mod:`protocols.transport.relay`) forwards each pair's own TLS 1.3
session; a relay that alters, replays, reorders or injects a frame is
simulated by overriding :meth:`RelayServer.forward`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import Any

import pytest

from protocols.errors import InputValidationError, ProtocolError
from protocols.runtime.network import run_role
from protocols.runtime.parties import LinkOptions
from protocols.transport.certs import write_credentials
from protocols.transport.links import ClosedError
from protocols.transport.relay import (
    BUFFERED_BYTES,
    DATA,
    END,
    MAX_FRAME_BYTES,
    NOTICE,
    OUTER,
    RELAY_NAME,
    STALL,
    RelayServer,
    connect_relay,
)
from protocols.transport.rendezvous import await_table, dial, send_message
from protocols.transport.tls import AuthenticationError, Credentials, client_context, server_context
from tests.helpers.relay_world import join_relayed
from tests.helpers.socket_helpers import run_socket_world
from tests.helpers.torch_worker import echo_roles

TIMEOUT = 20.0


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(["a0", "a1", "a2", "r", "b", "x", RELAY_NAME], directory)
    return directory


#: The layout of :func:`echo_roles`' world (its parties in rank order).
ECHO = {name: rank for rank, name in enumerate(echo_roles())}


def start_relay(tls_dir, layout, cls: type[RelayServer] = RelayServer, **kwargs: Any) -> RelayServer:
    ctx = server_context(Credentials.from_dir(tls_dir, kwargs.pop("cert", RELAY_NAME)))
    return cls("127.0.0.1:0", ctx, kwargs.pop("join_window", TIMEOUT), layout=layout, **kwargs)


def run_relayed_world(roles, tls_dir, relay: RelayServer, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Every party in a thread, through ``relay``; ``{name: (output, report) or exception}``."""
    ranks = {name: i for i, name in enumerate(roles)}
    results: dict[str, Any] = {}

    def party(name: str) -> None:
        try:
            channel = join_relayed(name, ranks, f"127.0.0.1:{relay.port}", tls_dir, timeout, timeout, 1 << 26)
            results[name] = run_role(channel, roles[name])
        except Exception as exc:  # collected for the test to inspect
            results[name] = exc

    threads = [threading.Thread(target=party, args=(name,), daemon=True) for name in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(4 * timeout)
    return results


def test_relayed_world_gives_the_direct_result_and_the_relay_sees_only_sizes(tls_dir):
    relay = start_relay(tls_dir, ECHO)
    relayed = run_relayed_world(echo_roles(), tls_dir, relay)
    direct = run_socket_world(echo_roles(), tls_dir)
    for name, outcome in relayed.items():
        assert not isinstance(outcome, Exception), (name, outcome)
        output, report = outcome
        assert output == direct[name][0], name
        got, expected = report.as_dict(), direct[name][1].as_dict()
        for key in ("bytes_sent", "bytes_received", "messages_sent", "messages_received", "rounds"):
            assert got[key] == expected[key], (name, key)
    assert relay.wait(TIMEOUT)
    assert not relay.refused
    # what the relay learns: who sent how many bytes to whom (ciphertext: a little more than the messages)
    assert relay.forwarded[("a0", "r")] > 300_000 * 8 > relay.forwarded[("a1", "r")]
    assert ("a0", "a1") in relay.forwarded  # every pair has its own session (handshake, BYE)


class AlteringRelay(RelayServer):
    """Misbehaves on the ``target``-th data frame from a0 to r (after the pair's handshake)."""

    target = 8  # well into the data (a0 sends r a 2.4 MB array: about ten frames)
    mode = "alter"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.count = 0
        self.held: bytes | None = None

    def forward(self, src, dst, kind, payload):
        if (src, dst) != ("a0", "r") or kind != DATA:
            return [(kind, payload)]
        self.count += 1
        if self.count == self.target:
            if self.mode == "alter":
                changed = bytearray(payload)
                changed[len(changed) // 2] ^= 0x01
                return [(kind, bytes(changed))]
            if self.mode == "replay":
                return [(kind, payload), (kind, payload)]
            if self.mode == "inject":
                return [(kind, bytes(range(256)) * 4), (kind, payload)]
            if self.mode == "swap":
                self.held = payload
                return []
        if self.count == self.target + 1 and self.mode == "swap":
            assert self.held is not None and self.held != payload
            return [(kind, payload), (kind, self.held)]
        if self.count == self.target - 1 and self.mode == "replay-old":
            self.held = payload
        if self.count == self.target + 1 and self.mode == "replay-old":
            return [(kind, self.held), (kind, payload)]
        return [(kind, payload)]


@pytest.mark.parametrize("mode", ["alter", "replay", "replay-old", "swap", "inject"])
def test_a_relay_that_tampers_with_a_frame_is_caught_and_named(tls_dir, mode):
    relay_class = type(f"Relay_{mode}", (AlteringRelay,), {"mode": mode})
    relay = start_relay(tls_dir, ECHO, relay_class)
    results = run_relayed_world(echo_roles(), tls_dir, relay)
    error = results["r"]
    assert isinstance(error, ProtocolError), error
    text = str(error)
    assert "frame on link 'r'<->'a0' failed authentication" in text, text
    assert "the relay altered, replayed, reordered or injected it" in text, text
    # the others learn it over their own authenticated links, from whichever report reaches them first:
    # r's, or a0's (whose TLS session got r's alert); either names the link r-a0 and the relay
    assert all(isinstance(results[n], ProtocolError) for n in ("a0", "a1", "a2")), results
    told = str(results["a1"])
    assert ("'r'<->'a0'" in told or "'a0'<->'r'" in told) and "the relay" in told, told
    relay.close()


def raw_party(tls_dir, name: str, ranks: dict[str, int], relay: RelayServer):
    """Register at the relay like a party, and return the bare connection (no pair sessions)."""
    deadline = time.monotonic() + TIMEOUT
    stream = dial(
        ("127.0.0.1", relay.port), client_context(Credentials.from_dir(tls_dir, name)), expected=RELAY_NAME,
        me=name, where="the relay", deadline=deadline, retry_unreachable=True, what=name,
    )  # fmt: skip
    send_message(stream, {"name": name, "rank": ranks[name], "layout": ranks})
    await_table(stream, name, "the relay", deadline, TIMEOUT)
    stream.sock.settimeout(TIMEOUT)
    return stream


def read_outer(stream) -> tuple[int, int, bytes]:
    kind, rank, size = OUTER.unpack(stream.read_exact(OUTER.size))
    return kind, rank, bytes(stream.read_exact(size))


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (OUTER.pack(DATA, 0, MAX_FRAME_BYTES + 1), f"a frame of {MAX_FRAME_BYTES + 1} bytes; at most"),
        (OUTER.pack(DATA, 9, 10), "a frame for rank 9, which is no other party of the run"),
        (OUTER.pack(DATA, 1, 10), "a frame for rank 1, which is no other party of the run"),
        (OUTER.pack(NOTICE, 0, 10), "a frame of kind 3, which a party may not send"),
    ],
    ids=["oversized", "unknown-destination", "itself", "relay-only-kind"],
)
def test_an_insider_frame_the_relay_cannot_forward_is_refused_naming_the_insider(tls_dir, header, reason):
    ranks = {"a0": 0, "b": 1, "a2": 2}
    relay = start_relay(tls_dir, ranks)
    conns: dict[str, Any] = {}

    def join(name: str) -> None:
        conns[name] = raw_party(tls_dir, name, ranks, relay)

    threads = [threading.Thread(target=join, args=(n,)) for n in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    conns["b"].send_parts([header, b"0123456789"])
    for honest in ("a0", "a2"):
        kind, rank, text = read_outer(conns[honest])
        assert (kind, rank) == (NOTICE, 1), (kind, rank, text)
        assert text.decode().startswith("'b' (rank 1) sent the relay ") and reason in text.decode()
        assert read_outer(conns[honest])[:2] == (END, 1)
    assert len(relay.refused) == 1 and reason in relay.refused[0] and "'b' (rank 1)" in relay.refused[0]
    with pytest.raises(ClosedError):  # the insider's connection is closed
        while True:
            read_outer(conns["b"])
    relay.close()


def test_a_party_that_does_not_read_is_bounded_and_dropped_by_name(tls_dir):
    queue = 4 * MAX_FRAME_BYTES
    ranks = {"a0": 0, "b": 1}
    relay = start_relay(tls_dir, ranks, queue_bytes=queue, stall_seconds=1.0)
    conns: dict[str, Any] = {}
    threads = [
        threading.Thread(target=lambda n=name: conns.__setitem__(n, raw_party(tls_dir, n, ranks, relay)))
        for name in ranks
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    chunk = OUTER.pack(DATA, 1, MAX_FRAME_BYTES) + bytes(MAX_FRAME_BYTES)

    def flood() -> None:  # far more than the queue, the socket buffers and the stall allow
        try:
            for _ in range(400):
                conns["a0"].send_parts([chunk])
        except OSError:
            pass

    threading.Thread(target=flood, daemon=True).start()
    kind, rank, text = read_outer(conns["a0"])  # b never reads: first the relay's report (issue 35) ...
    assert (kind, rank) == (STALL, 1), (kind, rank, text)
    assert text.decode().startswith("'b' (rank 1) has read nothing the relay forwarded to it for 1 s (")
    assert text.decode().endswith("and 'a0' (rank 0) waits to send to it")
    kind, rank, text = read_outer(conns["a0"])  # ... then, after the stall, the drop
    assert (kind, rank) == (NOTICE, 1)
    assert "'b' did not read what the relay forwarded to it for 1 s" in text.decode()
    assert relay.outboxes["b"].peak <= queue + OUTER.size + MAX_FRAME_BYTES
    relay.close()


def test_the_relay_must_prove_its_name_and_the_layouts_must_agree(tls_dir):
    impostor = start_relay(
        tls_dir, {"a0": 0, "a1": 1}, cert="x"
    )  # a CA-signed certificate, but not the relay's
    ctx = Credentials.from_dir(tls_dir, "a0")
    with pytest.raises(AuthenticationError, match="expected party 'relay', but the certificate is issued to"):
        connect_relay(
            "a0", {"a0": 0, "a1": 1}, f"127.0.0.1:{impostor.port}", client_ctx=client_context(ctx),
            server_ctx=server_context(ctx), join_window=5, timeout=5,
        )  # fmt: skip
    impostor.close()
    # issue 35: the operator's layout; a certified party that registers first with a one-party layout
    # (before: it became the run's layout, the relay served that party alone and ended) is refused by name
    layout = {"a0": 0, "a1": 1, "a2": 2}
    relay = start_relay(tls_dir, layout, join_window=10)
    for name, alone in (("a1", {"a1": 0}), ("a0", {"a0": 0, "a2": 1, "a1": 2})):
        with pytest.raises(AuthenticationError) as refused:
            raw_party(tls_dir, name, alone, relay)
        text = str(refused.value)
        assert f"{name!r} (certified; a connection from 127.0.0.1:" in text, text
        assert (
            f"registered the layout {alone}, but the relay's operator fixed the run's layout as {layout}"
            in text
        )
    assert not relay._forwarding.is_set()  # the relay still waits for the operator's parties
    conns: dict[str, Any] = {}
    threads = [
        threading.Thread(target=lambda n=name: conns.__setitem__(n, raw_party(tls_dir, n, layout, relay)))
        for name in layout
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert set(conns) == set(layout) and relay._forwarding.wait(TIMEOUT)  # the run starts
    assert relay.ranks == layout
    assert next(r for r in relay.rendezvous.refused if "operator fixed" in r).startswith("'a1' (certified;")
    relay.close()


def test_a_run_whose_party_was_refused_ends_at_the_join_window_naming_it(tls_dir):
    layout = {"a0": 0, "a1": 1}
    relay = start_relay(tls_dir, layout, join_window=3)
    with pytest.raises(AuthenticationError, match="operator fixed"):
        raw_party(tls_dir, "a1", {"a1": 0}, relay)
    with pytest.raises(ProtocolError) as ended:
        raw_party(tls_dir, "a0", layout, relay)
    text = str(ended.value)
    assert "'a1' (rank 1) did not join" in text and "refused: 'a1' (certified;" in text, text
    assert not relay.wait(1)


def raw_party_async(tls_dir, name, ranks, relay) -> threading.Thread:
    def run() -> None:
        with contextlib.suppress(ProtocolError):
            raw_party(tls_dir, name, ranks, relay)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_relay_link_options_refuse_insecure_and_direct_only_options(tls_dir):
    creds = Credentials.from_dir(tls_dir, "a0")
    with pytest.raises(InputValidationError, match="insecure=True cannot be used with relay="):
        LinkOptions("unused:1", None, True, relay="127.0.0.1:9").check("a0")
    with pytest.raises(InputValidationError, match="listen, advertise do not apply with a relay"):
        LinkOptions(
            "unused:1", creds, relay="127.0.0.1:9", listen=("127.0.0.1", 0), advertise=("h", 5)
        ).check("a0")
    with pytest.raises(InputValidationError, match="must look like ADDR:PORT"):
        LinkOptions("unused:1", creds, relay="nowhere").check("a0")
    with pytest.raises(InputValidationError, match="needs TLS credentials"):
        start_relay_without_tls()


def start_relay_without_tls() -> None:
    RelayServer("127.0.0.1:0", None, 1.0, layout={"a0": 0})  # type: ignore[arg-type]


def test_each_pair_checks_the_peer_certificate_names_the_party_at_that_rank(tls_dir):
    """a1 registers at the relay with its own certificate but answers a0's pair session with x's."""
    ranks = {"a0": 0, "a1": 1}
    relay = start_relay(tls_dir, ranks)
    errors: dict[str, BaseException] = {}
    streams: dict[str, Any] = {}

    def join(name: str, server_name: str) -> None:
        try:
            streams[name] = connect_relay(
                name, ranks, f"127.0.0.1:{relay.port}",
                client_ctx=client_context(Credentials.from_dir(tls_dir, name)),
                server_ctx=server_context(Credentials.from_dir(tls_dir, server_name)),
                join_window=TIMEOUT, timeout=TIMEOUT,
            )  # fmt: skip
        except ProtocolError as exc:
            errors[name] = exc

    threads = [threading.Thread(target=join, args=args) for args in (("a0", "a0"), ("a1", "x"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert isinstance(errors["a0"], AuthenticationError), errors
    assert "'a0': authentication failed for 'a1' (rank 1) through the relay: expected party 'a1'" in str(
        errors["a0"]
    )
    assert "issued to ['x']" in str(errors["a0"])
    # a1's side of the handshake completed; a0 then hung up, which a1 reads as the end of the link
    with pytest.raises(ProtocolError):
        streams["a1"]["a0"].read_exact(1)
    relay.close()


def test_the_relay_enrols_like_a_party_and_its_key_stays_on_its_host(tmp_path):
    """``certs request --party relay`` on the relay's host, ``certs sign`` at the CA: a working relay."""
    import shutil

    from protocols.transport.enrolment import init_ca, make_request, sign_request

    ca_dir, relay_host, party_host = tmp_path / "ca", tmp_path / "relay-host", tmp_path / "party-host"
    init_ca(ca_dir)
    for name, host in ((RELAY_NAME, relay_host), ("a0", party_host), ("a1", party_host)):
        files, _ = make_request(name, host)
        sign_request(ca_dir, files["csr"], host / f"{name}.pem", days=1, confirm=lambda request: True)
        shutil.copy(ca_dir / "ca.pem", host / "ca.pem")
    assert not (ca_dir / "relay.key").exists() and (relay_host / "relay.key").exists()
    relay = start_relay(relay_host, {"a0": 0, "a1": 1})
    results = run_relayed_world(
        {"a0": lambda party: party.send("a1", b"hello") or "sent", "a1": lambda party: party.recv("a0")},
        party_host,
        relay,
    )
    assert results["a0"][0] == "sent" and results["a1"][0] == b"hello", results
    relay.close()


def connect_pair(tls_dir, relay: RelayServer, max_buffered: dict[str, int]) -> dict[str, dict[str, Any]]:
    """``a0`` and ``a1`` connected through ``relay``; ``{name: {peer: stream}}``."""
    ranks = {"a0": 0, "a1": 1}
    streams: dict[str, Any] = {}

    def join(name: str) -> None:
        creds = Credentials.from_dir(tls_dir, name)
        streams[name] = connect_relay(
            name, ranks, f"127.0.0.1:{relay.port}", client_ctx=client_context(creds),
            server_ctx=server_context(creds), join_window=TIMEOUT, timeout=TIMEOUT,
            max_buffered=max_buffered[name],
        )  # fmt: skip

    threads = [threading.Thread(target=join, args=(name,)) for name in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return streams


def test_the_unread_ciphertext_bound_counts_the_running_total_not_each_frame(tls_dir):
    """Frames each well below ``max_buffered`` but together above it fail the link, naming the sender."""
    limit = 64 << 10
    relay = start_relay(tls_dir, {"a0": 0, "a1": 1})
    streams = connect_pair(tls_dir, relay, {"a0": BUFFERED_BYTES, "a1": limit})
    receiving = streams["a1"]["a0"]
    piece = limit // 3  # three pieces fit, the fourth does not; every outer frame is below the limit
    for _ in range(2):
        streams["a0"]["a1"].send_parts([bytes(piece)])
    deadline = time.monotonic() + TIMEOUT
    while receiving._in.pending < 2 * piece and time.monotonic() < deadline:
        time.sleep(0.01)
    assert receiving._failure is None  # two pieces (and their TLS overhead) are within the bound
    for _ in range(2):
        streams["a0"]["a1"].send_parts([bytes(piece)])
    while receiving._failure is None and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(
        ProtocolError, match=rf"'a0' \(through the relay\) sent more than the {limit} bytes 'a1'"
    ):
        receiving.read_exact(4 * piece)
    for side in streams.values():
        for stream in side.values():
            stream.close()
    relay.close()


def test_frames_for_a_party_that_hung_up_are_discarded_and_the_relay_ends(tls_dir):
    """Issue 35: a flood towards a party that hung up must not hold the relay (before: 600 s per frame)."""
    ranks = {"a0": 0, "a1": 1, "a2": 2}
    relay = start_relay(tls_dir, ranks, queue_bytes=4 * MAX_FRAME_BYTES)  # stall_seconds: the default 600 s
    conns: dict[str, Any] = {}
    threads = [
        threading.Thread(target=lambda n=name: conns.__setitem__(n, raw_party(tls_dir, n, ranks, relay)))
        for name in ranks
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    conns["a1"].close()  # a1 hangs up cleanly
    deadline = time.monotonic() + TIMEOUT
    while "a1" not in relay._ended and time.monotonic() < deadline:
        time.sleep(0.01)
    chunk = OUTER.pack(DATA, 1, MAX_FRAME_BYTES) + bytes(MAX_FRAME_BYTES)
    for _ in range(3 * 4):  # three times what the relay may queue for a1
        conns["a0"].send_parts([chunk])
    # Every frame is read (before: a0's reader waited 600 s for room in a1's full queue). Wait for
    # that before a0 hangs up: once all three have ended, the relay may stop reading a0's last frames.
    deadline = time.monotonic() + TIMEOUT
    while relay.forwarded[("a0", "a1")] < 12 * MAX_FRAME_BYTES and time.monotonic() < deadline:
        time.sleep(0.01)
    assert relay.forwarded[("a0", "a1")] == 12 * MAX_FRAME_BYTES  # more than a1's queue could hold
    conns["a0"].close()
    conns["a2"].close()
    assert relay.wait(TIMEOUT), relay._ended
    assert relay.outboxes["a1"].queued == 0


@pytest.mark.parametrize(
    ("parties", "message"),
    [
        ("a0,,a1", "--parties 'a0,,a1' has an empty name"),
        ("a0,a1,a0", "--parties 'a0,a1,a0' names 'a0' more than once"),
        ("a0,relay", "the relay's layout names 'relay', the relay's own name, as a party"),
        (
            ",".join(f"p{i}" for i in range(4097)),
            "the relay's layout has 4097 parties; at most 4096 are allowed",
        ),
        ("a0," + "x" * 257, "is not a str of 1 .. 256 characters"),
    ],
    ids=["empty", "repeated", "relay", "too-many", "too-long"],
)
def test_the_relays_parties_are_checked_before_it_listens(parties, message, capsys):
    from mpc_pca.cli import build_parser
    from mpc_pca.cli.relay import relay_main

    args = build_parser().parse_args(["relay", "--listen", "127.0.0.1:1", "--parties", parties])
    assert relay_main(args) == 3
    err = capsys.readouterr().err
    assert err.startswith("mpc-pca: error: ") and message in err and err.count("\n") == 1, err
