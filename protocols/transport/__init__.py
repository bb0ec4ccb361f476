"""Channels that carry messages between parties and meter what they carry.

Modules (never importing :mod:`protocols.runtime`)
--------------------------------------------------
base
    The :class:`Channel` abstraction, its traffic meter, and
    :class:`~protocols.transport.base.WrappedChannel` for channels that add
    to another (recording, the link model of :mod:`protocols.testing.link_model`).
inprocess
    Parties as threads, links as queues of bytes.
wire
    The typed, non-executable binary message format.
tls, certs, enrolment
    TLS 1.3 contexts and the party-name check; a consortium CA with one
    certificate per party; enrolment by certificate request.
links, socket_frames, socket_receiving, socket_channel, mesh, ranks, rendezvous
    Byte streams (TLS or plain TCP); a channel over them (its frames, its
    reader threads, its API); one connection per pair; the rank table; and
    the rendezvous that introduces the parties (a subpackage: the set-up
    messages, addresses, the bounded handshakes, the introducer, joining).
confirmation
    The final confirmation round of a socket run: a party keeps its output
    only once every party confirmed that it finished (all-or-nothing outputs).
peers
    A static address table (``peers``, read from a file): every party's address known
    beforehand, so the run needs no rendezvous.
relay, relay_session, relay_frames, relay_rendezvous, relay_server
    Parties that only dial out: a relay that hosts the rendezvous and forwards
    frames, each pair of parties running its own TLS 1.3 session through it
    (the party's connection to the relay; one pair's session; the outer
    frames' constants; the waiting room for the layout the relay's operator
    fixed; the relay itself).
torch_channel, torch_store
    The gloo path over ``torch.distributed`` (CrypTen only).

The network emulation for measurements (the in-process link model and the
user-space WAN emulator) lives in :mod:`protocols.testing`.
"""

from protocols.transport.base import Channel, TrafficMeter
from protocols.transport.inprocess import InProcessNetwork

__all__ = ["Channel", "InProcessNetwork", "TrafficMeter"]
