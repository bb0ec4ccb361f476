"""A wide-area link emulated in user space: a TCP forwarder that delays and paces what it forwards.

Where the kernel has no ``netem`` queueing discipline (or no network
namespaces), a run on one host can still be made to see a WAN: every
connection to a party's listener goes through a :class:`DelayForwarder`
that holds each chunk it reads for the one-way delay ``rtt / 2`` before
writing it on, in both directions, and paces each direction at the link's
bandwidth. A connection crosses exactly one forwarder (the one in front of
the accepting end), so the round trip between two parties is the profile's
RTT.

The model (:class:`LinkProfile`)
    A chunk read at time ``t`` starts its serialisation at
    ``max(t, busy_until)``, where ``busy_until`` is a clock shared by every
    connection of the forwarder in that direction (the host's access link),
    takes ``8 * bytes / bandwidth`` seconds, and is delivered one-way delay
    later: ``deliver = max(t, busy_until) + 8 * bytes / bandwidth + rtt / 2``.
    Delivery times are computed when a chunk is read, so the delay of one
    chunk never adds to the next one's (a queue per direction, one writer
    thread sleeping until the head's delivery time).

The TCP handshake
    The dialler's ``connect`` returns at once (it reaches the forwarder on
    this host), so the forwarder charges the handshake's round trip to the
    data instead: what the dialler sends counts as read no earlier than one
    RTT after the connection was accepted, and what the target sends no
    earlier than half an RTT after (when its SYN would have arrived). A
    connection thus costs one RTT before its first byte, as over a WAN.

What it does not model
    Loss, reordering, jitter and TCP's own congestion window: the delay is
    applied to the bytes a forwarder reads from a loopback socket, so a
    sender's window never limits it. Chunks are at most :data:`CHUNK_BYTES`;
    at most :data:`QUEUE_BYTES` (or one bandwidth-delay product, if larger)
    wait in a direction's queue before the forwarder stops reading, which
    lets the sender's own socket buffers push back.

Examples
--------
>>> import socket
>>> server = socket.create_server(("127.0.0.1", 0))
>>> with DelayForwarder(server.getsockname()[:2], LinkProfile(rtt_seconds=0.0)) as fwd:
...     client = socket.create_connection(fwd.address)
...     conn, _ = server.accept()
...     client.sendall(b"ping")
...     conn.recv(4)
...     client.close(); conn.close()
b'ping'
>>> server.close()
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections import deque
from types import TracebackType
from typing import Any

from protocols.errors import InputValidationError
from protocols.testing.link_model import LinkProfile
from protocols.transport.rendezvous import Introducer

#: Largest chunk a forwarder reads (and delays) at once, in bytes.
CHUNK_BYTES = 64 << 10
#: Bytes a direction's queue holds (at least; one bandwidth-delay product if larger) before reading pauses.
QUEUE_BYTES = 4 << 20


# LinkProfile is defined once, beside the in-process model of the same links (protocols.testing.link_model).


class _Pacer:
    """The busy-until clock of one direction of a forwarder (every connection shares it)."""

    def __init__(self, profile: LinkProfile) -> None:
        self._profile = profile
        self._lock = threading.Lock()
        self._busy_until = 0.0

    def delivery_time(self, read_at: float, nbytes: int) -> float:
        """When a chunk of ``nbytes`` read at ``read_at`` (monotonic) arrives at the other end."""
        with self._lock:
            start = max(read_at, self._busy_until)
            self._busy_until = start + self._profile.serialisation_seconds(nbytes)
            done = self._busy_until
        return done + self._profile.one_way_seconds


def _shutdown(*socks: socket.socket) -> None:
    """Shut both directions of each socket down, ignoring sockets already shut or closed."""
    for sock in socks:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Direction:
    """One direction of one forwarded connection: a reader that timestamps, a writer that waits."""

    def __init__(
        self,
        source: socket.socket,
        sink: socket.socket,
        pacer: _Pacer,
        profile: LinkProfile,
        count: list[int],
        lock: threading.Lock,
        name: str,
        not_before: float,
    ) -> None:
        self._source, self._sink, self._pacer, self._profile = source, sink, pacer, profile
        self._not_before = not_before
        self._count, self._count_lock = count, lock
        self._queue: deque[tuple[float, bytes | None]] = deque()
        self._queued = 0
        rate = profile.bandwidth_bits_per_second
        bdp = 0 if rate is None else int(rate * profile.rtt_seconds / 8)
        self._limit = max(QUEUE_BYTES, bdp)
        self._cond = threading.Condition()
        self._stopped = False
        self.done = threading.Event()
        self._threads = [
            threading.Thread(target=self._read, name=f"{name}-read", daemon=True),
            threading.Thread(target=self._write, name=f"{name}-write", daemon=True),
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float) -> None:
        """Wait for the reader and the writer to end."""
        for thread in self._threads:
            thread.join(timeout)

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _put(self, item: tuple[float, bytes | None]) -> bool:
        with self._cond:
            while not self._stopped and self._queued > self._limit:
                self._cond.wait()
            if self._stopped:
                return False
            self._queue.append(item)
            self._queued += 0 if item[1] is None else len(item[1])
            self._cond.notify_all()
            return True

    def _read(self) -> None:
        last = 0.0
        while True:
            try:
                chunk = self._source.recv(CHUNK_BYTES)
            except OSError:
                chunk = b""
            now = max(time.monotonic(), self._not_before)
            if not chunk:
                # End of stream: propagate the half-close after the data before it.
                self._put((max(last, now + self._profile.one_way_seconds), None))
                return
            last = self._pacer.delivery_time(now, len(chunk))
            if not self._put((last, chunk)):
                return

    def _write(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._stopped and not self._queue:
                        self._cond.wait()
                    if self._stopped:
                        return
                    due, chunk = self._queue[0]
                    wait = due - time.monotonic()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                    self._queue.popleft()
                    self._queued -= 0 if chunk is None else len(chunk)
                    self._cond.notify_all()
                if chunk is None:
                    with contextlib.suppress(OSError):
                        self._sink.shutdown(socket.SHUT_WR)
                    return
                # Counted before it is written: once the reader has the bytes, so does the counter.
                with self._count_lock:
                    self._count[0] += len(chunk)
                try:
                    self._sink.sendall(chunk)
                except OSError:  # the receiving end is gone: so is the connection, for the sender too
                    _shutdown(self._source, self._sink)
                    return
        finally:
            self.stop()
            self.done.set()


class DelayForwarder:
    """Forward TCP connections to ``target``, delaying and pacing both directions (:class:`LinkProfile`).

    Listens on ``host`` at a port the kernel picks (:attr:`address`); every
    accepted connection is forwarded to ``target`` in both directions: each
    chunk is delivered one-way delay ``rtt / 2`` after it was read, each
    direction is paced at the bandwidth by a clock shared by all of this
    forwarder's connections (the host's access link), and a half-close or a
    close propagates once the data before it has been delivered. Its
    threads are daemons and stop on :meth:`close` (or at the end of a
    ``with`` block).

    Parameters
    ----------
    target : (str, int)
        Where to forward each connection (e.g. a party's listening socket).
    profile : LinkProfile
        Delay and bandwidth of the emulated link.
    host : str
        Interface to listen on.

    Attributes
    ----------
    bytes_to_target, bytes_from_target : int
        Bytes forwarded so far in each direction, over every connection (counted as each
        chunk is handed to the receiving socket).
    connections : int
        Connections accepted so far.
    """

    def __init__(self, target: tuple[str, int], profile: LinkProfile, host: str = "127.0.0.1") -> None:
        if not isinstance(profile, LinkProfile):
            raise InputValidationError(f"profile={profile!r} is not a LinkProfile")
        if not (isinstance(target, tuple) and len(target) == 2 and isinstance(target[1], int)):
            raise InputValidationError(f"target={target!r} is invalid; it must be (host, port)")
        self.target = (str(target[0]), int(target[1]))
        self.profile = profile
        self._to_target, self._from_target = _Pacer(profile), _Pacer(profile)
        self._counts = ([0], [0])
        self._count_lock = threading.Lock()
        self._lock = threading.Lock()
        self._open: list[tuple[socket.socket, socket.socket, _Direction, _Direction]] = []
        self._closed = threading.Event()
        self.connections = 0
        self._listener = socket.create_server((host, 0))
        self._address = (host, int(self._listener.getsockname()[1]))
        self._thread = threading.Thread(target=self._accept, name="delay-forwarder", daemon=True)
        self._thread.start()

    @property
    def address(self) -> tuple[str, int]:
        """``(host, port)`` to dial instead of ``target``."""
        return self._address

    @property
    def bytes_to_target(self) -> int:
        with self._count_lock:
            return self._counts[0][0]

    @property
    def bytes_from_target(self) -> int:
        with self._count_lock:
            return self._counts[1][0]

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            accepted = time.monotonic()
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()  # the target is gone: the dialler sees its connection close
                continue
            for sock in (client, upstream):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            with self._lock:
                if self._closed.is_set():
                    client.close()
                    upstream.close()
                    return
                self.connections += 1
                index = self.connections
                up = _Direction(
                    client, upstream, self._to_target, self.profile, self._counts[0], self._count_lock,
                    f"forward-{index}-up", accepted + self.profile.rtt_seconds,
                )  # fmt: skip
                down = _Direction(
                    upstream, client, self._from_target, self.profile, self._counts[1], self._count_lock,
                    f"forward-{index}-down", accepted + self.profile.one_way_seconds,
                )  # fmt: skip
                self._open.append((client, upstream, up, down))
            up.start()
            down.start()
            threading.Thread(
                target=self._reap,
                args=(client, upstream, up, down),
                name=f"forward-{index}-close",
                daemon=True,
            ).start()

    def _reap(self, client: socket.socket, upstream: socket.socket, up: _Direction, down: _Direction) -> None:
        """Close both sockets of a connection once both directions have ended."""
        up.done.wait()
        down.done.wait()
        # Shut down before closing: a reader blocked in recv() is woken by a shutdown, not by
        # a close from another thread (it would keep the descriptor and block until the peer
        # closes).
        _shutdown(client, upstream)
        up.join(1.0)
        down.join(1.0)
        for sock in (client, upstream):
            with contextlib.suppress(OSError):
                sock.close()
        with self._lock:
            self._open = [entry for entry in self._open if entry[0] is not client]

    def close(self) -> None:
        """Stop accepting, drop every forwarded connection and stop the threads."""
        self._closed.set()
        with contextlib.suppress(OSError):
            self._listener.shutdown(socket.SHUT_RDWR)
        self._listener.close()
        with self._lock:
            entries = list(self._open)
        for client, upstream, up, down in entries:
            _shutdown(client, upstream)  # first, while the reap thread has not closed them
            up.stop()
            down.stop()
        self._thread.join(1.0)

    def __enter__(self) -> DelayForwarder:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


class ForwardingIntroducer(Introducer):
    """A rendezvous that puts a :class:`DelayForwarder` in front of every party's listener.

    Each registered address is replaced, in the table the parties get, by
    the address of a new forwarder to it with ``profile``: every link of the
    run (dialled by the lower rank, accepted through the higher rank's
    forwarder) then has the profile's RTT and bandwidth. Put another
    forwarder in front of the introducer itself (dial ``DelayForwarder((host,
    introducer.port), profile).address``) for the registrations to see it
    too. Other parameters are :class:`~protocols.transport.rendezvous.Introducer`'s.
    """

    def __init__(self, *args: Any, profile: LinkProfile, **kwargs: Any) -> None:
        self.profile = profile
        #: The forwarders made so far, one per registration.
        self.forwarders: list[DelayForwarder] = []
        self._forwarders_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def _registration(self, who: str, msg: dict[str, Any]) -> tuple[str, int, str, int]:
        name, rank, host, port = super()._registration(who, msg)
        forwarder = DelayForwarder((host, port), self.profile, host=host)
        with self._forwarders_lock:
            self.forwarders.append(forwarder)
        return name, rank, *forwarder.address

    def _reached(self, host: str, port: int) -> str:
        return f"reached through an emulated WAN link at {host}:{port}"

    def close_forwarders(self) -> None:
        """Close every forwarder made for the registrations."""
        with self._forwarders_lock:
            forwarders, self.forwarders = self.forwarders, []
        for forwarder in forwarders:
            forwarder.close()


__all__ = ["CHUNK_BYTES", "QUEUE_BYTES", "DelayForwarder", "ForwardingIntroducer", "LinkProfile"]
