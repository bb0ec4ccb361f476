"""Agree the settings a secure sum needs every party to share, before any input leaves a party.

Two parties whose backends encode with different fixed-point scales still
complete a secure sum, but the result is silently wrong (with ``frac_bits``
20 and 30 the receiver decodes ``[2, 4, 6]`` as ``[1024.001, 2048.002,
3072.003]``). :func:`agree_sum_settings` runs once per group (receiver and
contributor set) and run, before the group's first sum:

1. every contributor other than the receiver sends the receiver its
   :meth:`~protocols.backends.base.SecureSumBackend.settings`;
2. the receiver compares each with its own; on a difference it raises
   :class:`~protocols.errors.InputValidationError` naming both parties and
   both values, and sends nothing, so every contributor stops too;
3. otherwise it sends every contributor the full table, and each contributor
   checks it against its own settings before it sends anything that depends
   on its input.

Cost: one small message each way per contributor, once per group and run
(one extra round). The deployments (:mod:`mpc_pca.deploy`) agree the same
settings in their announcements instead; the protocols of this package build
one backend for all parties and call the backend directly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from protocols.backends.base import SecureSumBackend
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party

#: ``party.context`` key prefix of the groups whose settings this party has agreed in this run.
_AGREED = "sum-settings|"


def agree_sum_settings(
    party: Party, backend: SecureSumBackend, contributors: Sequence[str], receiver: str
) -> None:
    """Check that every party of the group uses the same backend settings (module notes).

    Parameters
    ----------
    party : Party
        The calling party (a contributor or the receiver).
    backend : SecureSumBackend
        This party's backend; its :meth:`settings` are compared.
    contributors : sequence of str
        The group's contributors (any order).
    receiver : str
        The party that learns the sum.

    Raises
    ------
    InputValidationError
        Naming both parties and both values of the first setting that differs.
    ProtocolError
        If the receiver's table is malformed or leaves out a contributor.
    """
    group = tuple(sorted(contributors))
    key = _AGREED + receiver + "|" + "|".join(group)
    if party.context.get(key):
        return
    own = backend.settings()
    others = [c for c in group if c != receiver]
    if party.name == receiver:
        table = {receiver: own}
        for sender in others:
            theirs = party.recv(sender)
            _compare(receiver, own, sender, theirs)
            table[sender] = theirs
        for member in others:
            party.send(member, table)
    else:
        party.send(receiver, own)
        table = party.recv(receiver)
        if not isinstance(table, dict) or set(table) != {receiver, *others}:
            raise ProtocolError(f"{party.name!r} got a malformed settings table from {receiver!r}")
        for member, theirs in table.items():
            _compare(party.name, own, member, theirs)
    party.context[key] = True


def _compare(me: str, own: Mapping[str, Any], other: str, theirs: object) -> None:
    """Raise, naming both parties and values, if ``theirs`` differs from ``own``."""
    if not isinstance(theirs, dict):
        raise ProtocolError(f"{other!r} sent {me!r} malformed secure-sum settings: {theirs!r}")
    for name in sorted(set(own) | set(theirs)):
        if own.get(name) != theirs.get(name):
            raise InputValidationError(
                f"the secure-sum setting {name} differs: {me!r} uses {own.get(name)!r}, {other!r} uses "
                f"{theirs.get(name)!r}; every party of a sum must use the same (nothing was summed)"
            )
