"""A network model for in-process runs: every message delayed by RTT/2 and paced at the sender's uplink.

Parties that run as threads (:func:`protocols.runtime.run_inprocess`) talk
through queues that deliver at once, so a run there measures computation
only. :class:`ModelledLinks` interposes on every party's channel (the
``wrap_channel`` hook) and makes each message arrive when a link of a stated
round-trip time and bandwidth would deliver it:

* a party has one uplink of ``bandwidth_bits_per_second`` shared by all its
  messages, busy until ``uplink_free``;
* a message of ``B`` bytes sent at time ``t`` leaves at
  ``departure = max(t, uplink_free)``, occupies the uplink until
  ``uplink_free = departure + 8 B / bandwidth``, and arrives at
  ``arrival = departure + 8 B / bandwidth + RTT / 2``;
* the receiver's ``recv`` returns no earlier than ``arrival`` (it sleeps
  until then: no busy waiting), and messages on a link arrive in the order
  they were sent (arrivals on one link never decrease).

The model also counts the run's *message depth*: the longest chain of
messages each sent after its sender received the previous one (a Lamport
clock), i.e. the one-way delays on the critical path. A run's latency is at
most ``depth x RTT/2``; a party's rounds (its speaking turns, counted by the
traffic meter) can be fewer when the chain passes through other parties.

Sending never blocks (a socket's kernel buffer takes the bytes); the bytes
counted are the serialised message (the wire format's payload, without TLS
or TCP framing). Connection set-up is not modelled here: threads dial
nothing, so a caller adds set-up as a stated number of round trips (e.g.
:data:`SETUP_ROUND_TRIPS`).

The point of the model is wall time: a run over it takes as long, on the
clock, as the protocol's computation interleaved with the modelled link
delays. It is checked against real sockets through a user-space WAN
emulator in ``mpc-pca study network``.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, cast

from protocols.errors import InputValidationError
from protocols.transport.base import Channel, WrappedChannel
from protocols.transport.wire import encode_message, encode_message_parts

#: Round trips of connection set-up beyond the protocol's own messages, for any number of
#: parties over TLS (threads dial nothing, so a caller adds it): 3 for the rendezvous (TCP,
#: TLS 1.3, registration and table), 2.5 for the links (every peer dialled at once: TCP,
#: TLS 1.3, HELLO), 0.5 for the announcements, by the set-up's accounting in
#: ``benchmarks.bench_setup`` (which measures it over the user-space WAN emulator). An
#: estimate: ``mpc-pca study network``'s socket check measures it again.
SETUP_ROUND_TRIPS = 6.0


@dataclass(frozen=True)
class LinkProfile:
    """A wide-area link: round-trip time and (optionally) bandwidth.

    The one description of a link for both the in-process model here
    (:class:`ModelledLinks`: the bandwidth is each sender's uplink) and the
    user-space emulator of real sockets (:class:`protocols.testing.wan_emulator.DelayForwarder`:
    the bandwidth is each direction of the forwarder in front of an accepting
    party, shared by its connections).

    Attributes
    ----------
    rtt_seconds : float
        Round-trip time in seconds (each direction gets half of it); 0 or more, finite.
    bandwidth_bits_per_second : float or None
        Rate at which a link serialises bytes; ``None``: unlimited.

    Raises
    ------
    InputValidationError
        Naming the value: a negative, infinite or non-numeric RTT, a
        bandwidth that is not a positive finite number.
    """

    rtt_seconds: float
    bandwidth_bits_per_second: float | None = None

    def __post_init__(self) -> None:
        rtt = self.rtt_seconds
        if isinstance(rtt, bool) or not isinstance(rtt, (int, float)) or not 0 <= rtt < math.inf:
            raise InputValidationError(
                f"rtt_seconds={rtt!r} is invalid; it must be a finite number of seconds, 0 or more"
            )
        rate = self.bandwidth_bits_per_second
        if rate is not None and (
            isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 < rate < math.inf
        ):
            raise InputValidationError(
                f"bandwidth_bits_per_second={rate!r} is invalid; it must be a positive, finite number of "
                "bits per second, or None (unlimited)"
            )

    @property
    def one_way_seconds(self) -> float:
        """The delay of each direction: half the round trip."""
        return self.rtt_seconds / 2

    def serialisation_seconds(self, nbytes: int) -> float:
        """Seconds the link takes to put ``nbytes`` on the wire (0 without a bandwidth)."""
        rate = self.bandwidth_bits_per_second
        return 0.0 if rate is None else 8 * nbytes / rate


class ModelledLinks:
    """The link model of one in-process run; pass :meth:`wrap` as ``run_inprocess``'s ``wrap_channel``.

    Parameters
    ----------
    profile : LinkProfile
        RTT and uplink bandwidth of every party.

    Examples
    --------
    >>> from protocols.runtime import run_inprocess
    >>> links = ModelledLinks(LinkProfile(rtt_seconds=0.02))
    >>> run = run_inprocess({"a": lambda p: p.send("b", b"hi"), "b": lambda p: p.recv("a")},
    ...                     wrap_channel=links.wrap)
    >>> run.outputs["b"], links.delivered, links.depth
    (b'hi', 1, 1)
    """

    def __init__(self, profile: LinkProfile) -> None:
        if not isinstance(profile, LinkProfile):
            raise InputValidationError(f"profile must be a LinkProfile, got {type(profile).__name__}")
        self.profile = profile
        self._lock = threading.Lock()
        self._uplink_free: dict[str, float] = {}
        self._arrivals: dict[tuple[str, str], deque[tuple[float, int]]] = {}
        self._clock: dict[str, int] = {}
        #: Messages received so far (each after its modelled arrival).
        self.delivered = 0
        #: Longest chain of messages so far, each sent after the previous one was received.
        self.depth = 0

    def wrap(self, name: str, channel: Channel) -> ModelledChannel:
        """The ``wrap_channel`` hook: party ``name`` sends and receives through the model."""
        return ModelledChannel(channel, self)

    def stamp(self, sender: str, receiver: str, nbytes: int) -> float:
        """Book a message of ``nbytes`` on ``sender``'s uplink now; return its arrival time.

        The arrival is queued for the link ``sender -> receiver`` before the
        message itself is handed to the transport, so its receiver always
        finds it (see :meth:`arrival`).
        """
        with self._lock:
            departure = max(time.perf_counter(), self._uplink_free.get(sender, 0.0))
            free = departure + self.profile.serialisation_seconds(nbytes)
            self._uplink_free[sender] = free
            arrival = free + self.profile.one_way_seconds
            depth = self._clock.get(sender, 0) + 1
            self.depth = max(self.depth, depth)
            self._arrivals.setdefault((sender, receiver), deque()).append((arrival, depth))
        return arrival

    def arrival(self, sender: str, receiver: str) -> float:
        """The arrival time of the next message on ``sender -> receiver`` (taken off its queue).

        Receiving it advances ``receiver``'s message depth to the message's.
        """
        with self._lock:
            self.delivered += 1
            arrival, depth = self._arrivals[(sender, receiver)].popleft()
            self._clock[receiver] = max(self._clock.get(receiver, 0), depth)
            return arrival


class ModelledChannel(WrappedChannel):
    """A party's channel whose messages take the time :class:`ModelledLinks` gives them.

    The traffic meter, identity, timeouts and dropout state are the wrapped
    channel's; each message is serialised here (into a fresh buffer when the
    wrapped channel hands its receiver private payloads, as the in-process
    one does) so that its size is known before it leaves.
    """

    def __init__(self, inner: Channel, links: ModelledLinks) -> None:
        super().__init__(inner)
        self._links = links

    def send(self, to: str, obj: Any) -> None:
        """Serialise ``obj``, book it on this party's uplink and hand it to the wrapped transport."""
        self._check_peer(to)
        payload: bytes | bytearray = (
            bytearray().join(encode_message_parts(obj)) if self.private_payloads else encode_message(obj)
        )
        self._send_bytes(to, payload)
        self.meter.record_send(to, len(payload))

    def recv(self, frm: str, timeout: float | None = None) -> Any:
        """Receive through :meth:`_recv_bytes`, which holds each message until its modelled arrival."""
        return Channel.recv(self, frm, timeout)

    def _send_bytes(self, to: str, payload: bytes | bytearray) -> None:
        self._links.stamp(self.me, to, len(payload))
        self._inner._send_bytes(to, cast(bytes, payload))  # a bytearray for the in-process queues

    def _recv_bytes(self, frm: str, timeout: float) -> bytes | memoryview:
        payload = self._inner._recv_bytes(frm, timeout)
        wait = self._links.arrival(frm, self.me) - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        return payload


__all__ = ["SETUP_ROUND_TRIPS", "LinkProfile", "ModelledChannel", "ModelledLinks"]
