"""Record (and optionally corrupt) every message of an in-process run.

:class:`Recorder` interposes on each party's channel through the
``wrap_channel`` hook of :func:`protocols.runtime.run_inprocess`. Every
message is recorded when it is *sent*, as a deep copy of the object handed to
the channel (so later in-place arithmetic by the sender cannot alter the
record, and a message nobody ever reads still counts as delivered: it sits in
its receiver's queue). A party's *view* is what was delivered to it, keyed by
``(sender, index)`` where ``index`` counts the messages from that sender to it;
this key does not depend on thread scheduling, so views of two runs line up
slot by slot.

Faults are injected per party: ``faults={"p0": garbage}`` replaces every
message ``p0`` sends by what ``garbage(to, message)`` returns, and the record
holds what was actually delivered. Nothing here is global; a recorder belongs
to the run that uses it.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protocols.party import Party
from protocols.runtime import Role, RunResult, run_inprocess
from protocols.transport.base import Channel, WrappedChannel

#: ``fault(to, message) -> message`` applied to every message a faulty party sends.
Fault = Callable[[str, Any], Any]


@dataclass(frozen=True)
class Delivery:
    """One message, as delivered.

    Attributes
    ----------
    sender, receiver : str
        Who sent it to whom.
    index : int
        Its position among the messages ``sender`` sent to ``receiver`` (from 0).
    message : object
        A deep copy of what was sent (after any injected fault).
    """

    sender: str
    receiver: str
    index: int
    message: Any


class RecordingChannel(WrappedChannel):
    """A channel that records each sent message in a :class:`Recorder`, then sends it.

    Receiving, the traffic meter, the timeouts and the dropout state are the wrapped channel's.
    """

    def __init__(self, inner: Channel, recorder: Recorder, fault: Fault | None = None) -> None:
        super().__init__(inner)
        self._recorder = recorder
        self._fault = fault

    def send(self, to: str, obj: Any) -> None:
        if self._fault is not None:
            obj = self._fault(to, obj)
        self._recorder._record(self.me, to, obj)
        self._inner.send(to, obj)

    def disconnect(self) -> None:
        """Leave the run (the wrapped channel must support it, as the in-process one does)."""
        self._inner.disconnect()  # type: ignore[attr-defined]


class Recorder:
    """Collects every message of one run; pass :meth:`wrap` as ``wrap_channel``.

    Parameters
    ----------
    faults : mapping of str to callable, optional
        Party name to a :data:`Fault` applied to each message that party sends.

    Examples
    --------
    >>> from protocols.runtime import run_inprocess
    >>> rec = Recorder()
    >>> run = run_inprocess({"a": lambda p: p.send("b", b"hi"), "b": lambda p: p.recv("a")},
    ...                     wrap_channel=rec.wrap)
    >>> [(d.sender, d.index, d.message) for d in rec.received_by("b")]
    [('a', 0, b'hi')]
    """

    def __init__(self, faults: Mapping[str, Fault] | None = None) -> None:
        self.faults = dict(faults or {})
        self.deliveries: list[Delivery] = []
        self._counts: dict[tuple[str, str], int] = {}
        self._lock = threading.Lock()

    def wrap(self, name: str, channel: Channel) -> RecordingChannel:
        """The ``wrap_channel`` hook: party ``name`` sends through a recording channel."""
        return RecordingChannel(channel, self, self.faults.get(name))

    def _record(self, sender: str, receiver: str, message: Any) -> None:
        snapshot = copy.deepcopy(message)
        with self._lock:
            index = self._counts.get((sender, receiver), 0)
            self._counts[(sender, receiver)] = index + 1
            self.deliveries.append(Delivery(sender, receiver, index, snapshot))

    def sent_by(self, name: str) -> list[Delivery]:
        """Every message ``name`` sent, in the order it sent them."""
        with self._lock:
            return [d for d in self.deliveries if d.sender == name]

    def received_by(self, name: str) -> list[Delivery]:
        """Every message delivered to ``name``, ordered by ``(sender, index)``."""
        with self._lock:
            mine = [d for d in self.deliveries if d.receiver == name]
        return sorted(mine, key=lambda d: (d.sender, d.index))

    def view(self, name: str) -> dict[tuple[str, int], Any]:
        """Party ``name``'s view: ``{(sender, index): message}``."""
        return {(d.sender, d.index): d.message for d in self.received_by(name)}


@dataclass
class RecordedRun:
    """Outcome of :func:`run_recorded`: every party's output or exception, and the messages.

    Attributes
    ----------
    outputs : dict
        Party name to what its role returned (parties that raised are absent).
    errors : dict
        Party name to the exception its role raised.
    recorder : Recorder
        Every message of the run.
    result : RunResult or None
        The runtime's result when no party raised.
    """

    outputs: dict[str, Any]
    errors: dict[str, BaseException]
    recorder: Recorder
    result: RunResult | None = field(default=None)

    @property
    def failed(self) -> bool:
        return bool(self.errors)


def run_recorded(
    roles: Mapping[str, Role], *, timeout: float = 60.0, faults: Mapping[str, Fault] | None = None
) -> RecordedRun:
    """Run role functions in-process, recording every message; never raises a role's exception.

    Parameters
    ----------
    roles : mapping of str to callable
        As for :func:`protocols.runtime.run_inprocess`.
    timeout : float
        Receive timeout of every party.
    faults : mapping of str to callable, optional
        Messages of these parties are replaced as :class:`Recorder` describes.

    Returns
    -------
    RecordedRun
        Each party's output or exception (a role's exception is captured, not
        re-raised), and the recorder.
    """
    recorder = Recorder(faults)
    outputs: dict[str, Any] = {}
    errors: dict[str, BaseException] = {}
    lock = threading.Lock()

    def capture(name: str, role: Role) -> Role:
        def run(party: Party) -> Any:
            try:
                out = role(party)
            except BaseException as exc:
                with lock:
                    errors[name] = exc
                raise
            with lock:
                outputs[name] = out
            return out

        return run

    try:
        result: RunResult | None = run_inprocess(
            {name: capture(name, role) for name, role in roles.items()},
            timeout=timeout,
            wrap_channel=recorder.wrap,
        )
    except BaseException:
        result = None
    return RecordedRun(outputs=outputs, errors=errors, recorder=recorder, result=result)


# -- faults ---------------------------------------------------------------------------


def garbage(to: str, message: Any) -> Any:
    """A fault: every message becomes the string ``"garbage"``."""
    return "garbage"


def only_nth(fault: Fault, n: int) -> Fault:
    """A fault applied to a party's ``n``-th sent message only (from 0); the rest go through."""
    count = [0]
    lock = threading.Lock()

    def apply(to: str, message: Any) -> Any:
        with lock:
            index = count[0]
            count[0] += 1
        return fault(to, message) if index == n else message

    return apply


def mangle(to: str, message: Any) -> Any:
    """A fault: every message keeps its type but not its form.

    Arrays lose their last entry (a 0-d array becomes shape ``(0,)``), bytes
    lose their last byte, dicts lose their first key (in sorted order), lists
    gain an entry; anything else becomes ``"garbage"``.
    """
    if isinstance(message, np.ndarray):
        flat = message.reshape(-1)
        return flat[:-1].copy() if flat.size else np.zeros(1, dtype=message.dtype)
    if isinstance(message, (bytes, bytearray)):
        return bytes(message[:-1]) if message else b"\x00"
    if isinstance(message, dict):
        if not message:
            return {"garbage": 0}
        first = sorted(message, key=str)[0]
        return {k: v for k, v in message.items() if k != first}
    if isinstance(message, list):
        return [*message, 0]
    return "garbage"
