"""In-process transport: parties are threads, links are queues of bytes.

Messages are serialised exactly as on a real network, so the byte counts a run
reports here are the ones a deployment would see (minus framing).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable
from typing import Any, cast

from protocols.errors import PeerDroppedError, PeerFailureError, PeerTimeoutError
from protocols.identity import group_identities
from protocols.transport.base import Channel
from protocols.transport.wire import encode_message_parts

_ABORT = object()
_GONE = object()


class InProcessNetwork:
    """A set of named parties connected pairwise by FIFO queues.

    Parameters
    ----------
    names : iterable of str
        Party names; they must be unique.
    timeout : float, default=120
        Default receive timeout of every channel, in seconds.
    """

    def __init__(self, names: Iterable[str], timeout: float = 120.0) -> None:
        self.names = tuple(names)
        if len(set(self.names)) != len(self.names):
            raise ValueError(f"party names must be unique, got {list(self.names)}")
        self.timeout = timeout
        # One queue per ordered pair, made when the pair first exchanges a message: M parties
        # have M (M - 1) links, and a protocol with many parties uses few of them.
        self._queues: dict[tuple[str, str], queue.SimpleQueue[object]] = {}
        self._lock = threading.Lock()
        self._identities = group_identities(self.names)
        self._aborted = threading.Event()
        self._abort_reason = ""
        self._gone: set[str] = set()

    def link(self, src: str, dst: str) -> queue.SimpleQueue[object]:
        """The FIFO queue from ``src`` to ``dst`` (made on first use; failed at once after an abort)."""
        q = self._queues.get((src, dst))
        if q is None:
            with self._lock:
                q = self._queues.get((src, dst))
                if q is None:
                    q = queue.SimpleQueue()
                    if self._aborted.is_set():
                        q.put(_ABORT)
                    if src in self._gone:
                        q.put(_GONE)
                    self._queues[(src, dst)] = q
        return q

    def channel(self, name: str) -> InProcessChannel:
        """The channel endpoint of party ``name``."""
        if name not in self.names:
            raise ValueError(f"unknown party {name!r}; parties are {list(self.names)}")
        return InProcessChannel(self, name)

    def abort(self, reason: str) -> None:
        """Wake every blocked receiver with a :class:`PeerFailureError`."""
        if self._aborted.is_set():
            return
        with self._lock:
            self._abort_reason = reason
            self._aborted.set()
            for q in self._queues.values():
                q.put(_ABORT)


class InProcessChannel(Channel):
    """Endpoint of one party in an :class:`InProcessNetwork`.

    Each message is serialised into its own ``bytearray`` that only the
    receiver gets, so received arrays are views into it, not copies.
    """

    private_payloads = True

    def send(self, to: str, obj: Any) -> None:
        """Serialise ``obj`` into a fresh buffer (the one copy) and queue it for ``to``."""
        self._check_peer(to)
        payload = bytearray().join(encode_message_parts(obj))
        self._send_bytes(to, payload)
        self.meter.record_send(to, len(payload))

    def __init__(self, network: InProcessNetwork, me: str) -> None:
        super().__init__(me, network.names, network.timeout)
        self._network = network
        self.identity = network._identities[me]

    def disconnect(self) -> None:
        """Leave the run as a process that died would: every peer's receive from this party fails.

        For tests of protocols that tolerate a party leaving
        (:meth:`~protocols.transport.base.Channel.tolerating`): a peer that
        excuses this party gets :class:`~protocols.errors.PeerDroppedError`,
        any other peer :class:`~protocols.errors.PeerFailureError`.
        """
        network = self._network
        with network._lock:
            network._gone.add(self.me)
            mine = [q for (src, _), q in network._queues.items() if src == self.me]
        for q in mine:  # links made later start with _GONE (InProcessNetwork.link)
            q.put(_GONE)

    def peer_gone(self, peer: str) -> bool:
        return peer in self._network._gone

    def _send_bytes(self, to: str, payload: bytes | bytearray) -> None:
        if self._network._aborted.is_set():
            raise PeerFailureError(f"{self.me!r} stopped: {self._network._abort_reason}")
        self._network.link(self.me, to).put(payload)

    def _recv_bytes(self, frm: str, timeout: float) -> bytes:
        link = self._network.link(frm, self.me)
        try:
            item = link.get(timeout=timeout)
        except queue.Empty:
            raise PeerTimeoutError(
                f"{self.me!r} received nothing from {frm!r} within {timeout:g} s"
            ) from None
        if item is _ABORT:
            link.put(_ABORT)  # keep later receives failing too
            raise PeerFailureError(f"{self.me!r} stopped waiting for {frm!r}: {self._network._abort_reason}")
        if item is _GONE:
            link.put(_GONE)
            error = PeerDroppedError if frm in self.excused else PeerFailureError
            raise error(f"{self.me!r}: {frm!r} left the run (its links closed)")
        return cast(bytes, item)
