"""The :class:`Channel` abstraction and its traffic meter.

A channel belongs to one party. ``send(to, obj)`` serialises ``obj`` with
:mod:`protocols.transport.wire` and hands the bytes to the transport;
``recv(frm)`` takes the next message from that peer, in order. Every channel
counts the bytes and messages it sends and receives, and the number of
*rounds*: maximal runs of consecutive sends, i.e. how many times the party
spoke before it had to wait for someone else.
"""

from __future__ import annotations

import contextlib
import time
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from protocols.errors import ProtocolError, WireFormatError
from protocols.transport.wire import decode_message, encode_message

if TYPE_CHECKING:
    from protocols.identity import Identity


@dataclass
class TrafficMeter:
    """Counters for what one party sent and received."""

    bytes_sent: int = 0
    bytes_received: int = 0
    messages_sent: int = 0
    messages_received: int = 0
    rounds: int = 0
    sent_to: dict[str, int] = field(default_factory=dict)
    received_from: dict[str, int] = field(default_factory=dict)
    _last_was_send: bool = field(default=False, repr=False)

    def record_send(self, to: str, nbytes: int) -> None:
        if not self._last_was_send:
            self.rounds += 1
        self._last_was_send = True
        self.bytes_sent += nbytes
        self.messages_sent += 1
        self.sent_to[to] = self.sent_to.get(to, 0) + nbytes

    def record_recv(self, frm: str, nbytes: int) -> None:
        self._last_was_send = False
        self.bytes_received += nbytes
        self.messages_received += 1
        self.received_from[frm] = self.received_from.get(frm, 0) + nbytes

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("_last_was_send")
        return data


class Channel(ABC):
    """Message passing endpoint of one party.

    Parameters
    ----------
    me : str
        Name of the party owning this channel.
    peers : iterable of str
        Names of every other party reachable through it.
    timeout : float
        Seconds :meth:`recv` waits for a message before raising
        :class:`~protocols.errors.PeerTimeoutError`.
    """

    #: True when every received payload is a fresh writable buffer that no one
    #: else holds, so received arrays may be views into it instead of copies.
    private_payloads: bool = False

    def __init__(self, me: str, peers: Any, timeout: float) -> None:
        self.me = me
        self.peers = tuple(p for p in peers if p != me)
        self.timeout = float(timeout)
        self.meter = TrafficMeter()

    def _check_peer(self, peer: str) -> None:
        if peer not in self.peers:
            raise ProtocolError(f"{self.me!r} has no peer named {peer!r}; peers are {list(self.peers)}")

    def send(self, to: str, obj: Any) -> None:
        """Serialise ``obj`` and send it to ``to``."""
        self._check_peer(to)
        payload = encode_message(obj)
        self._send_bytes(to, payload)
        self.meter.record_send(to, len(payload))

    def recv(self, frm: str, timeout: float | None = None) -> Any:
        """Receive and parse the next message from ``frm``.

        Raises
        ------
        WireFormatError
            Naming ``frm``, if its message is not in the wire format.
        """
        self._check_peer(frm)
        deadline = self.timeout if timeout is None else float(timeout)
        payload = self._recv_bytes(frm, deadline)
        self.meter.record_recv(frm, len(payload))
        try:
            return decode_message(payload, copy_arrays=not self.private_payloads)
        except WireFormatError as exc:
            raise WireFormatError(f"{self.me!r}: {frm!r} sent a malformed message: {exc}") from None

    #: This party's per-run signing key and its peers' verification keys
    #: (:mod:`protocols.identity`), set by the runtime or transport that made the channel.
    identity: Identity | None = None

    #: Label of the protocol phase this party is in (see :meth:`enter_phase`).
    phase_label: str | None = None

    def enter_phase(self, label: str | None) -> None:
        """Record that this party entered phase ``label``; networked channels tell their peers."""
        self.phase_label = label

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release transport resources; the default does nothing."""

    # -- peers that may leave (the dropout-tolerant secure sum) -------------------------

    #: Peers whose link failure (closed link, abort) is not a failure of the run: receiving from
    #: one of them raises :class:`~protocols.errors.PeerDroppedError`, receiving from anyone else
    #: is unaffected. Empty unless a protocol asks (:meth:`tolerating`, :meth:`drop`).
    excused: frozenset[str] = frozenset()
    #: Peers a protocol has dropped from the run: excused for good, their unread data discarded at the end.
    dropped: frozenset[str] = frozenset()

    def peer_gone(self, peer: str) -> bool:
        """True if ``peer``'s link has failed or it reported a failure (transports that can tell)."""
        return False

    def drop(self, peer: str) -> None:
        """Drop ``peer`` from the rest of the run: excused for good (see :attr:`excused`)."""
        self._check_peer(peer)
        self.dropped = self.dropped | {peer}
        self.excused = self.excused | {peer}

    @contextlib.contextmanager
    def tolerating(self, peers: Collection[str]) -> Iterator[None]:
        """Within the block, a failure of one of ``peers`` ends only receives from that peer.

        The narrow mechanism of the dropout-tolerant secure sum
        (:mod:`protocols.backends.dropout`): a provider whose process dies (its
        link closes) or that stops answering is noticed by the receives that
        wait for it (:class:`~protocols.errors.PeerDroppedError`, or
        :class:`~protocols.errors.PeerTimeoutError` at the caller's deadline),
        which treat it as dropped, while everybody else's messages still flow.
        Outside such a block any peer's failure ends the run, as before. On
        exit, the peers the protocol :meth:`drop`-ped and those whose link
        failed in the block stay excused (a provider counted in a sum may leave
        afterwards); the others are no longer excused.
        """
        for peer in peers:
            self._check_peer(peer)
        before = self.excused
        self.excused = before | frozenset(peers)
        try:
            yield
        finally:
            self.excused = before | self.dropped | frozenset(p for p in peers if self.peer_gone(p))

    @abstractmethod
    def _send_bytes(self, to: str, payload: bytes) -> None:
        """Deliver ``payload`` to ``to``."""

    @abstractmethod
    def _recv_bytes(self, frm: str, timeout: float) -> bytes | memoryview:
        """Return the next payload from ``frm`` or raise after ``timeout`` seconds."""


class WrappedChannel(Channel):
    """A channel that adds something to another channel (recording, a link model, measuring).

    Subclasses override what they add to (:meth:`send`, :meth:`recv`, or the
    byte-level hooks); everything else is the wrapped channel's: its name,
    peers, timeout, traffic meter, identity and payload ownership are shared
    (no :meth:`Channel.__init__`), phases and closing are passed on, and the
    dropout state (:attr:`excused`, :attr:`dropped`, :meth:`peer_gone`) is
    the wrapped channel's, so both see one set of excused peers.
    """

    def __init__(self, inner: Channel) -> None:
        self._inner = inner
        self.me = inner.me
        self.peers = inner.peers
        self.timeout = inner.timeout
        self.meter = inner.meter
        self.private_payloads = inner.private_payloads
        self.identity = inner.identity

    def send(self, to: str, obj: Any) -> None:
        self._inner.send(to, obj)

    def recv(self, frm: str, timeout: float | None = None) -> Any:
        return self._inner.recv(frm, timeout)

    def enter_phase(self, label: str | None) -> None:
        self.phase_label = label
        self._inner.enter_phase(label)

    def close(self) -> None:
        self._inner.close()

    @property
    def excused(self) -> frozenset[str]:
        return self._inner.excused

    @excused.setter
    def excused(self, value: frozenset[str]) -> None:
        self._inner.excused = value

    @property
    def dropped(self) -> frozenset[str]:
        return self._inner.dropped

    @dropped.setter
    def dropped(self, value: frozenset[str]) -> None:
        self._inner.dropped = value

    def peer_gone(self, peer: str) -> bool:
        return self._inner.peer_gone(peer)

    def _send_bytes(self, to: str, payload: bytes) -> None:
        self._inner._send_bytes(to, payload)

    def _recv_bytes(self, frm: str, timeout: float) -> bytes | memoryview:
        return self._inner._recv_bytes(frm, timeout)


def now() -> float:
    """Monotonic wall-clock seconds used for per-role timing."""
    return time.perf_counter()
