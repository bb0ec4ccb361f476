"""Agree the settings a secure sum needs every party to share, without an extra round.

Two parties whose backends encode with different fixed-point scales still
complete a secure sum, but the result is silently wrong (with ``frac_bits``
20 and 30 the receiver decodes ``[2, 4, 6]`` as ``[1024.001, 2048.002,
3072.003]``). :func:`agree_sum_settings` runs at the start of every sum of
the embeddable API (:func:`protocols.secure_sum.secure_sum`):

1. every contributor other than the receiver sends the receiver its
   :meth:`~protocols.backends.base.SecureSumBackend.settings` (backend name,
   which is the mode, ``frac_bits`` and the mode's options), then goes on with
   the sum at once: it waits for no answer;
2. the receiver reads every contributor's settings at its first receive of
   the sum (what it sends before, such as a Paillier public key, is not
   delayed), compares each with its own and, on a difference, raises
   :class:`~protocols.errors.InputValidationError` naming the setting, both
   parties and both values, and every party's value of it (so two
   contributors that disagree are both named), having read nothing else.

Nothing is revealed by a refused sum: the contributors may already have sent
the backend's first messages (share seeds, masked inputs, ciphertexts), each
of which reveals nothing on its own, and the receiver refuses before it reads
any of them, so no sum is formed or output. Contributors send their settings
before their first blocking receive, so a difference in mode (a different
message pattern) is caught too, never a deadlock.

Cost: one small message per contributor per sum (51 bytes in the wire
format for the default additive backend: the values only, the keys are the
backend's) and no added waiting: it goes out just ahead of the contributor's
first protocol message, and the receiver sends nothing. A dropout-tolerant
backend's receiver waits for the settings as for masked inputs (up to its
dropout deadline, once for all) and leaves a provider whose settings did not
come to the backend's dropout handling. The deployments
(:mod:`mpc_pca.deploy`) agree the same settings in their announcements and
call the backend directly, so they do not pay this again.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from protocols.backends.base import SecureSumBackend
from protocols.errors import InputValidationError, PeerDroppedError, PeerTimeoutError, ProtocolError
from protocols.party import Party
from protocols.transport.base import now

log = logging.getLogger("mpc_pca.protocol")


def agree_sum_settings(
    party: Party, backend: SecureSumBackend, contributors: Sequence[str], receiver: str
) -> Party:
    """Send (contributor) or arrange to check (receiver) the backend settings of one sum (module notes).

    Parameters
    ----------
    party : Party
        The calling party (a contributor or the receiver).
    backend : SecureSumBackend
        This party's backend; its :meth:`settings` are compared.
    contributors : sequence of str
        The sum's contributors (any order).
    receiver : str
        The party that learns the sum.

    Returns
    -------
    Party
        The party to run the sum with: ``party`` itself at a contributor; at the
        receiver, a view of it that checks every contributor's settings before
        its first receive (sends before it, such as a public key, are not
        delayed). Call :func:`settings_checked` on it before using the sum.

    Raises
    ------
    InputValidationError
        At the receiver (from its first receive): naming both parties and both
        values of the first setting that differs, and every party's value of it.
    ProtocolError
        At the receiver, if a contributor's settings message is malformed.
    """
    own = backend.settings()
    if party.name != receiver:
        party.send(receiver, _compact(own))  # = settings_message(backend)
        return party
    others = [c for c in sorted(contributors) if c != receiver]
    tolerant = own.get("dropout_threshold") is not None

    def check() -> None:
        deadline = None
        if tolerant:  # one deadline for all, as the dropout backend's own wait for masked inputs
            wait = getattr(backend, "dropout_timeout", None)
            deadline = now() + (party.channel.timeout / 2 if wait is None else float(wait))
        received: dict[str, Mapping[str, Any]] = {}
        for sender in others:
            theirs = _settings_from(party, sender, deadline, own)
            if theirs is not None:
                received[sender] = theirs
        for sender, theirs in received.items():
            _compare(receiver, own, sender, theirs, received)

    return _CheckedParty(party, check)


def settings_checked(party: Party) -> None:
    """Run the receiver's settings check now if the sum did not receive anything (e.g. one contributor)."""
    if isinstance(party, _CheckedParty):
        party.check_now()


class _CheckedParty(Party):
    """The receiver's party for one sum: the settings check runs before its first receive."""

    def __init__(self, inner: Party, check: Callable[[], None]) -> None:
        super().__init__(inner.name, inner.channel, inner.context)
        self._inner = inner
        self._pending: Callable[[], None] | None = check

    def check_now(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending()

    def send(self, to: str, obj: Any) -> None:
        self._inner.send(to, obj)

    def recv(self, frm: str, timeout: float | None = None) -> Any:
        self.check_now()
        return self._inner.recv(frm, timeout)

    def iteration(self, label: str, done: int, total: int) -> None:
        self._inner.iteration(label, done, total)

    @contextlib.contextmanager
    def phase(self, label: str) -> Iterator[None]:
        with self._inner.phase(label):
            yield


def settings_message(backend: SecureSumBackend) -> list[Any]:
    """The message a contributor sends the receiver at the start of a sum (module notes, step 1).

    Examples
    --------
    >>> from protocols import AdditiveBackend
    >>> settings_message(AdditiveBackend())
    ['additive', None, 20, None, None, None, None, 40]
    """
    return _compact(backend.settings())


def _compact(settings: Mapping[str, Any]) -> list[Any]:
    """The settings as sent: the backend name, then the other values in sorted-key order.

    The keys are the backend's, so the receiver (same backend name) knows them;
    values only keep the message short (about 60 bytes for the additive backend).
    """
    return [settings["backend"], *(settings[key] for key in _other_keys(settings))]


def _other_keys(settings: Mapping[str, Any]) -> list[str]:
    return sorted(key for key in settings if key != "backend")


def _settings_from(
    party: Party, sender: str, deadline: float | None, own: Mapping[str, Any]
) -> Mapping[str, Any] | None:
    """``sender``'s settings; ``None`` for a provider silent until ``deadline`` (dropout backends only)."""
    if deadline is None:
        message = party.recv(sender)
    else:  # a provider that left before its first message is the backend's dropout to handle
        try:
            with party.channel.tolerating([sender]):
                message = party.recv(sender, max(deadline - now(), 0.0))
        except (PeerDroppedError, PeerTimeoutError) as exc:
            log.info("%s: no settings from %s (%s); left to the dropout handling", party.name, sender, exc)
            return None
    if not isinstance(message, list) or not message or not isinstance(message[0], str):
        raise ProtocolError(f"{sender!r} sent {party.name!r} malformed secure-sum settings: {message!r:.200}")
    if message[0] != own["backend"]:  # another backend: its other fields are its own
        return {"backend": message[0]}
    keys = _other_keys(own)
    if len(message) != len(keys) + 1:
        raise ProtocolError(
            f"{sender!r} sent {party.name!r} {len(message) - 1} settings of backend {message[0]!r}, "
            f"expected {len(keys)} ({keys})"
        )
    return {"backend": message[0], **dict(zip(keys, message[1:], strict=True))}


def _compare(
    me: str,
    own: Mapping[str, Any],
    other: str,
    theirs: Mapping[str, Any],
    everyone: Mapping[str, Mapping[str, Any]],
) -> None:
    """Raise, naming both parties and values (and every party's value), if ``theirs`` differs."""
    for name in sorted(set(own) | set(theirs), key=lambda key: (key != "backend", key)):
        if own.get(name) != theirs.get(name):
            table = ", ".join(f"{p!r}: {s.get(name)!r}" for p, s in {me: own, **everyone}.items())
            raise InputValidationError(
                f"the secure-sum setting {name} differs: {me!r} uses {own.get(name)!r}, {other!r} uses "
                f"{theirs.get(name)!r} (every party's {name}: {table}); every party of a sum must use "
                "the same (nothing was summed)"
            )
