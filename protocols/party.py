"""A protocol participant: a name, a channel, and per-run scratch state."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from protocols.transport.base import Channel, now

log = logging.getLogger("mpc_pca.protocol")


@dataclass
class Party:
    """One participant of a protocol run.

    Role functions receive a ``Party`` and talk to others only through it.

    Attributes
    ----------
    name : str
        The party's name, unique within a run (e.g. ``"provider0"``, ``"server"``).
    channel : Channel
        Transport endpoint; it meters bytes, messages and rounds.
    context : dict
        Scratch space that lives for one run, used by backends to cache
        per-run setup such as key-exchange results. Never shared between parties.
    """

    name: str
    channel: Channel
    context: dict[str, Any] = field(default_factory=dict)

    def send(self, to: str, obj: Any) -> None:
        """Send a message (see :mod:`protocols.transport.wire` for what may be sent)."""
        self.channel.send(to, obj)

    def recv(self, frm: str, timeout: float | None = None) -> Any:
        """Receive the next message from ``frm``."""
        return self.channel.recv(frm, timeout)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        """Mark a protocol phase (e.g. ``"Gram secure sum"``).

        The channel is told (a networked channel announces it to the peers and
        restarts the phase deadline), and a log line gives the phase's
        elapsed time.
        """
        start = now()
        previous = getattr(self.channel, "phase_label", None)
        log.info("%s: %s ...", self.name, label)
        self.channel.enter_phase(label)
        yield
        log.info("%s: %s done in %.2f s", self.name, label, now() - start)
        self.channel.enter_phase(previous)
