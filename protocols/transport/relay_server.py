"""The relay itself: hosts the rendezvous, then forwards the parties' outer frames (issues 26, 35).

See :mod:`protocols.transport.relay` for the outer frames, what the relay
sees and the bounds on its memory. :class:`RelayServer` admits the layout its
operator fixed (:class:`~protocols.transport.relay_rendezvous.RelayRendezvous`),
queues at most ``queue_bytes`` per party (:class:`_Outbox`), reports a party
that does not read to the others (``STALL``), drops it after
``stall_seconds``, and exits once every party has gone.

This module moves bytes only; it never imports :mod:`protocols.runtime`.
"""

from __future__ import annotations

import collections
import contextlib
import logging
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from typing import Any

from protocols.errors import InputValidationError, ProtocolError
from protocols.transport.links import ClosedError, Stream
from protocols.transport.relay_frames import (
    DATA,
    END,
    MAX_FRAME_BYTES,
    MAX_NOTICE_CHARS,
    NOTICE,
    OUTER,
    QUEUE_BYTES,
    RELAY_NAME,
    REPORT_SECONDS,
    STALL,
    STALL_SECONDS,
    Payload,
)
from protocols.transport.relay_rendezvous import RelayRendezvous, check_layout
from protocols.transport.rendezvous import WAITING_LOG_SECONDS

log = logging.getLogger("mpc_pca.transport")


class _Outbox:
    """Frames waiting at the relay for one party, bounded in bytes; one writer thread drains it."""

    def __init__(self, name: str, stream: Stream, limit: int) -> None:
        self.name = name
        self.stream = stream
        self.limit = limit
        self.frames: collections.deque[tuple[bytes, Payload]] = collections.deque()
        self.queued = 0
        self.peak = 0
        self.cond = threading.Condition()
        self.dead = False
        self.finishing = False
        #: The relay reported this party as not reading, and it has not read since.
        self.reported = False
        #: Called (from the writer thread) when this party reads again after a report.
        self.on_progress: Any = None
        self._ends = 0  # the reader and the writer of this connection that have finished (close at 2)

    def put(self, frame: tuple[bytes, Payload], deadline: float, force: bool = False) -> bool:
        """Queue ``frame``; False if the party stopped reading until ``deadline`` (the caller drops it).

        ``force`` queues it whatever the bound (the relay's own few END and NOTICE frames). A frame
        for a party that has hung up (:meth:`finish`) or was dropped (:meth:`kill`) is discarded at
        once: nothing will ever drain it, and a source must not wait for it (before issue 35 a flood
        towards a party that had hung up held the source's reader ``stall_seconds`` per frame, so the
        relay never exited).
        """
        with self.cond:
            size = len(frame[0]) + len(frame[1])
            while (
                not force
                and not self.dead
                and not self.finishing
                and self.queued
                and self.queued + size > self.limit
            ):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self.cond.wait(min(left, 1.0))
            if self.dead or self.finishing:
                return True
            self.frames.append(frame)
            self.queued += size
            self.peak = max(self.peak, self.queued)
            self.cond.notify_all()
            return True

    def drain(self) -> None:
        try:
            while True:
                with self.cond:
                    while not self.frames and not self.dead and not self.finishing:
                        self.cond.wait()
                    if self.dead or not self.frames:
                        break
                    frame = self.frames.popleft()
                self.stream.send_parts(list(frame))
                with self.cond:
                    self.queued -= len(frame[0]) + len(frame[1])
                    resumed, self.reported = self.reported, False
                    self.cond.notify_all()
                if resumed and self.on_progress is not None:
                    self.on_progress(self.name)
        except (OSError, ValueError, ProtocolError):
            self.kill()  # the party hung up; its last frames may still be read
        self.side_done()

    def side_done(self) -> None:
        """The reader or the writer of this connection is done; the second one closes it."""
        with self.cond:
            self._ends += 1
            last = self._ends == 2
        if last:
            self.stream.close()

    def kill(self) -> None:
        with self.cond:
            self.dead = True
            self.frames.clear()
            self.queued = 0
            self.cond.notify_all()

    def finish(self) -> None:
        """Send what is queued, then stop."""
        with self.cond:
            self.finishing = True
            self.cond.notify_all()


class RelayServer:
    """The relay: hosts the rendezvous, then forwards outer frames between the parties of one run.

    Parameters
    ----------
    address : str
        ``HOST:PORT`` to listen on (port 0: the kernel picks; see :attr:`port`).
    context : ssl.SSLContext
        The relay's server context; its certificate names :data:`RELAY_NAME`.
    join_window : float
        Seconds the rendezvous waits for every party.
    layout : mapping of str to int
        The run's parties and their ranks, fixed by the relay's operator
        (the ``parties`` of ``mpc-pca relay``): a registration with any other layout is refused and
        named (:class:`~protocols.transport.relay_rendezvous.RelayRendezvous`).
    log_interval : float
        Seconds between two waiting-room lines.
    queue_bytes : int
        Most bytes queued for one party.
    stall_seconds : float
        Seconds a source waits for a destination that does not read before the
        relay drops that destination.

    Attributes
    ----------
    refused : list of str
        Why the relay stopped forwarding for a party (each names it).
    forwarded : dict
        Bytes forwarded per ``(source, destination)``: what the relay learns.
    """

    def __init__(
        self,
        address: str,
        context: ssl.SSLContext,
        join_window: float,
        *,
        layout: Mapping[str, int],
        log_interval: float = WAITING_LOG_SECONDS,
        queue_bytes: int = QUEUE_BYTES,
        stall_seconds: float = STALL_SECONDS,
    ) -> None:
        if context is None:
            raise InputValidationError(
                "the relay needs TLS credentials (context=None): a relay has no insecure mode"
            )
        self.queue_bytes = int(queue_bytes)
        self.stall_seconds = float(stall_seconds)
        if self.queue_bytes < MAX_FRAME_BYTES + OUTER.size:
            raise InputValidationError(
                f"queue_bytes={queue_bytes} is below one frame ({MAX_FRAME_BYTES + OUTER.size} bytes)"
            )
        self.refused: list[str] = []
        self.forwarded: dict[tuple[str, str], int] = collections.defaultdict(int)
        self.outboxes: dict[str, _Outbox] = {}
        self.ranks: dict[str, int] = {}
        self.names: dict[int, str] = {}
        self._lock = threading.Lock()
        self._ended: set[str] = set()
        self._forwarding = threading.Event()
        self._done = threading.Event()
        self.layout = check_layout(layout, RELAY_NAME)
        self.rendezvous = RelayRendezvous(
            address, self.layout, context, join_window, self._start_forwarding, log_interval=log_interval
        )
        self.port = self.rendezvous.port

    # hooks for tests: a relay that misbehaves overrides this
    def forward(self, src: str, dst: str, kind: int, payload: Payload) -> list[tuple[int, Payload]]:
        """The frames to send to ``dst`` for one frame from ``src``: an honest relay forwards it unchanged."""
        return [(kind, payload)]

    def _start_forwarding(self, ranks: dict[str, int], streams: dict[str, Stream]) -> None:
        self.ranks = ranks
        self.names = {r: n for n, r in ranks.items()}
        for name, stream in streams.items():
            stream.sock.settimeout(None)
            self.outboxes[name] = _Outbox(name, stream, self.queue_bytes)
            self.outboxes[name].on_progress = self._resumed
        for name, box in self.outboxes.items():
            threading.Thread(target=box.drain, name=f"relay-to-{name}", daemon=True).start()
            threading.Thread(target=self._read, args=(name,), name=f"relay-from-{name}", daemon=True).start()
        log.info("relay: forwarding between %d parties", len(streams))
        self._forwarding.set()

    def _send(self, src: str, dst: str, kind: int, payload: Payload, force: bool = False) -> None:
        box = self.outboxes[dst]
        frame = (OUTER.pack(kind, self.ranks[src], len(payload)), payload)
        start = time.monotonic()
        stall = start + self.stall_seconds
        if box.put(frame, min(stall, start + REPORT_SECONDS), force):
            return
        self._report_stall(src, dst)
        if not box.put(frame, stall, force):
            self._drop(
                dst, f"{dst!r} did not read what the relay forwarded to it for {self.stall_seconds:g} s"
            )

    def _report_stall(self, src: str, dst: str) -> None:
        """Tell every other party, first-hand, that ``dst`` does not read and ``src`` waits for it (issue 35).

        A :data:`STALL` frame from ``dst``'s rank; the parties quote it as the relay's report when
        their own deadline passes (a party held back by ``dst`` would otherwise be blamed for not
        sending). Sent once until ``dst`` reads again (then an empty :data:`STALL` withdraws it).
        """
        box = self.outboxes[dst]
        with box.cond:
            if box.reported or box.dead or box.finishing:
                return
            box.reported = True
            queued = box.queued
        text = (
            f"{dst!r} (rank {self.ranks[dst]}) has read nothing the relay forwarded to it for "
            f"{REPORT_SECONDS:g} s ({queued} bytes wait for it), and {src!r} (rank {self.ranks[src]}) waits "
            "to send to it"
        )
        log.warning("relay: %s", text)
        for other in self.outboxes:
            if other != dst:
                self._send(dst, other, STALL, text.encode(), force=True)

    def _resumed(self, name: str) -> None:
        """``name`` reads again: withdraw the report (an empty :data:`STALL`)."""
        for other in self.outboxes:
            if other != name:
                self._send(name, other, STALL, b"", force=True)

    def _read(self, name: str) -> None:
        stream = self.outboxes[name].stream
        who = f"{name!r} (rank {self.ranks[name]})"
        reason = f"{name!r}'s connection to the relay ended"
        clean = False
        try:
            while True:
                try:
                    header = stream.read_exact(OUTER.size)
                except ClosedError as exc:
                    clean = not exc.truncated
                    if exc.truncated:
                        reason = f"{who} sent the relay a truncated frame header"
                    break
                kind, rank, size = OUTER.unpack(header)
                if kind not in (DATA, END):
                    raise ProtocolError(
                        f"{who} sent the relay a frame of kind {kind}, which a party may not send"
                    )
                if rank not in self.names or rank == self.ranks[name]:
                    raise ProtocolError(
                        f"{who} sent the relay a frame for rank {rank}, which is no other party of the run "
                        f"(ranks 0 .. {len(self.ranks) - 1})"
                    )
                if size > MAX_FRAME_BYTES:
                    raise ProtocolError(
                        f"{who} sent the relay a frame of {size} bytes; at most {MAX_FRAME_BYTES} are allowed"
                    )
                payload = stream.read_exact(size) if size else memoryview(b"")
                dst = self.names[rank]
                with self._lock:
                    self.forwarded[(name, dst)] += size
                for out_kind, out_payload in self.forward(name, dst, kind, payload):
                    self._send(name, dst, out_kind, out_payload)
        except ProtocolError as exc:
            reason = str(exc)
            with self._lock:
                self.refused.append(reason)
            log.warning("relay refused %s", reason)
        except (OSError, ValueError) as exc:
            reason = f"{name!r}'s connection to the relay failed: {exc}"
        self._drop(name, reason, clean=clean)
        self.outboxes[name].side_done()

    def _drop(self, name: str, reason: str, clean: bool = False) -> None:
        """Stop forwarding for ``name``: tell every other party (END, and a NOTICE unless it ended cleanly)."""
        box = self.outboxes[name]
        with self._lock:
            if name in self._ended:
                return
            # The outbox stops taking frames before the party counts as ended, so no source that sees it
            # ended can still queue a frame for it (and wait for room that nobody will make).
            if clean:
                box.finish()
            else:
                box.kill()
            self._ended.add(name)
            everyone = len(self._ended) == len(self.outboxes)
        if not clean:
            _cut(box.stream)
        for other in self.outboxes:
            if other != name:
                if not clean:
                    notice = reason.encode()[:MAX_NOTICE_CHARS]
                    self._send(name, other, NOTICE, notice, force=True)
                self._send(name, other, END, b"", force=True)
        if everyone:
            for other_box in self.outboxes.values():
                other_box.finish()
            self._done.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the run ended (every party's connection ended) or the rendezvous gave up.

        Returns
        -------
        bool
            True once forwarding has ended for every party; False if the run
            never started (see ``rendezvous.error``) or ``timeout`` passed.
        """
        self.rendezvous.join(timeout)
        if not self._forwarding.is_set():
            return False
        return self._done.wait(timeout)

    def close(self) -> None:
        """Stop: give up waiting for parties, and close every connection."""
        self.rendezvous.close()
        for box in self.outboxes.values():
            box.kill()
            _cut(box.stream)
        self._done.set()


def _cut(stream: Stream) -> None:
    """Shut a party's connection down at once, even while a writer is blocked on it (that writer then closes it)."""
    with contextlib.suppress(OSError):
        stream.sock.shutdown(socket.SHUT_RDWR)


__all__ = ["RelayServer"]
