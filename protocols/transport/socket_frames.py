"""The frames of the socket transport: kinds, bounds, the data frames' prefix and the control frames' schemas.

Used by :class:`~protocols.transport.socket_channel.SocketChannel` (the
channel API) and :class:`~protocols.transport.socket_receiving.FrameReceiver`
(its reader threads).

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

Control frames
    ``STATUS`` and ``ABORT`` payloads have typed schemas (:func:`parse_status`,
    :func:`parse_abort`): exact keys, ``str`` or ``None`` values, a
    ``waiting`` that names a party of the run, lengths bounded by
    :data:`MAX_LABEL_CHARS` and :data:`MAX_REASON_CHARS`. Any other shape
    ends the link with a ``ProtocolError`` naming the sender; an unexpected
    exception in a reader thread does too, so no frame can leave a party
    waiting on a dead reader.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Collection
from typing import Any

from protocols.errors import ProtocolError, WireFormatError
from protocols.transport.wire import decode_message

DATA, CONTROL, ABORT, STATUS, BYE = 1, 2, 3, 4, 5
KINDS = {DATA: "data", CONTROL: "control", ABORT: "abort", STATUS: "status", BYE: "bye"}
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


def short_label(label: str | None) -> str | None:
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


__all__ = [
    "ABORT",
    "BYE",
    "CONTROL",
    "CONTROL_CAP",
    "CONTROL_QUEUE_CAP",
    "DATA",
    "DATA_BUDGET_FACTOR",
    "DATA_BUDGET_FLOOR",
    "DATA_PREFIX",
    "KINDS",
    "LINK_ID_BYTES",
    "MAX_LABEL_CHARS",
    "MAX_REASON_CHARS",
    "STATUS",
    "link_id",
    "parse_abort",
    "parse_status",
    "short_label",
]
