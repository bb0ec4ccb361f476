"""Links from a static address table (``open_links(peers=...)``): no rendezvous, a late peer, ``--listen``."""

from __future__ import annotations

import threading
import time

import pytest

from protocols.errors import InputValidationError
from protocols.runtime.network import open_links
from protocols.runtime.parties import LinkOptions
from protocols.transport.peers import PeerTable
from tests.helpers.socket_helpers import free_port

NAMES = ("a", "b", "c")


def table() -> PeerTable:
    return PeerTable(tuple((name, ("127.0.0.1", free_port())) for name in NAMES))


def test_parties_link_from_the_table_a_late_one_and_one_listening_on_every_interface() -> None:
    peers = table()
    ranks = peers.ranks
    heard: dict[str, object] = {}

    def party(name: str, delay: float, listen_at: tuple[str, int] | None) -> None:
        time.sleep(delay)
        try:
            channel = open_links(
                name,
                ranks,
                "",
                credentials=None,
                connect_timeout=20,
                timeout=20,
                peers=peers,
                listen_at=listen_at,
            )
            for peer in channel.peers:
                channel.send_control(peer, {"from": name})
            heard[name] = sorted(channel.recv_control(peer, 20)["from"] for peer in channel.peers)
            channel.close(20)
        except BaseException as exc:  # reported below
            heard[name] = exc

    # "c" (dialled by a and b) starts late; "b" listens on every interface at its entry's port.
    plan = {"a": (0.0, None), "b": (0.0, ("0.0.0.0", 0)), "c": (0.5, None)}
    threads = [threading.Thread(target=party, args=(n, *plan[n])) for n in NAMES]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert heard == {"a": ["b", "c"], "b": ["a", "c"], "c": ["a", "b"]}


def test_a_table_that_is_not_the_runs_parties_is_refused_before_listening() -> None:
    peers = table()
    with pytest.raises(InputValidationError, match="puts 'a' at rank 0, where the run has 'b'"):
        open_links("a", {"b": 0, "a": 1, "c": 2}, "", credentials=None, peers=peers)


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"advertise": ("h", 1)}, "advertise do not apply"),
        ({"join_window": 5.0}, "join_window do not apply"),
        ({"host_rendezvous": True}, "host_rendezvous do not apply"),
    ],
)
def test_link_options_of_a_rendezvous_are_refused_with_a_table(options: dict, named: str) -> None:
    with pytest.raises(InputValidationError, match=named):
        LinkOptions("", insecure=True, peers=table(), **options).check("a")


def test_a_relay_is_refused_with_a_table(tmp_path) -> None:
    from protocols.transport.certs import write_credentials
    from protocols.transport.tls import Credentials

    write_credentials(["a"], tmp_path)
    options = LinkOptions("", Credentials.from_dir(tmp_path, "a"), relay="h:1", peers=table())
    with pytest.raises(InputValidationError, match="relay do not apply with a static address table"):
        options.check("a")


def test_a_listener_needs_a_table() -> None:
    with pytest.raises(InputValidationError, match="needs a static table"):
        LinkOptions("h:1", insecure=True, listener=object()).check("a")  # type: ignore[arg-type]
