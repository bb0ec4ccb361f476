"""Channels that carry messages between parties and meter what they carry.

Modules (never importing :mod:`protocols.runtime`)
--------------------------------------------------
base
    The :class:`Channel` abstraction, its traffic meter, and
    :class:`~protocols.transport.base.WrappedChannel` for channels that add
    to another (recording, the link model).
inprocess
    Parties as threads, links as queues of bytes.
link_model
    A network model for in-process runs: each message delayed by RTT/2 and
    paced at its sender's uplink bandwidth (:class:`~protocols.transport.link_model.LinkProfile`).
wan_emulator
    A WAN emulated in user space where the kernel has no ``netem``: TCP
    forwarders that delay each direction by RTT/2 and pace it at a bandwidth
    (:class:`~protocols.transport.wan_emulator.DelayForwarder`), one in front
    of every party of a local run
    (:class:`~protocols.transport.wan_emulator.ForwardingIntroducer`).
wire
    The typed, non-executable binary message format.
tls, certs, enrolment
    TLS 1.3 contexts and the party-name check; a consortium CA with one
    certificate per party; enrolment by certificate request.
links, socket_channel, mesh, ranks, rendezvous
    Byte streams (TLS or plain TCP), a channel over them, one connection per
    pair, the rank table, and the rendezvous that introduces the parties.
confirmation
    The final confirmation round of a socket run: a party keeps its output
    only once every party confirmed that it finished (all-or-nothing outputs).
peers
    A static address table (``--peers FILE``): every party's address known
    beforehand, so the run needs no rendezvous.
relay, relay_frames, relay_rendezvous, relay_server
    Parties that only dial out: a relay that hosts the rendezvous and forwards
    frames, each pair of parties running its own TLS 1.3 session through it
    (the party's side; the outer frames' constants; the waiting room for the
    layout the relay's operator fixed; the relay itself).
torch_channel, torch_store
    The gloo path over ``torch.distributed`` (CrypTen only).
"""

from protocols.transport.base import Channel, TrafficMeter
from protocols.transport.inprocess import InProcessNetwork

__all__ = ["Channel", "InProcessNetwork", "TrafficMeter"]
