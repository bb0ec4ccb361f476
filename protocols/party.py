"""A protocol participant: a name, a channel, and per-run scratch state."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from protocols.transport.base import Channel, now

log = logging.getLogger("mpc_pca.protocol")
#: Log format of a phase start (INFO): party, phase label.
PHASE_STARTED = "%s: %s ..."
#: Log format of one step of an iterative phase (DEBUG): party, label, steps done, steps planned.
ITERATION = "%s: %s: iteration %d/%d"


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

    def iteration(self, label: str, done: int, total: int) -> None:
        """Report that ``done`` of at most ``total`` steps of an iterative phase are over.

        A DEBUG record on the ``mpc_pca.protocol`` logger (:data:`ITERATION`):
        nothing is sent, and a caller that does not watch that logger at DEBUG
        pays one level check. The command line shows it as a bar
        (``mpc_pca.cli.progress``). A loop that can stop early reports its
        planned maximum as ``total``.
        """
        log.debug(ITERATION, self.name, label, done, total)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        """Mark a protocol phase (e.g. ``"Gram secure sum"``).

        The channel is told (a networked channel announces it to the peers and
        restarts the phase deadline), and a log line gives the phase's
        elapsed time.
        """
        start = now()
        previous = getattr(self.channel, "phase_label", None)
        log.info(PHASE_STARTED, self.name, label)
        self.channel.enter_phase(label)
        yield
        log.info("%s: %s done in %.2f s", self.name, label, now() - start)
        self.channel.enter_phase(previous)
