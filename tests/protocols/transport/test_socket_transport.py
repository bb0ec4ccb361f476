"""The TLS socket transport with parties as threads: metering, identities, hostile frames."""

from __future__ import annotations

import os
import stat

import pytest
from cryptography import x509

from protocols.errors import InputValidationError, PeerTimeoutError, ProtocolError
from protocols.runtime import run_inprocess
from protocols.transport.certs import write_credentials
from protocols.transport.links import HEADER
from protocols.transport.socket_frames import DATA, DATA_PREFIX
from protocols.transport.tls import AuthenticationError, Credentials
from tests.helpers.socket_helpers import run_socket_world
from tests.helpers.torch_worker import echo_roles


@pytest.fixture(scope="module")
def tls_dir(tmp_path_factory):
    directory = tmp_path_factory.mktemp("tls")
    write_credentials(["a0", "a1", "a2", "r", "x"], directory)
    return directory


def test_certs_name_each_party_and_keep_keys_private(tls_dir):
    cert = x509.load_pem_x509_certificate((tls_dir / "a1.pem").read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["a1"]
    for name in ("a1.key", "ca.key"):
        assert stat.S_IMODE(os.stat(tls_dir / name).st_mode) == 0o600
    with pytest.raises(InputValidationError, match=r"ca\.pem.*already exist.*nothing was written"):
        write_credentials(["a0"], tls_dir)
    with pytest.raises(InputValidationError, match="cannot go in a certificate"):
        write_credentials(["bad name"], tls_dir / "sub")
    with pytest.raises(InputValidationError, match="without repeats"):
        write_credentials(["a", "a"], tls_dir / "sub2")


@pytest.mark.parametrize("secure", [True, False])
def test_socket_channel_delivers_and_meters_like_in_process(tls_dir, secure):
    results = run_socket_world(echo_roles(), tls_dir if secure else None)
    reference = run_inprocess(echo_roles(), timeout=10)
    for name, (_output, report) in results.items():
        got, expected = report.as_dict(), reference.reports[name].as_dict()
        for key in ("bytes_sent", "bytes_received", "messages_sent", "messages_received", "rounds"):
            assert got[key] == expected[key], (name, key)
    assert results["r"][0]["big_ok"] and results["r"][0]["mid_ok"]
    assert results["a1"][0] == {"reply": "thanks a1"}


def test_rendezvous_refuses_a_certificate_of_another_name(tls_dir):
    def idle(party):
        return None

    stolen = Credentials(tls_dir / "ca.pem", tls_dir / "x.pem", tls_dir / "x.key")
    results = run_socket_world({"a0": idle, "a1": idle}, tls_dir, timeout=3, credentials={"a1": stolen})
    assert isinstance(results["a1"], AuthenticationError), results["a1"]
    assert isinstance(results["a0"], PeerTimeoutError), results["a0"]
    for error in results.values():
        assert "authentication failed" in str(error) and "claiming to be 'a1' (rank 1)" in str(error)
        assert "certificate is issued to 'x'" in str(error)


def test_links_check_the_party_name_at_both_ends(tls_dir):
    """Past the rendezvous: the dialler refuses an acceptor whose certificate names another party."""
    import threading

    from protocols.transport.mesh import connect_mesh
    from protocols.transport.rendezvous import listen
    from protocols.transport.tls import client_context, server_context

    ranks = {"a0": 0, "a1": 1}
    creds = {"a0": Credentials.from_dir(tls_dir, "a0"), "a1": Credentials.from_dir(tls_dir, "x")}
    listeners = {name: listen("127.0.0.1", 0) for name in ranks}
    table = {name: ("127.0.0.1", sock.getsockname()[1]) for name, sock in listeners.items()}
    errors = {}

    def party(name):
        try:
            connect_mesh(
                name, ranks, table, listeners[name], client_ctx=client_context(creds[name]),
                server_ctx=server_context(creds[name]), timeout=3,
            )  # fmt: skip
        except ProtocolError as exc:
            errors[name] = exc

    threads = [threading.Thread(target=party, args=(n,)) for n in ranks]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert isinstance(errors["a0"], AuthenticationError)
    assert "expected party 'a1', but the certificate is issued to ['x']" in str(errors["a0"])
    assert "'a0' (rank 0) did not connect" in str(errors["a1"])


def test_oversized_and_short_frames_are_protocol_errors_naming_the_sender(tls_dir):
    def liar(party):
        party.channel.streams["r"].send_parts([HEADER.pack(DATA, (1 << 26) + DATA_PREFIX.size + 1)])
        party.recv("r")

    def receiver(party):
        return party.recv("a0")

    results = run_socket_world({"a0": liar, "r": receiver}, tls_dir, timeout=5)
    assert isinstance(results["r"], ProtocolError)
    assert "'a0' (rank 0) announced a data frame of 67108889 bytes" in str(results["r"])
    assert "67108864" in str(results["r"])
    assert isinstance(results["a0"], ProtocolError)  # it gets the receiver's abort


def test_deadline_blames_the_end_of_the_waiting_chain(tls_dir):
    """r waits for a0, a0 waits for a1, a1 never sends: a0 blames a1, r quotes a0's report (no chain of claims)."""
    import threading

    release = threading.Event()

    def a1(party):
        release.wait(20)

    def a0(party):
        return party.recv("a1")

    def r(party):
        return party.recv("a0")

    results = run_socket_world({"a0": a0, "a1": a1, "r": r}, tls_dir, timeout=3)
    release.set()
    for name in ("a0", "r"):
        assert isinstance(results[name], (PeerTimeoutError, ProtocolError)), results[name]
        assert "'a1' (rank 1) did not send within the deadline" in str(results[name]), results[name]


def test_tls_material_errors_are_clear(tmp_path):
    with pytest.raises(InputValidationError, match="does not exist"):
        Credentials.from_dir(tmp_path, "nobody").check()


def test_a_wait_for_a_party_the_protocol_may_lose_ends_at_its_own_deadline(tls_dir):
    """Others' progress stretches an ordinary wait, never a dropout deadline (tolerating).

    a0 keeps delivering to r for 8 s while a1 stays silent. r's wait for the
    excused a1 ends at its 2 s deadline; its wait for a0 in the same run is
    restarted by each delivery (issue 35's stall test: stretched dropout
    waits added up to the whole phase deadline, and the consumer gave up).
    """
    import threading
    import time

    release = threading.Event()

    def a1(party):
        release.wait(30)

    def a0(party):
        for i in range(16):
            party.send("r", i)
            time.sleep(0.5)

    def r(party):
        started = time.monotonic()
        with party.channel.tolerating(["a1"]), pytest.raises(PeerTimeoutError) as raised:
            party.recv("a1", 2.0)
        waited = time.monotonic() - started
        release.set()
        return waited, str(raised.value), [party.recv("a0") for _ in range(16)]

    results = run_socket_world({"a0": a0, "a1": a1, "r": r}, tls_dir, timeout=5)
    waited, message, received = results["r"][0]
    assert 2.0 <= waited < 6.0, waited  # stretched by a0's deliveries it would be about 10 s
    assert "waited 2 s in phase 'protocol' for 'a1' the deadline for a party it may lose" in message
    assert received == list(range(16))
