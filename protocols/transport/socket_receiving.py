"""The receiving half of :class:`~protocols.transport.socket_channel.SocketChannel`: one reader thread per peer.

The frames are those of :mod:`protocols.transport.socket_frames`.

Reader threads
    One thread per peer reads frames as they arrive, so a sender never blocks
    on a receiver that is busy computing. A frame that announces more than
    the cap (``max_message_bytes`` for ``DATA``, agreed from the run's
    settings; :data:`CONTROL_CAP` otherwise) is refused before anything is
    allocated; a frame cut short, an unknown kind or a connection closed
    without ``BYE`` end the link with a :class:`~protocols.errors.ProtocolError`
    that names the peer.

Bounded memory per peer
    At most :data:`CONTROL_QUEUE_CAP` control frames and :attr:`SocketChannel.data_budget`
    bytes of data frames (``DATA_BUDGET_FACTOR`` times the message cap this
    party set, at least :data:`DATA_BUDGET_FLOOR`) may wait unread from one
    peer; the next frame is refused unread, the peer's queue dropped and its
    link ended with a ``ProtocolError`` naming it, raised to this party at
    its next receive. At the end of a run (:meth:`SocketChannel.close`, before and
    after ``BYE``) a data frame that was never read is unsolicited: a
    ``ProtocolError`` naming the peer and the count. Not guaranteed: the
    message cap itself comes from the run's settings (e.g. announced row
    counts), which are not yet checked against anything.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Mapping
from typing import Any

from protocols.errors import PeerFailureError, ProtocolError
from protocols.transport.base import Channel, now
from protocols.transport.links import HEADER, ClosedError, Stream
from protocols.transport.socket_frames import (
    ABORT,
    BYE,
    CONTROL,
    CONTROL_CAP,
    CONTROL_QUEUE_CAP,
    DATA,
    DATA_BUDGET_FACTOR,
    DATA_BUDGET_FLOOR,
    DATA_PREFIX,
    KINDS,
    STATUS,
    link_id,
    parse_abort,
    parse_status,
)


class FrameReceiver(Channel):
    """A channel's links and reader threads: every peer's frames checked and filed as they arrive.

    :class:`~protocols.transport.socket_channel.SocketChannel` adds sending,
    waiting and blame, phases and the end of a run.

    Parameters
    ----------
    me : str
        This party's name.
    ranks : mapping of str to int
        Every party's rank (used in messages).
    streams : mapping of str to Stream
        The connected, authenticated stream to each peer.
    timeout : float
        Seconds a receive may wait without any progress of the run.
    data_budget_floor : int
        Least :attr:`data_budget` (bytes), whatever the message cap.
    """

    def __init__(
        self,
        me: str,
        ranks: Mapping[str, int],
        streams: Mapping[str, Stream],
        timeout: float,
        *,
        data_budget_floor: int = DATA_BUDGET_FLOOR,
    ):
        super().__init__(me, list(ranks), timeout)
        self.ranks = dict(ranks)
        self.streams = dict(streams)
        missing = set(self.peers) - set(self.streams)
        if missing:
            raise ProtocolError(f"{me!r} has no link to {sorted(missing)}")
        self.secure = all(s.secure for s in self.streams.values())
        self.max_message_bytes: int | None = None
        self._cap_set = threading.Event()
        self._cond = threading.Condition()
        self._data: dict[str, collections.deque] = {p: collections.deque() for p in self.peers}
        self._control: dict[str, collections.deque] = {p: collections.deque() for p in self.peers}
        self.data_budget_floor = int(data_budget_floor)
        #: Bytes of data frames received from each peer and not yet read, and their high-water mark.
        self.queued_bytes: dict[str, int] = {p: 0 for p in self.peers}
        self.peak_queued_bytes: dict[str, int] = {p: 0 for p in self.peers}
        self._failed: dict[str, ProtocolError] = {}
        self._bye: set[str] = set()
        self._aborts: dict[str, str] = {}
        self._status: dict[str, dict[str, Any]] = {p: {} for p in self.peers}
        self._progress = now()
        self._aborted = False
        #: Sequence number of the next data frame to each peer / expected from each peer.
        self._sent_seq: dict[str, int] = {p: 0 for p in self.peers}
        self._recv_seq: dict[str, int] = {p: 0 for p in self.peers}
        self._data_send_lock = threading.Lock()
        self._readers = [
            threading.Thread(target=self._read_loop, args=(p,), name=f"recv-{me}-{p}", daemon=True)
            for p in self.peers
        ]
        for thread in self._readers:
            thread.start()

    def where(self, peer: str) -> str:
        return f"{peer!r} (rank {self.ranks[peer]})"

    def link_id(self, sender: str, receiver: str) -> bytes:
        """The run id of data frames from ``sender`` to ``receiver`` (one of them is this party).

        See :func:`link_id`; it uses this channel's :attr:`identity` once the
        runtime has set it (before any data frame is sent or read).
        """
        keys = [b"", b""]
        if self.identity is not None:
            for i, name in enumerate((sender, receiver)):
                keys[i] = self.identity.public if name == self.me else self.identity.peer_public(name)
        return link_id(sender, receiver, keys[0], keys[1])

    @property
    def data_budget(self) -> int:
        """Most bytes of unread data frames one peer may have queued here.

        ``DATA_BUDGET_FACTOR`` times the message cap this party set, at least
        :attr:`data_budget_floor`; nothing a peer sends changes it.
        """
        cap = self.max_message_bytes or 0
        return max(self.data_budget_floor, DATA_BUDGET_FACTOR * cap)

    def set_message_cap(self, nbytes: int) -> None:
        """Largest ``DATA`` payload accepted from a peer; until it is set, data frames wait."""
        self.max_message_bytes = int(nbytes)
        self._cap_set.set()

    # -- the reader threads ------------------------------------------------------------

    def _read_loop(self, peer: str) -> None:
        stream = self.streams[peer]
        try:
            while True:
                try:
                    header = stream.read_exact(HEADER.size)
                except ClosedError as exc:
                    if exc.truncated:
                        raise ProtocolError(f"{self.where(peer)} sent a truncated frame header") from None
                    if peer in self._bye:
                        return
                    raise PeerFailureError(
                        f"{self.where(peer)} closed the connection (its process ended or dropped the link)"
                    ) from None
                kind, size = HEADER.unpack(header)
                if kind not in KINDS:
                    raise ProtocolError(f"{self.where(peer)} sent a frame of unknown kind {kind}")
                if kind == DATA:
                    self._cap_set.wait()
                    cap = self.max_message_bytes
                    if cap is None or size > cap + DATA_PREFIX.size:
                        raise ProtocolError(
                            f"{self.where(peer)} announced a data frame of {size} bytes; at most {cap} "
                            f"message bytes (plus the {DATA_PREFIX.size}-byte sequence header) are allowed "
                            "for these settings"
                        )
                    if size < DATA_PREFIX.size:
                        raise ProtocolError(
                            f"{self.where(peer)} sent a data frame of {size} bytes, shorter than its "
                            f"{DATA_PREFIX.size}-byte sequence header"
                        )
                    self._check_data_budget(peer, size - DATA_PREFIX.size)
                elif size > CONTROL_CAP:
                    raise ProtocolError(
                        f"{self.where(peer)} announced a {KINDS[kind]} frame of {size} bytes; at most "
                        f"{CONTROL_CAP} are allowed"
                    )
                try:
                    payload = stream.read_exact(size)
                except ClosedError as exc:
                    raise ProtocolError(
                        f"{self.where(peer)} sent a truncated frame: it announced {size} bytes, then "
                        f"closed the connection ({exc})"
                    ) from None
                if kind == DATA:
                    payload = self._check_sequence(peer, payload)
                if self._deliver(peer, kind, payload):
                    return
        except ProtocolError as exc:
            if repr(peer) not in str(exc):
                exc = type(exc)(f"the link to {self.where(peer)} failed: {exc}")
            self._record_failure(peer, exc)
        except (OSError, ValueError) as exc:
            self._record_failure(
                peer,
                PeerFailureError(
                    f"{self.where(peer)} closed the connection (its process ended or reset the link: {exc})"
                ),
            )
        except Exception as exc:  # a bug here must still end the link with a named error, not a hang
            self._record_failure(
                peer,
                ProtocolError(
                    f"the link to {self.where(peer)} failed: its frames could not be handled "
                    f"({type(exc).__name__}: {exc})"
                ),
            )

    def _record_failure(self, peer: str, exc: ProtocolError) -> None:
        """Record the first failure of ``peer``'s link (first-hand evidence) and wake every waiter."""
        with self._cond:
            self._failed.setdefault(peer, exc)
            self._cond.notify_all()

    def _check_data_budget(self, peer: str, size: int) -> None:
        """Refuse a data frame that would put ``peer``'s unread data over :attr:`data_budget`.

        The frame is not read; the peer's unread data are dropped (the run has failed).
        """
        with self._cond:
            queued, budget = self.queued_bytes[peer], self.data_budget
            if queued + size <= budget:
                return
            count = len(self._data[peer])
            self._data[peer].clear()
            self.queued_bytes[peer] = 0
        raise ProtocolError(
            f"{self.where(peer)} sent more data than was read: {count} unread data frames of {queued} bytes "
            f"and one more of {size} bytes exceed the {budget} bytes a peer may have waiting"
        )

    def _check_sequence(self, peer: str, payload: memoryview) -> memoryview:
        """Check a data frame's sequence number and run id; return the message it carries.

        Raises
        ------
        ProtocolError
            Naming ``peer``, if the frame does not carry exactly the next
            sequence number on the link from ``peer`` (a replayed, reordered
            or dropped frame) or not this link's run id (a frame of another
            run or of another link).
        """
        seq, run = DATA_PREFIX.unpack_from(payload)
        expected = self._recv_seq[peer]
        if seq != expected:
            raise ProtocolError(
                f"{self.where(peer)} sent data frame {seq} where {expected} was expected: replayed or reordered"
            )
        if run != self.link_id(peer, self.me):
            raise ProtocolError(
                f"{self.where(peer)} sent data frame {seq} with run id {run.hex()}, not this run's link id "
                f"{self.link_id(peer, self.me).hex()}: a frame of another run or of another link"
            )
        self._recv_seq[peer] = expected + 1
        return payload[DATA_PREFIX.size :]

    def _deliver(self, peer: str, kind: int, payload: memoryview) -> bool:
        """File a frame; return True after ``BYE`` (the peer sends nothing more)."""
        status: dict[str, str | None] = {}
        reason = ""
        if kind == STATUS:
            status = parse_status(self.where(peer), payload, self.ranks)
        elif kind == ABORT:
            reason = parse_abort(self.where(peer), payload)
        with self._cond:
            if kind == DATA:
                self._data[peer].append(payload)
                self.queued_bytes[peer] += len(payload)
                self.peak_queued_bytes[peer] = max(self.peak_queued_bytes[peer], self.queued_bytes[peer])
                self._progress = now()
            elif kind == CONTROL:
                if len(self._control[peer]) >= CONTROL_QUEUE_CAP:
                    raise ProtocolError(
                        f"{self.where(peer)} sent more control frames than were read: at most "
                        f"{CONTROL_QUEUE_CAP} may wait unread"
                    )
                self._control[peer].append(payload)
            elif kind == ABORT:
                self._aborts.setdefault(peer, reason)
            elif kind == STATUS:
                # Evidence about the sender only: a new phase label restarts nobody's deadline.
                self._status[peer] = status
            else:
                self._bye.add(peer)
            self._cond.notify_all()
        return kind == BYE

    # -- sending -----------------------------------------------------------------------------


__all__ = ["FrameReceiver"]
