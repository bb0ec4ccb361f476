"""The final confirmation round of a run over the socket transport: all-or-nothing outputs.

A party's role returning is not enough for it to keep its result: another
party may still fail (a provider killed while it sends its projected rows,
say), and then the run has failed for everyone. So every run ends with one
more round (:meth:`~protocols.transport.socket_channel.SocketChannel.close`):

1. A party whose role returned and that holds no unread data frame sends
   ``BYE`` (its confirmation: *finished*) to every peer.
2. It then waits for the ``BYE`` of every peer that is not excused
   (a provider dropped by a dropout-tolerant sum,
   :meth:`~protocols.transport.base.Channel.drop`, is never awaited).
3. Only with all of them does the close return, and only then does the
   caller (:func:`protocols.runtime.network.run_role`, and
   :func:`mpc_pca.deploy.run_party` after it) write its output and exit 0.
   A peer whose link fails or that reports a failure before its ``BYE``
   arrived, or that sends no ``BYE`` within the phase deadline, makes this
   party raise an error naming that peer (exit status 4): it writes nothing.

*Finished* means: the party's role returned without error and it read every
data frame it was sent, so it sent its confirmation. A party that dies after
sending its confirmation to some peers has finished; those peers may write
while the others (and the dead party itself) do not. No protocol can close
that gap (whoever sends the last message cannot know it arrived); what holds
is that no party writes an output of a run that did not complete at every
party.

Cost: one round; ``W - 1`` frames per party, ``W (W - 1)`` in all, each
:data:`CONFIRMATION_FRAME_BYTES` bytes before TLS (a 9-byte frame header and
an empty wire-format mapping), not metered in the traffic reports (control
frames never are). The round adds at most one one-way link delay to the
slowest party's end.

Nothing here imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from protocols.errors import PeerFailureError, PeerTimeoutError
from protocols.transport.base import now
from protocols.transport.links import HEADER
from protocols.transport.wire import encode_message

if TYPE_CHECKING:
    from protocols.transport.socket_channel import SocketChannel

#: The confirmation's payload: the frame kind ``BYE`` says it all.
CONFIRMATION_PAYLOAD = encode_message({})
#: Bytes of one confirmation frame on a link, before TLS record overhead.
CONFIRMATION_FRAME_BYTES = HEADER.size + len(CONFIRMATION_PAYLOAD)


@dataclass(frozen=True)
class ConfirmationCost:
    """What this party's confirmation round cost: frames and bytes it sent and received, and the wait."""

    sent: int
    received: int
    seconds: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "rounds": 1,
            "messages_sent": self.sent,
            "messages_received": self.received,
            "bytes_sent": self.sent * CONFIRMATION_FRAME_BYTES,
            "bytes_received": self.received * CONFIRMATION_FRAME_BYTES,
            "seconds": self.seconds,
        }


def send_confirmations(channel: SocketChannel, bye: int) -> int:
    """Send ``BYE`` (frame kind ``bye``) to every peer whose link is still up; return how many left."""
    sent = 0
    for peer in channel.peers:
        if peer in channel._failed:
            continue
        try:
            channel.streams[peer].send_parts(
                [HEADER.pack(bye, len(CONFIRMATION_PAYLOAD)), CONFIRMATION_PAYLOAD]
            )
        except (OSError, ValueError):
            continue  # its link just failed: the wait below names it
        sent += 1
    return sent


def await_confirmations(channel: SocketChannel, limit: float, sent: int) -> ConfirmationCost:
    """Wait for the ``BYE`` of every peer that is not excused; raise naming the first that cannot send it.

    The deadline is ``limit`` seconds after the start of the wait or after
    the last confirmation that arrived, whichever is later; once more
    ``limit`` if a missing peer says it waits for another party (so that its
    report of that party's failure, naming it, can arrive first).

    Raises
    ------
    PeerFailureError
        A peer's link failed (first-hand: its process ended) or it reported
        a failure before its confirmation arrived; the message names it.
    PeerTimeoutError
        A peer sent no confirmation within the deadline; the message names
        every such peer and quotes what each last said it was doing.
    """
    start = now()
    progress = start
    grace = 0.0
    with channel._cond:
        seen = len(channel._bye)
        while True:
            missing = [p for p in channel.peers if p not in channel._bye and p not in channel.excused]
            if not missing:
                return ConfirmationCost(sent, len(channel._bye), now() - start)
            _raise_if_failed(channel, missing)
            if len(channel._bye) != seen:
                seen, progress, grace = len(channel._bye), now(), 0.0
            t = now()
            if t >= progress + limit + grace:
                if grace or not any(channel._claims_to_wait(p) for p in missing):
                    raise PeerTimeoutError(_late(channel, missing, limit + grace))
                # A missing peer says it waits for another party: one more deadline for it to report
                # that failure (quoted when it comes), as a receive gives (SocketChannel._wait_for).
                grace = limit
            channel._cond.wait(min(0.5, max(0.01, progress + limit + grace - t)))


def _raise_if_failed(channel: SocketChannel, missing: list[str]) -> None:
    """Raise for a missing peer that failed: first one whose link closed without a word, then one that reported.

    A peer that ended without reporting anything is this party's first-hand
    finding (a killed process); a peer that reported a failure and then
    hung up is quoted (its report usually names the party it lost).
    """
    head = f"{channel.me!r} writes no result: the run did not finish at every party"
    for peer in missing:
        if peer in channel._failed and peer not in channel._aborts:
            exc = channel._failed[peer]
            raise type(exc)(f"{head}: {exc} before confirming that it finished")
    for peer in missing:
        if peer in channel._aborts:
            raise PeerFailureError(
                f"{head}: {channel.where(peer)} reported, before confirming that it finished: "
                f"{channel._aborts[peer]}"
            )


def _late(channel: SocketChannel, missing: list[str], limit: float) -> str:
    """The timeout message: every peer whose confirmation did not come, with its last claimed phase."""
    parts = []
    for peer in missing:
        status = channel._status[peer]
        claim = ""
        if status.get("phase") is not None:
            claim += f", says it is in phase {status['phase']!r}"
        if isinstance(status.get("waiting"), str):
            claim += f" and waits for {status['waiting']!r} (its claim, not checked)"
        parts.append(f"{channel.where(peer)}{claim}")
    return (
        f"{channel.me!r} writes no result: no confirmation that the run finished came within {limit:g} s "
        f"from {'; '.join(parts)}"
    )


__all__ = [
    "CONFIRMATION_FRAME_BYTES",
    "CONFIRMATION_PAYLOAD",
    "ConfirmationCost",
    "await_confirmations",
    "send_confirmations",
]
