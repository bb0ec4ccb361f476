"""The gloo channel: messages between parties over ``torch.distributed`` point-to-point sends.

Used only with the ``crypten`` backend (which requires ``insecure=True``): CrypTen's
own traffic runs on the same gloo process group and cannot be wrapped in TLS,
and gloo aborts a receiving process in C++ when a message is larger than the
posted receive, so a hostile peer can always crash it. Every other run uses
:mod:`protocols.transport.socket_channel`. The rendezvous is in
:mod:`protocols.transport.torch_store`.

Messages
    :class:`TorchChannel` sends every serialised message
    (:mod:`protocols.transport.wire`: arrays as dtype + shape + raw bytes,
    never pickles) to the peer's rank as uint8 tensors. A message is written
    once into a buffer holding its 8-byte length and then the payload; the
    first ``frame_bytes`` (1 MiB by default) of that buffer go as one gloo
    message and, only for a longer payload, the rest as a second one. gloo
    lets a message fill part of the receive buffer, so the receiver posts one
    frame-sized receive and learns the length from it: small messages cost a
    single gloo message. Byte, message and round metering counts the payload,
    exactly as the in-process transport does, so both report the same numbers
    for the same protocol.

    A gloo send completes only when the peer has posted the matching receive,
    so sends are posted asynchronously and never block the sender, as with
    in-process queues; a background thread, handed the posted sends in
    batches (every 32 MiB, and at the end of the role), waits for their
    completion (at most ``timeout`` seconds each) and frees their buffers. Each party keeps one first-frame
    receive posted per peer, so a sender's data goes out at once. Channel
    messages use their own tag (:data:`CHANNEL_TAG`), so other point-to-point
    traffic on the same process group is never mistaken for them. Every
    receive waits at most ``timeout`` seconds.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.distributed as dist

from protocols.errors import (
    InputValidationError,
    PeerFailureError,
    PeerTimeoutError,
    ProtocolError,
    WireFormatError,
)
from protocols.transport.base import Channel
from protocols.transport.ranks import check_ranks
from protocols.transport.wire import encode_message_parts

if TYPE_CHECKING:
    from protocols.transport.torch_store import Rendezvous

#: Largest payload a receiver accepts (bytes); a header announcing more is rejected.
DEFAULT_MAX_MESSAGE_BYTES = 1 << 34
#: Size of a message's first gloo frame: an 8-byte length, then up to this much payload.
DEFAULT_FRAME_BYTES = 1 << 20
_LENGTH_BYTES = 8
#: Point-to-point tag of channel messages on the default group; other code must not use it.
CHANNEL_TAG = 0x6D7063
# Posted sends are handed to the completion thread once they hold this much memory.
_BACKLOG_BYTES = 32 << 20
_BACKLOG_MESSAGES = 256


def _new_buffer(nbytes: int) -> np.ndarray:
    """An uninitialised byte buffer from numpy's allocator.

    numpy (via malloc) reuses freed memory, whereas fresh zeroed or torch-allocated
    buffers of several MB are new pages that fault on first touch: on this kind of
    VM that costs more than the copy itself.
    """
    return np.empty(nbytes, dtype=np.uint8)


class _SendCompleter:
    """Background thread that waits for posted sends so that senders never block.

    Sends are handed over in batches (see :meth:`TorchChannel._post_send`):
    waking a thread per message costs more than a small message itself.
    """

    def __init__(self, channel: TorchChannel) -> None:
        self._channel = channel
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self.error: ProtocolError | None = None
        self._thread = threading.Thread(target=self._loop, name=f"sends-{channel.me}", daemon=True)
        self._thread.start()

    def submit(self, batch: list[tuple[str, list[Any], tuple[Any, ...]]]) -> None:
        self._queue.put(batch)

    def _loop(self) -> None:
        while True:
            batch = self._queue.get()
            if batch is None:
                return
            for peer, works, _keep_alive in batch:
                if self.error is not None:
                    break  # drain: the channel is failing anyway
                try:
                    for work in works:
                        work.wait(timedelta(seconds=self._channel.timeout))
                except RuntimeError as exc:
                    self.error = self._channel._link_error(peer, exc, "sending to")

    def finish(self, timeout: float) -> None:
        """Wait for every posted send (or the first failure)."""
        self._queue.put(None)
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise PeerTimeoutError(
                f"{self._channel.me!r}: sent messages were not all received within {timeout:g} s"
            )


class TorchChannel(Channel):
    """A :class:`~protocols.transport.base.Channel` over torch.distributed point-to-point messages.

    Parameters
    ----------
    me : str
        This party's name.
    ranks : mapping of str to int
        Every party's rank in the default process group.
    timeout : float
        Seconds a receive waits for a message, and a send for its receiver.
    rendezvous : Rendezvous, optional
        Store connection used to record and quote failure reasons.
    max_message_bytes : int
        Largest payload accepted from a peer.
    frame_bytes : int
        Capacity of a message's first gloo frame (length + start of the
        payload); every party of a run must use the same value.
    """

    #: Every received message lands in a buffer allocated for it alone.
    private_payloads = True

    def __init__(
        self,
        me: str,
        ranks: Mapping[str, int],
        timeout: float,
        *,
        rendezvous: Rendezvous | None = None,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
        frame_bytes: int = DEFAULT_FRAME_BYTES,
    ) -> None:
        table = check_ranks(ranks)
        if me not in table:
            raise InputValidationError(f"party {me!r} has no rank; ranks are {table}")
        if not dist.is_initialized():
            raise ProtocolError("torch.distributed is not initialised; call connect() first")
        if dist.get_rank() != table[me] or dist.get_world_size() != len(table):
            raise ProtocolError(
                f"{me!r} should be rank {table[me]} of {len(table)}, but the process group has "
                f"rank {dist.get_rank()} of {dist.get_world_size()}"
            )
        super().__init__(me, table, timeout)
        self.ranks = table
        self.rank = table[me]
        self.rendezvous = rendezvous
        self.max_message_bytes = int(max_message_bytes)
        if frame_bytes <= _LENGTH_BYTES:
            raise InputValidationError(f"frame_bytes={frame_bytes} must exceed {_LENGTH_BYTES}")
        self.frame_bytes = int(frame_bytes)
        self._sends: _SendCompleter | None = None
        self._backlog: list[tuple[str, list[Any], tuple[Any, ...]]] = []
        self._backlog_bytes = 0
        self._posted: dict[str, tuple[Any, torch.Tensor]] = {}
        # The default group's ProcessGroup: its send/recv are what dist.isend/irecv
        # call after argument checks that cost more than a small message.
        self._group: Any = dist.group.WORLD
        for peer in self.peers:
            self._post_frame(peer)

    def rank_of(self, name: str) -> int:
        """Global rank of party ``name``."""
        if name not in self.ranks:
            raise ProtocolError(f"no party named {name!r}; parties are {list(self.ranks)}")
        return self.ranks[name]

    def _raise_pending_error(self) -> None:
        if self._sends is not None and self._sends.error is not None:
            raise self._sends.error

    def send(self, to: str, obj: Any) -> None:
        """Serialise ``obj`` straight into one length-prefixed buffer and post it to ``to``.

        Same wire format and metering as :meth:`Channel.send`; the only copy of
        the data is the one into the buffer, which is what makes it safe for
        the caller to change its arrays as soon as this returns.
        """
        self._check_peer(to)
        parts = encode_message_parts(obj)
        size = sum(len(part) for part in parts)
        buffer = _new_buffer(_LENGTH_BYTES + size)
        out = buffer.data
        out[:_LENGTH_BYTES] = size.to_bytes(_LENGTH_BYTES, "little")
        pos = _LENGTH_BYTES
        small: list[bytes] = []  # runs of short header fields are joined before copying
        for part in parts:
            if isinstance(part, bytes) and len(part) <= 64:
                small.append(part)
                continue
            if small:
                head = b"".join(small)
                out[pos : pos + len(head)] = head
                pos += len(head)
                small = []
            out[pos : pos + len(part)] = part
            pos += len(part)
        if small:
            head = b"".join(small)
            out[pos : pos + len(head)] = head
        self._post_send(to, buffer)
        self.meter.record_send(to, size)

    def _send_bytes(self, to: str, payload: bytes) -> None:
        buffer = _new_buffer(_LENGTH_BYTES + len(payload))
        out = buffer.data
        out[:_LENGTH_BYTES] = len(payload).to_bytes(_LENGTH_BYTES, "little")
        out[_LENGTH_BYTES:] = payload
        self._post_send(to, buffer)

    def _post_send(self, to: str, buffer: np.ndarray) -> None:
        """Post ``buffer`` (length prefix + payload) as one or two gloo frames."""
        self._raise_pending_error()
        whole = torch.from_numpy(buffer)
        tensors = [whole[: self.frame_bytes]]
        if len(buffer) > self.frame_bytes:
            tensors.append(whole[self.frame_bytes :])
        dst = self.ranks[to]
        try:
            works = [self._group.send([tensor], dst, CHANNEL_TAG) for tensor in tensors]
        except RuntimeError as exc:
            raise self._link_error(to, exc, "sending to") from None
        self._backlog.append((to, works, (*tensors, whole, buffer)))
        self._backlog_bytes += len(buffer)
        if self._backlog_bytes > _BACKLOG_BYTES or len(self._backlog) >= _BACKLOG_MESSAGES:
            self._flush_sends()

    def _flush_sends(self) -> None:
        """Hand the posted sends to the completion thread, which frees them once delivered."""
        if not self._backlog:
            return
        if self._sends is None:
            self._sends = _SendCompleter(self)
        self._sends.submit(self._backlog)
        self._backlog, self._backlog_bytes = [], 0

    def _post_frame(self, peer: str) -> None:
        """Post the receive for ``peer``'s next first frame, before the peer sends it.

        gloo transfers a message only when both ends have posted it; a receive
        posted in advance lets the sender's data go out at once, without a
        round trip and a wake-up of the sending process per message.
        """
        frame = torch.from_numpy(_new_buffer(self.frame_bytes))
        try:
            work = self._group.recv([frame], self.ranks[peer], CHANNEL_TAG)
        except RuntimeError as exc:
            raise self._link_error(peer, exc, "receiving from") from None
        self._posted[peer] = (work, frame)

    def _recv_bytes(self, frm: str, timeout: float) -> memoryview:
        self._raise_pending_error()
        if frm not in self._posted:
            self._post_frame(frm)
        work, frame = self._posted.pop(frm)
        # gloo lets a message fill only part of the receive buffer, so one
        # frame-sized receive takes any first frame.
        self._wait(work, frm, timeout)
        head = frame.numpy()
        size = int.from_bytes(head[:_LENGTH_BYTES].tobytes(), "little")
        if not 0 < size <= self.max_message_bytes:
            raise WireFormatError(
                f"{frm!r} announced a message of {size} bytes; it must be between 1 and "
                f"{self.max_message_bytes} bytes"
            )
        first_len = min(size, self.frame_bytes - _LENGTH_BYTES)
        if size == first_len:
            payload = head.data[_LENGTH_BYTES : _LENGTH_BYTES + size]
        else:
            body = torch.from_numpy(_new_buffer(size))
            body[:first_len] = frame[_LENGTH_BYTES:]
            try:
                work = self._group.recv([body[first_len:]], self.ranks[frm], CHANNEL_TAG)
            except RuntimeError as exc:
                raise self._link_error(frm, exc, "receiving from") from None
            self._wait(work, frm, timeout)
            payload = body.numpy().data
        self._post_frame(frm)
        return payload

    def _wait(self, work: Any, peer: str, timeout: float) -> None:
        try:
            work.wait(timedelta(seconds=timeout))
        except RuntimeError as exc:
            if "timed out" in str(exc).lower():
                raise PeerTimeoutError(
                    f"{self.me!r} received nothing from {peer!r} (rank {self.ranks[peer]}) "
                    f"within {timeout:g} s"
                ) from None
            raise self._link_error(peer, exc, "receiving from") from None

    def _link_error(self, peer: str, exc: BaseException, doing: str) -> ProtocolError:
        """Turn a gloo error on the link to ``peer`` into a clear protocol error."""
        text = str(exc)
        where = f"{peer!r} (rank {self.ranks[peer]})"
        if "timed out" in text.lower() or "timeout" in text.lower():
            # gloo closes a link after any timeout on it, so later calls report the closure.
            return PeerTimeoutError(
                f"{self.me!r} timed out {doing} {where}: no response within {self.timeout:g} s"
            )
        reason = None if self.rendezvous is None else self.rendezvous.failure_reason(wait=1.0)
        detail = f"; the run failed: {reason}" if reason else " (its process ended or closed the link)"
        return PeerFailureError(f"{self.me!r} lost the link to {where} while {doing} it{detail}")

    def abort(self, reason: str) -> None:
        """Record ``reason`` as this run's failure (if it is the first) for every other party."""
        if self.rendezvous is not None:
            self.rendezvous.record_failure(reason)

    def close(self) -> None:
        """Wait until every message this party sent has been received."""
        self._flush_sends()
        if self._sends is not None:
            self._sends.finish(self.timeout * 2)
            self._raise_pending_error()


__all__ = ["CHANNEL_TAG", "DEFAULT_FRAME_BYTES", "DEFAULT_MAX_MESSAGE_BYTES", "TorchChannel"]
