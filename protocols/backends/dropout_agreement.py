"""Survivor-set agreement of the dropout-tolerant secure sum (steps 3-4 of :mod:`protocols.backends.dropout`).

Bonawitz et al. (CCS 2017, §4, round 3 "ConsistencyCheck") make every
survivor confirm the survivor set before any share of a seed is revealed. This
module is that check, for this engine's authenticated direct links:

* :func:`check_dropout_threshold`: the threshold rule ``2 t > M`` (``M``
  providers at the start), so that two sets of at least ``t`` providers always
  share a member.
* :func:`check_announcement`: what a provider accepts from the receiver: a
  sorted survivor set ``U`` of at least ``t`` providers and, for every
  survivor, the providers it masked with (its own entry must be what it sent),
  such that the two-sided masks link all of ``U`` into one group
  (:func:`linked_groups`; otherwise a group's sum or a lone input is opened).
* :func:`confirm_survivors`: every provider that got an announcement sends
  every other provider still linked a digest of it, bound to the run (the
  per-run verification keys), the sum's number, the receiver and the sender;
  a survivor then needs the matching digest from **every** member of its
  ``U``. A missing, late or different digest aborts the sum
  (:class:`~protocols.errors.ProtocolError` naming the receiver as the source
  of the disagreement and the member whose digest is missing): it is never
  taken for a dropout. A different digest from a provider outside ``U``
  aborts too.

Why this stops an equivocating receiver (the argument of
``docs/explanation/dropout.md``): an honest provider reveals shares only for
an announcement ``A`` confirmed by all of ``A``'s survivors, and an honest
provider confirms exactly one announcement per sum. Two announcements ``A !=
B`` both acted on would have survivor sets of at least ``t`` members each;
with ``2 t > M`` they share a member, which would have confirmed both. So every
honest provider that reveals anything acts on the same ``U``, and no provider
has both its self-mask seed (``u`` in ``U``) and its mask key (``u`` not in
``U``) revealed.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any

from protocols.errors import InputValidationError, PeerDroppedError, PeerTimeoutError, ProtocolError
from protocols.party import Party
from protocols.shamir import check_threshold
from protocols.transport.base import now

log = logging.getLogger("mpc_pca.protocol")

_DIGEST_DOMAIN = b"mpc-pca dropout survivor set v2\x00"


def check_dropout_threshold(threshold: object, n_providers: object) -> int:
    """Validate a dropout threshold ``t`` for ``M`` providers: ``2 <= t <= M`` and ``2 t > M``.

    With ``2 t <= M`` two disjoint groups of ``t`` providers exist; a receiver
    could then tell each group a different survivor set, both consistent
    inside the group, and collect the self-mask seed of a provider from one
    group and its mask key from the other.

    Raises
    ------
    InputValidationError
        Naming ``t``, ``M`` and the limit (the smallest allowed ``t``).

    Examples
    --------
    >>> check_dropout_threshold(3, 5)
    3
    >>> check_dropout_threshold(2, 4)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: dropout threshold t=2 is too small for M=4 providers: it must satisfy 2*t > M, i.e. t >= 3, so that no two disjoint groups of t providers exist (a receiver could tell each a different survivor set)
    """
    t, m = check_threshold(threshold, n_providers)
    if 2 * t <= m:
        raise InputValidationError(
            f"dropout threshold t={t} is too small for M={m} providers: it must satisfy 2*t > M, i.e. "
            f"t >= {m // 2 + 1}, so that no two disjoint groups of t providers exist (a receiver could "
            "tell each a different survivor set)"
        )
    return t


def linked_groups(peers: dict[str, list[str]], members: list[str]) -> list[list[str]]:
    """The connected groups of ``members`` linked by two-sided masks (``u`` lists ``v`` and ``v`` lists ``u``).

    Only two-sided masks cancel in the sum; one-sided ones are opened in step
    5. The receiver therefore learns the sum of each group separately, so the
    survivors must form one group: a survivor alone in its group would have its
    input opened. Largest group first (ties: by the first name).
    """
    left, groups = set(members), []
    while left:
        stack = [min(left)]
        group = set(stack)
        while stack:
            u = stack.pop()
            for v in peers.get(u, []):
                if v in left and v not in group and u in peers.get(v, []):
                    group.add(v)
                    stack.append(v)
        left -= group
        groups.append(sorted(group))
    return sorted(groups, key=lambda g: (-len(g), g[0]))


def one_sided(v: str, peers: dict[str, list[str]], survivors: list[str]) -> list[str]:
    """The providers ``w`` whose mask with survivor ``v`` stays in the survivors' sum.

    ``v`` masked with ``w`` and either ``w`` is not a survivor or ``w`` did not
    mask with ``v`` (its keys reached ``v`` but ``v``'s did not reach ``w``
    before ``w``'s deadline): the mask ``PRG(k_vw)`` is in ``y_v`` and in no
    other counted input, so the receiver must remove it.
    """
    return [w for w in peers[v] if w not in survivors or v not in peers[w]]


def run_tag(party: Party, parties: tuple[str, ...]) -> bytes:
    """A tag of this run: the hash of the parties' per-run verification keys (empty without identities)."""
    identity = party.channel.identity
    if identity is None:
        return b""
    keys = [identity.public if p == party.name else identity.peer_public(p) for p in sorted(parties)]
    return hashlib.sha256(b"".join(len(k).to_bytes(2, "big") + k for k in keys)).digest()


def survivor_digest(
    tag: bytes,
    sum_id: int,
    receiver: str,
    contributors: tuple[str, ...],
    announcement: dict[str, Any],
    sender: str,
) -> bytes:
    """SHA-256 of an announcement, bound to the run (``tag``), the sum, the receiver and the sender."""
    body = json.dumps(
        [sum_id, receiver, list(contributors), sender, announcement["survivors"], announcement["peers"]],
        sort_keys=True,
        separators=(",", ":"),
    )
    return hashlib.sha256(_DIGEST_DOMAIN + tag + body.encode()).digest()


def check_announcement(
    message: Any,
    me: str,
    receiver: str,
    contributors: tuple[str, ...],
    threshold: int,
    sum_id: int,
    my_peers: list[str] | None,
) -> dict[str, Any]:
    """Check the receiver's survivor set (step 3) as provider ``me``; return it.

    ``my_peers`` is the list of providers ``me`` masked with (``None`` if it
    sent no masked input). Refused: a malformed message, another sum's set, a
    set of fewer than ``threshold`` providers, or an entry for ``me`` that is
    not what ``me`` sent.

    Raises
    ------
    ProtocolError
        Naming the receiver.
    """
    if not isinstance(message, dict) or set(message) != {"sum", "survivors", "peers"}:
        raise ProtocolError(f"{receiver!r} sent a malformed survivor set")
    if message["sum"] != sum_id:
        raise ProtocolError(
            f"{receiver!r} sent the survivor set of sum {message['sum']!r}, not of sum {sum_id}"
        )
    survivors, peers = message["survivors"], message["peers"]
    if (
        not isinstance(survivors, list)
        or not all(isinstance(s, str) and s in contributors for s in survivors)
        or survivors != sorted(set(survivors))
    ):
        raise ProtocolError(f"{receiver!r} sent a survivor set that is not a sorted list of providers")
    if len(survivors) < threshold:
        raise ProtocolError(
            f"{receiver!r} announced {len(survivors)} survivors, below the threshold {threshold}; revealing nothing"
        )
    if not isinstance(peers, dict) or sorted(peers) != survivors:
        raise ProtocolError(f"{receiver!r} sent mask lists that are not one per survivor")
    for u, listed in peers.items():
        if (
            not isinstance(listed, list)
            or listed != sorted(set(listed))
            or not set(listed) <= set(contributors) - {u}
        ):
            raise ProtocolError(f"{receiver!r} sent a malformed mask list for {u!r}")
    groups = linked_groups(peers, survivors)
    if len(groups) > 1:
        raise ProtocolError(
            f"{receiver!r} announced survivors whose masks do not link them into one group ({groups}): "
            "the sum of each group, or a lone survivor's input, would be opened; revealing nothing"
        )
    if me in survivors and peers[me] != my_peers:
        raise ProtocolError(
            f"{receiver!r} announced that {me!r} masked with {peers[me]}, but {me!r} masked with {my_peers}; "
            "revealing nothing"
        )
    return {"sum": sum_id, "survivors": survivors, "peers": peers}


def confirm_survivors(
    party: Party,
    announcement: dict[str, Any],
    contributors: tuple[str, ...],
    receiver: str,
    sum_id: int,
    wait: float,
    late_keys: Any,
) -> None:
    """Step 4: exchange digests of the announcement with every provider; abort on any disagreement.

    Every provider still linked gets this provider's digest. A survivor
    (``party.name`` in ``U``) then waits up to ``wait`` seconds for the digest
    of every member of ``U`` (required) and of every other provider (optional:
    a closed link or the deadline is fine there). ``late_keys(peer, message)``
    is called with a step-1 message that arrives here instead of a digest (a
    provider whose keys came late); it returns True if it took the message.

    Raises
    ------
    ProtocolError
        Naming ``receiver`` as the source of the disagreement and the member of
        ``U`` whose digest is missing or different (or the outsider whose
        digest is different). Nothing has been revealed when it is raised.
    """
    me = party.name
    survivors = announcement["survivors"]
    tag = run_tag(party, (*contributors, receiver))
    others = [c for c in contributors if c != me]
    for peer in others:
        if not party.channel.peer_gone(peer):
            try:
                party.send(
                    peer, {"confirm": survivor_digest(tag, sum_id, receiver, contributors, announcement, me)}
                )
            except ProtocolError:
                if not party.channel.peer_gone(peer):
                    raise
    if me not in survivors:
        return
    deadline = now() + wait
    for peer in sorted(others, key=lambda p: p not in survivors):  # members first
        expected = survivor_digest(tag, sum_id, receiver, contributors, announcement, peer)
        required = peer in survivors
        theirs = _next_confirmation(party, peer, deadline, late_keys)
        if theirs is None and not required:
            continue
        if theirs is None:
            raise ProtocolError(
                f"{me!r}: {receiver!r} counted {peer!r} as a survivor, but {peer!r} did not confirm that "
                f"survivor set within {wait:.3g} s; {receiver!r} may have told {peer!r} a different set, so "
                f"{receiver!r} is the source of the disagreement and no share is revealed"
            )
        if theirs != expected:
            raise ProtocolError(
                f"{me!r}: {peer!r} confirmed a different survivor set than the one {receiver!r} told {me!r}: "
                f"{receiver!r} equivocated about who dropped, so no share is revealed"
            )


def _next_confirmation(party: Party, peer: str, deadline: float, late_keys: Any) -> bytes | None:
    """The digest ``peer`` sent (``None`` if its link closed or the deadline passed)."""
    while True:
        try:
            message = party.recv(peer, max(0.001, deadline - now()))
        except (PeerDroppedError, PeerTimeoutError) as exc:
            log.info("%s: no survivor-set confirmation from %s: %s", party.name, peer, exc)
            return None
        if late_keys(peer, message):
            continue
        if (
            not isinstance(message, dict)
            or set(message) != {"confirm"}
            or not isinstance(message["confirm"], bytes)
        ):
            raise ProtocolError(f"{peer!r} sent {party.name!r} a malformed survivor-set confirmation")
        return message["confirm"]
