"""A :class:`~protocols.transport.base.Channel` over one TLS (or plain TCP) stream per peer.

Frames
    Every frame is a 1-byte kind and an 8-byte length, then the payload
    (:data:`protocols.transport.links.HEADER`). ``DATA`` frames carry protocol
    messages in the wire format of :mod:`protocols.transport.wire`, metered
    exactly as the in-process transport meters them. ``CONTROL`` frames carry
    the settings agreement, ``ABORT`` a failing party's reason, ``STATUS`` the
    phase a party entered and whom it waits for, ``BYE`` its confirmation that
    it finished (:mod:`protocols.transport.confirmation`). None of these
    control frames is metered.

Sequencing
    A ``DATA`` payload starts with :data:`DATA_PREFIX` (24 bytes, inside the
    authenticated TLS stream): the frame's sequence number on its link (0, 1,
    2, ... for each ordered pair of parties) and the link's run id
    (:func:`link_id`: a hash of the two names and of the two parties'
    per-run identity keys, so it differs per run and per direction). The
    reader thread checks both as the frame arrives: a frame that does not
    carry exactly the next number (a peer re-sending its own earlier bytes,
    or sending them out of order) or carries another run id (a frame of an
    earlier run, or one meant for another party) ends the link with a
    ``ProtocolError`` naming the sender (``'p' (rank 1) sent data frame 7
    where 5 was expected: replayed or reordered``). The prefix is not
    metered: the meters count the message, as in-process. The message cap
    and the data budget count message bytes. A data body that is not in the
    wire format is a :class:`~protocols.errors.WireFormatError` naming its
    sender. What sequencing cannot tell: a peer that sends new frames whose
    content repeats an earlier message (e.g. a share seed); the protocol
    layers check what they must (:mod:`protocols.backends.additive` refuses a
    repeated share seed).

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

Control frames
    ``STATUS`` and ``ABORT`` payloads have typed schemas (:func:`parse_status`,
    :func:`parse_abort`): exact keys, ``str`` or ``None`` values, a
    ``waiting`` that names a party of the run, lengths bounded by
    :data:`MAX_LABEL_CHARS` and :data:`MAX_REASON_CHARS`. Any other shape
    ends the link with a ``ProtocolError`` naming the sender; an unexpected
    exception in a reader thread does too, so no frame can leave a party
    waiting on a dead reader.

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
    awaited peer claims to wait for another) after its last progress. Every
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
import hashlib
import logging
import struct
import threading
from collections.abc import Collection, Mapping
from typing import Any

from protocols.errors import (
    PeerDroppedError,
    PeerFailureError,
    PeerTimeoutError,
    ProtocolError,
    WireFormatError,
)
from protocols.transport.base import Channel, now
from protocols.transport.links import HEADER, ClosedError, Stream
from protocols.transport.wire import decode_message, encode_message, encode_message_parts

log = logging.getLogger("mpc_pca.transport")

DATA, CONTROL, ABORT, STATUS, BYE = 1, 2, 3, 4, 5
_KINDS = {DATA: "data", CONTROL: "control", ABORT: "abort", STATUS: "status", BYE: "bye"}
#: Largest control, abort or status frame accepted (bytes).
CONTROL_CAP = 1 << 20
#: Most control frames queued unread from one peer.
CONTROL_QUEUE_CAP = 64
#: Least number of bytes of unread data frames a peer may have queued at a receiver.
DATA_BUDGET_FLOOR = 64 << 20
#: A peer's unread data may reach this many times the message cap (if above the floor).
DATA_BUDGET_FACTOR = 2
#: Longest phase label or party name a STATUS frame may carry (characters).
MAX_LABEL_CHARS = 256
#: Longest reason an ABORT frame may carry (characters); longer reasons are cut before sending.
MAX_REASON_CHARS = 1 << 16
#: Bytes of a link's run id, carried by every data frame.
LINK_ID_BYTES = 16
#: What every ``DATA`` payload starts with: its sequence number on the link (8 bytes, little
#: endian) and the link's run id (:func:`link_id`); 24 bytes, so the message keeps its 8-byte alignment.
DATA_PREFIX = struct.Struct(f"<Q{LINK_ID_BYTES}s")
_WAIT_ANNOUNCE = 1.0
_LOG_EVERY = 10.0
_LINK_ID_CONTEXT = b"mpc-pca data link v1"


def link_id(sender: str, receiver: str, sender_key: bytes = b"", receiver_key: bytes = b"") -> bytes:
    """The run id that data frames from ``sender`` to ``receiver`` carry.

    SHA-256 over the two names and the two parties' per-run verification
    keys (:mod:`protocols.identity`, exchanged over this very link when the
    channel was opened), cut to :data:`LINK_ID_BYTES`. Both ends compute it
    from what they alone saw on the link, so no third party can make two
    honest parties disagree on it; it differs per run (fresh keys) and per
    direction. Without identities (empty keys) it binds the names only.

    Parameters
    ----------
    sender, receiver : str
        The names at the two ends, in the direction of the frames.
    sender_key, receiver_key : bytes, optional
        Their raw per-run verification keys.

    Returns
    -------
    bytes
        :data:`LINK_ID_BYTES` bytes.
    """
    digest = hashlib.sha256(_LINK_ID_CONTEXT)
    for part in (sender.encode(), receiver.encode(), sender_key, receiver_key):
        digest.update(struct.pack("<Q", len(part)))
        digest.update(part)
    return digest.digest()[:LINK_ID_BYTES]


def _control_mapping(
    sender: str, what: str, payload: bytes | memoryview, keys: frozenset[str]
) -> dict[str, Any]:
    """Decode a control frame's payload: a mapping with exactly ``keys``, else ProtocolError."""
    try:
        value = decode_message(payload)
    except WireFormatError as exc:
        raise ProtocolError(f"{sender} sent a malformed {what} frame: {exc}") from None
    if not isinstance(value, dict):
        raise ProtocolError(
            f"{sender} sent a malformed {what} frame: a {type(value).__name__}, not a mapping"
        )
    if set(value) != keys:
        raise ProtocolError(
            f"{sender} sent a malformed {what} frame: its keys are {sorted(value)[:8]!r}, expected {sorted(keys)}"
        )
    return value


def _text(sender: str, what: str, key: str, value: Any, limit: int, optional: bool) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise ProtocolError(
            f"{sender} sent a malformed {what} frame: {key!r} is a {type(value).__name__}, not a str"
            + (" or None" if optional else "")
        )
    if len(value) > limit:
        raise ProtocolError(
            f"{sender} sent a malformed {what} frame: {key!r} has {len(value)} characters, at most {limit} "
            "are allowed"
        )
    return value


def _short(label: str | None) -> str | None:
    """A phase label as a STATUS frame may carry it."""
    return None if label is None else str(label)[:MAX_LABEL_CHARS]


def parse_status(sender: str, payload: bytes | memoryview, names: Collection[str]) -> dict[str, str | None]:
    """Check a STATUS frame: ``{"phase": str or None, "waiting": a party's name or None}``.

    Parameters
    ----------
    sender : str
        How to name the peer that sent it in an error.
    payload : bytes or memoryview
        The frame's payload (wire format).
    names : collection of str
        The parties of the run (``waiting`` must be one of them).

    Raises
    ------
    ProtocolError
        Naming ``sender``, for any other shape: not a mapping, other keys,
        values of other types, strings longer than :data:`MAX_LABEL_CHARS`.
    """
    value = _control_mapping(sender, "status", payload, frozenset({"phase", "waiting"}))
    phase = _text(sender, "status", "phase", value["phase"], MAX_LABEL_CHARS, optional=True)
    waiting = _text(sender, "status", "waiting", value["waiting"], MAX_LABEL_CHARS, optional=True)
    if waiting is not None and waiting not in names:
        raise ProtocolError(
            f"{sender} sent a malformed status frame: it waits for {waiting!r}, which is not a party of this run"
        )
    return {"phase": phase, "waiting": waiting}


def parse_abort(sender: str, payload: bytes | memoryview) -> str:
    """Check an ABORT frame: ``{"reason": str}`` of at most :data:`MAX_REASON_CHARS`; return the reason.

    Raises
    ------
    ProtocolError
        Naming ``sender``, for any other shape.
    """
    value = _control_mapping(sender, "abort", payload, frozenset({"reason"}))
    reason = _text(sender, "abort", "reason", value["reason"], MAX_REASON_CHARS, optional=False)
    return reason or ""  # never None: not optional


class SocketChannel(Channel):
    """Message passing over one :class:`~protocols.transport.links.Stream` per peer.

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

    private_payloads = True
    #: Public settings this party already sent to every peer while the links were set up
    #: (:func:`protocols.runtime.network.open_links` with ``announce``), else ``None``.
    announced: dict[str, Any] | None = None
    #: The cost of the final confirmation round, once :meth:`close` returned.
    confirmation: Any = None

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
                if kind not in _KINDS:
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
                        f"{self.where(peer)} announced a {_KINDS[kind]} frame of {size} bytes; at most "
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
            with self._cond:
                self._failed.setdefault(peer, exc)
                self._cond.notify_all()
        except (OSError, ValueError) as exc:
            with self._cond:
                self._failed.setdefault(
                    peer,
                    PeerFailureError(
                        f"{self.where(peer)} closed the connection (its process ended or reset the link: {exc})"
                    ),
                )
                self._cond.notify_all()
        except Exception as exc:  # a bug here must still end the link with a named error, not a hang
            with self._cond:
                self._failed.setdefault(
                    peer,
                    ProtocolError(
                        f"the link to {self.where(peer)} failed: its frames could not be handled "
                        f"({type(exc).__name__}: {exc})"
                    ),
                )
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
            self._raise_run_failure()
            raise PeerFailureError(
                f"{self.me!r}: {self._relay_report()}{self.where(to)} closed the connection "
                f"(sending to it failed: {exc})"
            ) from None

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
                    deadline = max(started, self._progress) + limit
                    if t >= deadline:
                        if grace is None and self._claims_to_wait(frm):
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
                            self._broadcast(STATUS, {"phase": _short(self.phase_label), "waiting": frm})
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
                self._broadcast(STATUS, {"phase": _short(self.phase_label), "waiting": None})

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
        return (
            f"{self.me!r} waited {limit:g} s in phase {phase!r} for {frm!r} with no progress of the run"
            f"; {self._relay_report()}{self.where(frm)} did not send within the deadline{claim}"
        )

    # -- phases, failure, end -----------------------------------------------------------------

    def enter_phase(self, label: str | None) -> None:
        """Tell every peer this party entered phase ``label`` (restarts this party's deadline only)."""
        super().enter_phase(label)
        with self._cond:
            self._progress = now()
        self._broadcast(STATUS, {"phase": _short(label), "waiting": None})

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


__all__ = [
    "CONTROL_CAP",
    "CONTROL_QUEUE_CAP",
    "DATA_BUDGET_FACTOR",
    "DATA_BUDGET_FLOOR",
    "DATA_PREFIX",
    "LINK_ID_BYTES",
    "MAX_LABEL_CHARS",
    "MAX_REASON_CHARS",
    "SocketChannel",
    "link_id",
    "parse_abort",
    "parse_status",
]
