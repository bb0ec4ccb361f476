"""Run role functions as parties, each in its own thread, over in-memory queues.

This is the embedded default used by the estimators' ``fit`` and by the tests.
A role function takes a :class:`~protocols.party.Party` and returns that
party's output. If any role raises, the network is aborted so every other
party stops waiting at once, and the first *root cause* is re-raised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from protocols.errors import InputValidationError, PeerFailureError
from protocols.party import Party
from protocols.transport.base import Channel, now
from protocols.transport.inprocess import InProcessNetwork

Role = Callable[[Party], Any]
#: ``wrap(name, channel) -> channel``: lets a caller interpose on a party's channel.
ChannelWrapper = Callable[[str, Channel], Channel]


@dataclass
class PartyReport:
    """What one party sent, received and how long its role ran."""

    name: str
    bytes_sent: int
    bytes_received: int
    messages_sent: int
    messages_received: int
    rounds: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "bytes_sent": self.bytes_sent,
            "bytes_received": self.bytes_received,
            "messages_sent": self.messages_sent,
            "messages_received": self.messages_received,
            "rounds": self.rounds,
            "seconds": self.seconds,
        }


@dataclass
class RunResult:
    """Outputs and traffic reports of a protocol run, keyed by party name."""

    outputs: dict[str, Any]
    reports: dict[str, PartyReport]

    def report_dict(self) -> dict[str, dict[str, Any]]:
        """Per-party report as plain dicts (JSON-ready)."""
        return {name: rep.as_dict() for name, rep in self.reports.items()}


def make_report(party: Party, seconds: float) -> PartyReport:
    """Snapshot a party's traffic meter into a :class:`PartyReport`."""
    m = party.channel.meter
    return PartyReport(
        name=party.name,
        bytes_sent=m.bytes_sent,
        bytes_received=m.bytes_received,
        messages_sent=m.messages_sent,
        messages_received=m.messages_received,
        rounds=m.rounds,
        seconds=seconds,
    )


def check_timeout(timeout: object) -> float:
    """Validate a receive timeout: a positive, finite number of seconds."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf"):
        raise InputValidationError(
            f"timeout={timeout!r} is invalid; it must be a positive, finite number of seconds"
        )
    return float(timeout)


_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(text: str, name: str) -> float:
    """Seconds from ``90``, ``90s``, ``30m``, ``2h``, ``1.5h`` or ``1h30m`` (units s, m, h, d).

    Parameters
    ----------
    text : str
        The duration.
    name : str
        The setting it is for (e.g. ``join_window``), for messages.

    Raises
    ------
    InputValidationError
        Naming ``name`` and the value, unless it is a positive, finite duration.
    """
    import re

    value = text.strip().lower().replace(" ", "")
    parts = re.findall(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", value)
    if (
        not value
        or "".join(number + unit for number, unit in parts) != value
        or (len(parts) > 1 and not all(unit for _, unit in parts))
    ):
        raise InputValidationError(
            f"{name} {text!r} is not a duration; give seconds (90) or a number with a unit: 90s, 30m, 2h, 1h30m"
        )
    seconds = sum(float(number) * _UNITS[unit or "s"] for number, unit in parts)
    if not 0 < seconds < float("inf"):
        raise InputValidationError(f"{name} {text!r} is not a positive duration")
    return seconds


def run_inprocess(
    roles: Mapping[str, Role], *, timeout: float = 120.0, wrap_channel: ChannelWrapper | None = None
) -> RunResult:
    """Run each role in its own thread and collect outputs and reports.

    Parameters
    ----------
    roles : mapping of str to callable
        Party name to role function ``f(party) -> output``.
    timeout : float, default=120
        Receive timeout for every party, in seconds.
    wrap_channel : callable, optional
        ``wrap_channel(name, channel)`` returns the channel party ``name`` uses
        instead of ``channel`` (e.g. :class:`protocols.testing.recording.Recorder`
        records every message, a fault injector corrupts them). The wrapper
        belongs to the caller; nothing is kept between runs.

    Returns
    -------
    RunResult

    Raises
    ------
    Exception
        The first exception raised by a role that is not merely a reaction to
        another party's failure; the others are attached as ``__notes__``.
    """
    check_timeout(timeout)
    network = InProcessNetwork(roles.keys(), timeout=timeout)
    channels: dict[str, Channel] = {name: network.channel(name) for name in roles}
    if wrap_channel is not None:
        channels = {name: wrap_channel(name, channel) for name, channel in channels.items()}
    parties = {name: Party(name, channels[name]) for name in roles}
    outputs: dict[str, Any] = {}
    seconds: dict[str, float] = {}
    errors: dict[str, BaseException] = {}
    lock = threading.Lock()

    def target(name: str) -> None:
        start = now()
        try:
            result = roles[name](parties[name])
        except BaseException as exc:
            with lock:
                errors[name] = exc
            network.abort(f"party {name!r} failed: {type(exc).__name__}: {exc}")
            return
        finally:
            seconds[name] = now() - start
        with lock:
            outputs[name] = result

    threads = [threading.Thread(target=target, args=(name,), name=f"party-{name}") for name in roles]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        roots = [e for e in errors.values() if not isinstance(e, PeerFailureError)]
        first = roots[0] if roots else next(iter(errors.values()))
        for name, exc in errors.items():
            if exc is not first and hasattr(first, "add_note"):
                first.add_note(f"party {name!r} also failed: {type(exc).__name__}: {exc}")
        raise first
    reports = {name: make_report(parties[name], seconds[name]) for name in roles}
    return RunResult(outputs=outputs, reports=reports)
