"""A :class:`~protocols.transport.base.Channel` over one TLS (or plain TCP) stream per peer.

The frames (kinds, sequencing, control-frame schemas) are those of
:mod:`protocols.transport.socket_frames`; the reader threads and the bounded
queues per peer are :class:`~protocols.transport.socket_receiving.FrameReceiver`'s.
This module adds sending, receiving with deadlines and blame, phases, and
the end of a run.

Deadlines and blame
    A receive waits until ``timeout`` seconds have passed without progress of
    the run as this party sees it: the deadline restarts when this party
    enters a phase and whenever a peer delivers data to it. A peer's STATUS
    frame is evidence about its sender only and restarts nobody's deadline,
    so a peer that announces phases without sending what is needed cannot
    keep anyone waiting. A party that has waited a second tells its peers
    whom it waits for. When a deadline passes, the waiting party blames the
    party it was waiting for (what that party failed to send is the
    evidence); a "waiting for" report from that party is quoted as its claim
    and buys it one more deadline to report its own failure, never a shift
    of the blame. So a party ends at most ``timeout`` (``2 * timeout`` if the
    awaited peer claims to wait for another) after its last progress. A
    receive from an excused peer (:meth:`~protocols.transport.base.Channel.tolerating`)
    is the exception: its ``timeout`` is the caller's dropout deadline, kept
    as given, because a protocol that bounds how long it waits for a party it
    may lose adds its waits up, and the parties outside that protocol step
    (the consumer waiting for the server's result) wait one phase deadline:
    a wait that others' progress stretches made the dropout-tolerant sum as
    long as that deadline. Every
    failure is broadcast to all peers over the authenticated links; a
    received ``ABORT`` is quoted as its sender's report (``'p' (rank 1)
    reported: ... ['p''s claim, not checked by 'me']``), never as this
    party's finding. This party's own evidence comes first (issue 35): a
    link that failed its checks is raised before any ``ABORT`` (except the
    end of the connection of a peer that reported a failure, which adds
    nothing to its report). Through a relay, the relay's first-hand reports
    of parties that do not read (``RelayedStream.relay_report``) are quoted
    in the timeout and abort messages as the relay's observation.
"""

from __future__ import annotations

import collections
import logging
from typing import Any

from protocols.errors import PeerDroppedError, PeerFailureError, PeerTimeoutError, ProtocolError
from protocols.transport.base import now
from protocols.transport.links import HEADER
from protocols.transport.socket_frames import (
    ABORT,
    BYE,
    CONTROL,
    DATA,
    DATA_PREFIX,
    MAX_REASON_CHARS,
    STATUS,
    short_label,
)
from protocols.transport.socket_receiving import FrameReceiver
from protocols.transport.wire import decode_message, encode_message, encode_message_parts

log = logging.getLogger("mpc_pca.transport")

_WAIT_ANNOUNCE = 1.0
_LOG_EVERY = 10.0


class SocketChannel(FrameReceiver):
    """Message passing over one :class:`~protocols.transport.links.Stream` per peer.

    Its parameters are :class:`~protocols.transport.socket_receiving.FrameReceiver`'s
    (the links and their reader threads); this class adds sending, waiting and
    blame, phases and the end of a run.
    """

    private_payloads = True
    #: Public settings this party already sent to every peer while the links were set up
    #: (:func:`protocols.runtime.network.open_links` with ``announce``), else ``None``.
    announced: dict[str, Any] | None = None
    #: The cost of the final confirmation round, once :meth:`close` returned.
    confirmation: Any = None

    def _send_frame(self, to: str, kind: int, parts: list[Any]) -> None:
        size = sum(len(p) for p in parts)
        try:
            if kind == DATA:
                # Numbered under a lock, so frames leave in the order of their numbers.
                with self._data_send_lock:
                    prefix = DATA_PREFIX.pack(self._sent_seq[to], self.link_id(self.me, to))
                    self.streams[to].send_parts([HEADER.pack(kind, len(prefix) + size), prefix, *parts])
                    self._sent_seq[to] += 1
            else:
                self.streams[to].send_parts([HEADER.pack(kind, size), *parts])
        except (OSError, ValueError) as exc:
            # First-hand evidence that the link is gone, recorded at once: the reader thread may
            # not have seen the close yet, and a dropout-tolerant sum asks peer_gone() next.
            failure = PeerFailureError(
                f"{self._relay_report()}{self.where(to)} closed the connection (sending to it failed: {exc})"
            )
            self._record_failure(to, failure)
            self._raise_run_failure()
            raise PeerFailureError(f"{self.me!r}: {failure}") from None

    def send(self, to: str, obj: Any) -> None:
        """Serialise ``obj`` and send it to ``to`` as one ``DATA`` frame.

        The frame carries the link's next sequence number and run id
        (:data:`DATA_PREFIX`); the meter counts the message only, as the
        in-process transport does.
        """
        self._check_peer(to)
        self._raise_run_failure()
        parts = encode_message_parts(obj)
        self._send_frame(to, DATA, parts)
        self.meter.record_send(to, sum(len(p) for p in parts))

    def _send_bytes(self, to: str, payload: bytes) -> None:
        self._send_frame(to, DATA, [payload])

    def send_control(self, to: str, obj: Any) -> None:
        """Send a settings-agreement message (not metered)."""
        self._send_frame(to, CONTROL, [encode_message(obj)])

    def recv_control(self, frm: str, timeout: float | None = None) -> Any:
        """Receive a settings-agreement message from ``frm`` (not metered)."""
        return decode_message(self._wait_for(frm, self._control, timeout))

    def _broadcast(self, kind: int, obj: Any) -> None:
        payload = encode_message(obj)
        for peer in self.peers:
            if peer in self._failed:
                continue
            try:
                self.streams[peer].send_parts([HEADER.pack(kind, len(payload)), payload])
            except (OSError, ValueError):
                continue

    # -- receiving ------------------------------------------------------------------------------

    def _recv_bytes(self, frm: str, timeout: float) -> memoryview:
        return self._wait_for(frm, self._data, timeout)

    def _raise_run_failure(self) -> None:
        """Raise if any peer reported a failure or any link broke (caller may hold the lock).

        Peers in :attr:`excused` do not count (:meth:`~protocols.transport.base.Channel.tolerating`).
        """
        # What this party observed itself (a link that failed: a bad frame from the peer, its
        # connection ended) comes before what a peer claims (issue 35: a forged ABORT must not
        # become the final line of a party that has evidence of its own). A peer that reported a
        # failure then hangs up: that end of its link is no evidence beyond its report.
        failed = [
            (p, e)
            for p, e in self._failed.items()
            if p not in self.excused and not (p in self._aborts and isinstance(e, PeerFailureError))
        ]
        if failed:
            peer, exc = failed[0]
            raise type(exc)(f"{self.me!r}: {exc}")
        aborts = [(p, r) for p, r in self._aborts.items() if p not in self.excused]
        if aborts:
            peer, reason = aborts[0]
            raise PeerFailureError(
                f"{self.me!r} stopped: {self._relay_report()}{self.where(peer)} reported: {reason} "
                f"[{peer!r}'s claim, not checked by {self.me!r}]"
            )
        failed = [(p, e) for p, e in self._failed.items() if p not in self.excused]
        if failed:
            peer, exc = failed[0]
            raise type(exc)(f"{self.me!r}: {exc}")

    def _raise_if_excused_gone(self, frm: str) -> None:
        """Raise :class:`PeerDroppedError` if ``frm`` is excused and its link failed or it aborted."""
        if frm not in self.excused:
            return
        if frm in self._aborts:
            raise PeerDroppedError(
                f"{self.me!r}: {self.where(frm)} left the run; it reported: {self._aborts[frm]}"
            )
        if frm in self._failed:
            raise PeerDroppedError(f"{self.me!r}: {self.where(frm)} left the run: {self._failed[frm]}")

    def peer_gone(self, peer: str) -> bool:
        """True if ``peer``'s link failed or it sent an abort."""
        with self._cond:
            return peer in self._failed or peer in self._aborts

    def _wait_for(self, frm: str, queues: dict[str, collections.deque], timeout: float | None) -> memoryview:
        self._check_peer(frm)
        limit = self.timeout if timeout is None else float(timeout)
        started = now()
        announced = False
        grace: float | None = None
        next_log = started + _LOG_EVERY
        try:
            with self._cond:
                while True:
                    if queues[frm]:
                        item: memoryview = queues[frm].popleft()
                        if queues is self._data:
                            self.queued_bytes[frm] -= len(item)
                        return item
                    self._raise_run_failure()
                    self._raise_if_excused_gone(frm)
                    if frm in self._bye:
                        raise ProtocolError(
                            f"{self.me!r} expected a message from {self.where(frm)}, which has finished"
                        )
                    t = now()
                    deadline = (
                        started + limit if frm in self.excused else max(started, self._progress) + limit
                    )
                    if t >= deadline:
                        if grace is None and frm not in self.excused and self._claims_to_wait(frm):
                            # ``frm`` says it waits for someone else: give it one more deadline to
                            # report its own failure (quoted as its claim when it comes).
                            grace = t + limit
                        if grace is None or t >= grace:
                            raise PeerTimeoutError(self._blame(frm, limit, grace is not None))
                        deadline = grace
                    else:
                        grace = None  # real progress since: a fresh deadline, a fresh grace
                    if not announced and t - started >= _WAIT_ANNOUNCE:
                        announced = True
                        self._cond.release()
                        try:
                            self._broadcast(STATUS, {"phase": short_label(self.phase_label), "waiting": frm})
                        finally:
                            self._cond.acquire()
                        continue
                    if t >= next_log:
                        next_log = t + _LOG_EVERY
                        log.info(
                            "%s: waiting for %s (%s) %.0f s",
                            self.me,
                            frm,
                            self.phase_label or "protocol",
                            t - started,
                        )
                    self._cond.wait(min(1.0, max(0.01, deadline - t)))
        except PeerTimeoutError:
            # Still true: this party was waiting for ``frm``. Leave that announced, so that a peer
            # waiting for this party gives it time to report this failure instead of blaming it.
            announced = False
            raise
        finally:
            if announced:
                self._broadcast(STATUS, {"phase": short_label(self.phase_label), "waiting": None})

    def _relay_report(self) -> str:
        """``the relay reports: ...; `` (parties it saw not reading, first-hand) or '' (issue 35)."""
        for stream in self.streams.values():
            report = getattr(stream, "relay_report", None)
            if report is None:
                return ""  # direct links: no relay
            text = report()
            if text:
                return f"the relay reports: {text} (the relay's observation, not checked by {self.me!r}); "
            return ""
        return ""

    def _claims_to_wait(self, peer: str) -> bool:
        """True if ``peer``'s last STATUS says it waits for a party other than this one."""
        waiting = self._status[peer].get("waiting")
        return isinstance(waiting, str) and waiting != self.me

    def _blame(self, frm: str, limit: float, extended: bool) -> str:
        """The timeout message: blame ``frm``, which did not send; quote its claims as claims."""
        phase = self.phase_label or "protocol"
        status = self._status[frm]
        claim = ""
        if status.get("phase") is not None:
            claim += f"; {frm!r} says it is in phase {status['phase']!r}"
        if isinstance(status.get("waiting"), str):
            claim += f"; {frm!r} says it waits for {status['waiting']!r} (its claim, not checked)"
            if extended:
                claim += f", but reported no failure within {limit:g} s more"
        how = "the deadline for a party it may lose" if frm in self.excused else "with no progress of the run"
        return (
            f"{self.me!r} waited {limit:g} s in phase {phase!r} for {frm!r} {how}"
            f"; {self._relay_report()}{self.where(frm)} did not send within the deadline{claim}"
        )

    # -- phases, failure, end -----------------------------------------------------------------

    def enter_phase(self, label: str | None) -> None:
        """Tell every peer this party entered phase ``label`` (restarts this party's deadline only)."""
        super().enter_phase(label)
        with self._cond:
            self._progress = now()
        self._broadcast(STATUS, {"phase": short_label(label), "waiting": None})

    def abort(self, reason: str) -> None:
        """Send ``reason`` to every peer (once); they stop and quote it."""
        if self._aborted:
            return
        self._aborted = True
        self._broadcast(ABORT, {"reason": reason[:MAX_REASON_CHARS]})

    def _check_nothing_unread(self) -> None:
        """Raise :class:`ProtocolError` naming the first peer with data frames this party never read."""
        with self._cond:
            for peer in self.dropped:  # a dropped peer's late data is discarded, never read
                self._data[peer].clear()
                self.queued_bytes[peer] = 0
            for peer in self.peers:
                if self._data[peer]:
                    count = len(self._data[peer])
                    raise ProtocolError(
                        f"{self.me!r}: {self.where(peer)} sent {count} unsolicited data "
                        f"frame{'s' if count > 1 else ''} ({self.queued_bytes[peer]} bytes) that the "
                        "protocol never read"
                    )

    def close(self, timeout: float | None = None) -> None:
        """End cleanly: the final confirmation round (:mod:`protocols.transport.confirmation`), then close the links.

        ``BYE`` (this party finished) to every peer, then the ``BYE`` of
        every peer that is not excused, each within ``timeout`` (default: the
        phase deadline) of the last one; :attr:`confirmation` then holds the
        round's cost.

        Raises
        ------
        ProtocolError
            If a peer sent data frames that were never read: before ``BYE``
            (then the caller should :meth:`abort`), or after the peers' ``BYE``
            (frames that were still on their way); if a peer failed, reported a
            failure or sent no ``BYE`` in time (naming it; the run did not
            finish, so the caller writes nothing). The links are then left
            open for :meth:`shutdown`.
        """
        from protocols.transport.confirmation import await_confirmations, send_confirmations

        self._check_nothing_unread()
        sent = send_confirmations(self, BYE)
        self.confirmation = await_confirmations(self, self.timeout if timeout is None else timeout, sent)
        self._check_nothing_unread()
        for stream in self.streams.values():
            stream.close()

    def shutdown(self, linger: float = 1.0) -> None:
        """Close every link after a failure.

        The write sides are half-closed first and the peers get up to
        ``linger`` seconds to read what was sent (the ``ABORT``) and hang up,
        so that no reset of the connection can destroy that message.
        """
        for stream in self.streams.values():
            stream.close_write()
        deadline = now() + linger
        for thread in self._readers:
            thread.join(max(0.0, deadline - now()))
        for stream in self.streams.values():
            stream.close()


__all__ = ["SocketChannel"]
