"""Dropout-tolerant pairwise-mask secure sum: double masking with Shamir-shared seeds.

The ``masks`` mode of :class:`~protocols.backends.additive.AdditiveBackend`
with ``dropout_threshold=t``. Following the double-masking idea of Bonawitz et
al., "Practical Secure Aggregation for Privacy-Preserving Machine Learning"
(CCS 2017, §4, rounds 0-4), adapted to this engine's authenticated direct
links between providers (no share passes through the receiver). For one sum
of ``n`` providers ``U0`` and a receiver ``R`` (not a provider):

1. *Keys and shares* (one round). Provider ``u`` draws a fresh X25519 key
   pair ``(s_u, S_u)`` and a 32-byte self-mask seed ``b_u`` (:mod:`secrets`),
   Shamir-shares ``b_u`` and the private key ``s_u`` with threshold ``t``
   (:mod:`protocols.shamir`; share ``i`` goes to the ``i``-th provider in
   name order) and sends each other provider ``v`` its public key and its
   shares of ``b_u`` and ``s_u`` over the ``u``-``v`` link. ``R`` gets the
   public key only.
2. *Masked input.* ``u`` derives ``k_uv = HKDF(X25519(s_u, S_v))`` for every
   provider ``v`` whose keys and shares reached it, and sends ``R``
   ``y_u = x_u + PRG(b_u) + sum_v ±PRG(k_uv)`` (the smaller name adds, the
   larger subtracts) with the list of those ``v``.
3. *Survivors.* ``R`` waits for masked inputs until a deadline; a closed
   link or the deadline marks a provider as dropped. ``U`` is the largest
   group of the arrived inputs linked by two-sided masks
   (:func:`~protocols.backends.dropout_agreement.linked_groups`). Fewer than
   ``t``: :class:`~protocols.errors.DropoutError`, nothing revealed. Else
   ``R`` sends every provider the announcement: the sum's number, ``U`` and
   each survivor's mask list.
4. *Agreement* (:mod:`protocols.backends.dropout_agreement`). Each provider
   checks the announcement (at least ``t`` survivors, its own list as sent,
   one linked group) and sends every other provider a digest of it bound to
   the run, the sum and itself; a survivor needs the matching digest from
   every member of ``U`` (a missing, late or different one is a
   :class:`~protocols.errors.ProtocolError` naming ``R``, never a dropout).
   With ``2 t > M`` (enforced) this stops a receiver that equivocates.
5. *Unmasking.* Each ``v`` in ``U`` answers with its share of ``b_u`` for
   every ``u`` in ``U``, its share of ``s_u`` for every ``u`` not in ``U``
   (never both for one ``u``: refused,
   :func:`~protocols.backends.dropout_unmask.unmasking_response`) and the
   pair key of each of its one-sided masks
   (:func:`~protocols.backends.dropout_agreement.one_sided`). With at
   least ``t`` answers ``R`` rebuilds each ``b_u`` (``u`` in ``U``), removes
   ``PRG(b_u)`` and the one-sided masks, and gets ``sum_{u in U} x_u``.
   Fewer than ``t`` answers: :class:`~protocols.errors.DropoutError`.
   (Keys and unmasking: :mod:`protocols.backends.dropout_unmask`.)

A provider counted in ``U`` may leave after confirming ``U`` in step 4: its
``b_u`` comes from the others' shares; leaving before that aborts the sum.
Keys are fresh for every sum, so nothing revealed in one sum (a dropped
provider's ``s_u``) weakens another. What ``R`` can learn in
each case is in ``docs/explanation/dropout.md``.

Transport: the whole sum runs inside
:meth:`~protocols.transport.base.Channel.tolerating` over the providers, so
a provider's closed link or abort ends only the receives that wait for it;
``R`` :meth:`~protocols.transport.base.Channel.drop`-s the providers not in
``U`` for the rest of the run.
"""

from __future__ import annotations

import logging
import secrets
from dataclasses import dataclass
from typing import Any

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from numpy.typing import NDArray

from protocols.backends.dropout_agreement import (
    check_announcement,
    check_dropout_threshold,
    confirm_survivors,
    linked_groups,
    one_sided,
)
from protocols.backends.dropout_unmask import pair_key, raw_private, raw_public, unmask, unmasking_response
from protocols.errors import (
    DropoutError,
    InputValidationError,
    PeerDroppedError,
    PeerTimeoutError,
    ProtocolError,
)
from protocols.messages import expect_array
from protocols.party import Party
from protocols.prg import KEY_BYTES, RingPRG
from protocols.shamir import Share, split_bytes
from protocols.transport.base import now

log = logging.getLogger("mpc_pca.protocol")

_RING = np.uint64
#: ``party.context`` key: the number of dropout-tolerant sums this party took part in, per group.
_COUNTERS = "dropout-sum|counters"
#: ``party.context`` key: the :class:`DropoutOutcome` of each dropout-tolerant sum, in order.
OUTCOMES = "dropout-sum|outcomes"
#: ``party.context`` key: per sum, which secret of which provider this party revealed ("b" or "s").
_REVEALED = "dropout-sum|revealed"
_GONE = object()


@dataclass(frozen=True)
class DropoutOutcome:
    """Who counted in one dropout-tolerant secure sum, as this party saw it.

    Attributes
    ----------
    contributors : tuple of str
        The providers the sum was called with.
    survivors : tuple of str
        The providers whose inputs are in the sum (``U``); empty at a
        provider that was itself dropped before it learnt ``U``.
    me_dropped : bool
        True at a provider whose masked input did not count.
    """

    contributors: tuple[str, ...]
    survivors: tuple[str, ...]
    me_dropped: bool = False

    @property
    def dropped(self) -> tuple[str, ...]:
        """The providers whose inputs are not in the sum."""
        return tuple(c for c in self.contributors if c not in self.survivors)


def last_outcome(party: Party) -> DropoutOutcome | None:
    """The outcome of this party's last dropout-tolerant secure sum (``None`` if it made none)."""
    outcomes = party.context.get(OUTCOMES)
    return outcomes[-1] if outcomes else None


def check_dropout_settings(threshold: object, timeout: object) -> None:
    """Validate ``dropout_threshold`` (an int >= 2) and ``dropout_timeout`` (None or positive seconds)."""
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 2:
        raise InputValidationError(
            f"dropout_threshold must be an integer of at least 2 (a single share would reveal a seed), "
            f"got {threshold!r}"
        )
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < float("inf")
    ):
        raise InputValidationError(f"dropout_timeout must be a positive number of seconds, got {timeout!r}")


def _recv_or_gone(party: Party, peer: str, timeout: float | None = None) -> Any:
    """Receive from an excused ``peer``; :data:`_GONE` if its link closed or ``timeout`` passed."""
    try:
        return party.recv(peer, timeout)
    except (PeerDroppedError, PeerTimeoutError) as exc:
        log.info("%s: %s treated as dropped: %s", party.name, peer, exc)
        return _GONE


def _limit(party: Party, timeout: float | None) -> float:
    """The receiver's deadline for masked inputs (and again for answers)."""
    return party.channel.timeout / 2 if timeout is None else float(timeout)


def _send_or_gone(party: Party, peer: str, message: Any) -> bool:
    """Send to an excused ``peer``; False if its link is gone."""
    if party.channel.peer_gone(peer):
        return False
    try:
        party.send(peer, message)
    except ProtocolError:
        if not party.channel.peer_gone(peer):
            raise
        return False
    return True


def dropout_sum(
    party: Party,
    encoded: NDArray[np.uint64] | None,
    contributors: tuple[str, ...],
    receiver: str,
    threshold: int,
    timeout: float | None = None,
) -> NDArray[np.uint64] | None:
    """One dropout-tolerant secure sum in the ring (module docstring, steps 1-5).

    Parameters
    ----------
    party : Party
    encoded : ndarray of uint64 or None
        This provider's encoded input; ``None`` at the receiver.
    contributors : tuple of str
        The providers, sorted (share ``i`` goes to ``contributors[i]``).
    receiver : str
        The only party that learns the sum; not a provider.
    threshold : int
        ``t``: the least number of providers that must deliver masked inputs
        and the least number that must answer in the unmasking step.
    timeout : float, optional
        Seconds the receiver waits for masked inputs (and then for answers);
        default: half the channel's phase deadline.

    Returns
    -------
    ndarray of uint64 or None
        The ring sum of the survivors' inputs at the receiver, ``None``
        elsewhere. The outcome (who counted) is appended to
        ``party.context[OUTCOMES]`` at every party (:func:`last_outcome`).

    Raises
    ------
    DropoutError
        At the receiver, when fewer than ``threshold`` masked inputs arrive
        or fewer than ``threshold`` survivors answer; it names the dropped providers.
    ProtocolError
        A malformed message, an inconsistent survivor set, or a share that lies.
    """
    check_dropout_threshold(threshold, len(contributors))
    if receiver in contributors:
        raise InputValidationError(
            f"a dropout-tolerant secure sum needs a receiver that is not a provider; {receiver!r} is one"
        )
    counters = party.context.setdefault(_COUNTERS, {})
    group = (receiver, *contributors)
    sum_id = counters.get(group, 0)
    counters[group] = sum_id + 1
    peers = [c for c in contributors if c != party.name]
    with party.channel.tolerating(peers):
        if party.name == receiver:
            total, outcome = _receiver(party, contributors, threshold, timeout, sum_id)
        else:
            if encoded is None:
                raise InputValidationError(f"provider {party.name!r} must pass its encoded input")
            total, outcome = (
                None,
                _provider(party, encoded, contributors, receiver, threshold, timeout, sum_id),
            )
    party.context.setdefault(OUTCOMES, []).append(outcome)
    return total


# -- a provider ------------------------------------------------------------------------


def send_masked_input(party: Party, receiver: str, message: dict[str, Any]) -> None:
    """Step 2's send (its own function so a test can stop a provider right before it)."""
    party.send(receiver, message)


def _provider(
    party: Party,
    encoded: NDArray[np.uint64],
    contributors: tuple[str, ...],
    receiver: str,
    threshold: int,
    timeout: float | None,
    sum_id: int,
) -> DropoutOutcome:
    me = party.name
    n = len(contributors)
    private = X25519PrivateKey.generate()
    public = raw_public(private)
    self_seed = secrets.token_bytes(KEY_BYTES)
    b_shares = split_bytes(self_seed, n, threshold)
    s_shares = split_bytes(raw_private(private), n, threshold)
    index = {c: i for i, c in enumerate(contributors)}
    held: dict[str, dict[str, bytes]] = {
        me: {"b": b_shares[index[me]].to_bytes(), "s": s_shares[index[me]].to_bytes()}
    }
    # Step 1: keys and shares, to each provider over its own link; the receiver gets the key only.
    party.send(receiver, {"pk": public})
    for peer in contributors:
        if peer != me:
            message = {
                "pk": public,
                "b": b_shares[index[peer]].to_bytes(),
                "s": s_shares[index[peer]].to_bytes(),
            }
            _send_or_gone(party, peer, message)
    del b_shares, s_shares
    # Wait for the others' keys and shares for half of the receiver's deadline at most, so that
    # this provider's masked input still arrives in time when another provider hangs.
    deadline = now() + _limit(party, timeout) / 2
    publics: dict[str, bytes] = {}
    for peer in contributors:
        if peer == me:
            continue
        message = _recv_or_gone(party, peer, max(0.001, deadline - now()))
        if message is _GONE:
            continue
        if not isinstance(message, dict) or set(message) != {"pk", "b", "s"}:
            raise ProtocolError(f"{peer!r} sent {me!r} malformed keys and shares")
        for kind in ("b", "s"):
            Share.from_bytes(index[me] + 1, message[kind], sender=peer)  # checks the field
        if not isinstance(message["pk"], bytes) or len(message["pk"]) != 32:
            raise ProtocolError(f"{peer!r} sent {me!r} a malformed public key")
        publics[peer] = message["pk"]
        held[peer] = {"b": message["b"], "s": message["s"]}
    # Step 2: the double-masked input, with the providers it shares masks with.
    masked = encoded
    RingPRG(self_seed).accumulate(masked)
    pair_keys = {peer: pair_key(private, me, peer, peer_public) for peer, peer_public in publics.items()}
    for peer, key in pair_keys.items():
        RingPRG(key).accumulate(masked, subtract=me > peer)
    del private, self_seed
    mine = sorted(publics)
    send_masked_input(party, receiver, {"y": masked, "peers": mine})
    # Step 3: the survivor set, with every survivor's mask list.
    announcement = check_announcement(
        party.recv(receiver), me, receiver, contributors, threshold, sum_id, mine
    )
    survivors = announcement["survivors"]

    def late_keys(peer: str, message: Any) -> bool:
        """Keep the shares of a provider whose step-1 message came after this provider masked."""
        if peer in held or not isinstance(message, dict) or set(message) != {"pk", "b", "s"}:
            return False
        for kind in ("b", "s"):
            Share.from_bytes(index[me] + 1, message[kind], sender=peer)
        held[peer] = {"b": message["b"], "s": message["s"]}
        return True

    # Step 4: every survivor confirms the same announcement, or nothing is revealed.
    confirm_survivors(
        party, announcement, contributors, receiver, sum_id, _limit(party, timeout) / 2, late_keys
    )
    for u in contributors:
        if u not in survivors and u != me:
            party.channel.drop(u)  # out of the run for good, whether or not it is still there
    if me not in survivors:
        log.warning("%s: %s did not count this provider's input (dropped); revealing nothing", me, receiver)
        return DropoutOutcome(contributors, tuple(survivors), me_dropped=True)
    # Step 5: unmasking shares, and the pair keys of masks nobody else will cancel.
    revealed = party.context.setdefault(_REVEALED, {}).setdefault((receiver, contributors, sum_id), {})
    keys = {w: pair_keys[w] for w in one_sided(me, announcement["peers"], survivors)}
    party.send(receiver, unmasking_response(revealed, held, survivors, contributors, keys))
    return DropoutOutcome(contributors, tuple(survivors))


# -- the receiver ----------------------------------------------------------------------


def _receiver(
    party: Party, contributors: tuple[str, ...], threshold: int, timeout: float | None, sum_id: int
) -> tuple[NDArray[np.uint64], DropoutOutcome]:
    """Steps 1-5 at the receiver: the survivors' masked inputs, the announcement, the unmasked sum."""
    limit = _limit(party, timeout)
    deadline = now() + limit
    publics = _public_keys(party, contributors, deadline)
    inputs = _masked_inputs(party, contributors, publics, deadline)
    survivors, dropped = _survivors(party, contributors, inputs, threshold)
    peers = {u: sorted(set(inputs[u][1])) for u in survivors}
    announcement = {"sum": sum_id, "survivors": survivors, "peers": peers}
    for u in contributors:
        _send_or_gone(party, u, announcement)
    # Answers: shares of b_u for survivors, of s_u for the dropped, one-sided pair keys.
    deadline = now() + limit
    answers: dict[str, dict[str, dict[str, bytes]]] = {}
    for v in survivors:
        message = _recv_or_gone(party, v, max(0.001, deadline - now()))
        if message is _GONE:
            continue
        answers[v] = _check_answer(message, v, survivors, contributors, one_sided(v, peers, survivors))
    if len(answers) < threshold:
        silent = [v for v in survivors if v not in answers]
        raise DropoutError(
            f"only {len(answers)} of the {len(survivors)} surviving providers answered the unmasking step "
            f"(silent: {silent}; dropped before: {list(dropped)}), below the threshold {threshold}; fewer "
            "than threshold shares of any seed reveal nothing about it",
            (*dropped, *silent),
        )
    shape = inputs[survivors[-1]][0].shape if inputs else None
    total = np.zeros(shape or (0,), dtype=_RING)
    for u in survivors:
        total += inputs[u][0]
    unmask(total, answers, survivors, peers, publics, contributors, threshold)
    if dropped:
        log.warning("%s: the sum counts %s; dropped: %s", party.name, survivors, list(dropped))
    return total, DropoutOutcome(contributors, tuple(survivors))


def _public_keys(party: Party, contributors: tuple[str, ...], deadline: float) -> dict[str, bytes]:
    """Step 1 at the receiver: each provider's public key, until ``deadline`` (the rest count as dropped)."""
    publics: dict[str, bytes] = {}
    for u in contributors:
        message = _recv_or_gone(party, u, max(0.001, deadline - now()))
        if message is _GONE:
            continue
        if not isinstance(message, dict) or set(message) != {"pk"} or not isinstance(message["pk"], bytes):
            raise ProtocolError(f"{u!r} sent a malformed public key")
        publics[u] = message["pk"]
    return publics


def _masked_inputs(
    party: Party, contributors: tuple[str, ...], publics: dict[str, bytes], deadline: float
) -> dict[str, tuple[NDArray[np.uint64], list[str]]]:
    """Step 2 at the receiver: each masked input (all of one shape) with the providers it masked with."""
    inputs: dict[str, tuple[NDArray[np.uint64], list[str]]] = {}
    shape: tuple[int, ...] | None = None
    for u in publics:
        message = _recv_or_gone(party, u, max(0.001, deadline - now()))
        if message is _GONE:
            continue
        if not isinstance(message, dict) or set(message) != {"y", "peers"}:
            raise ProtocolError(f"{u!r} sent a malformed masked input")
        y = expect_array(message["y"], sender=u, shape=shape, dtype=_RING)
        masked_with = message["peers"]
        if not isinstance(masked_with, list) or not all(
            isinstance(v, str) and v in contributors and v != u for v in masked_with
        ):
            raise ProtocolError(f"{u!r} sent a malformed list of the providers it masked with")
        shape = y.shape
        inputs[u] = (y, masked_with)
    return inputs


def _survivors(
    party: Party,
    contributors: tuple[str, ...],
    inputs: dict[str, tuple[NDArray[np.uint64], list[str]]],
    threshold: int,
) -> tuple[list[str], tuple[str, ...]]:
    """Step 3: ``U`` and the dropped providers (dropped from the channel too); too few is a :class:`DropoutError`.

    Only the largest group linked by two-sided masks can count (:func:`linked_groups`).
    """
    linked = linked_groups({u: sorted(set(m)) for u, (_, m) in inputs.items()}, sorted(inputs))
    survivors = linked[0] if linked else []
    dropped = tuple(c for c in contributors if c not in survivors)
    if len(survivors) < threshold:
        raise DropoutError(
            f"only {len(survivors)} of {len(contributors)} providers' masked inputs reached {party.name!r} "
            f"(dropped: {list(dropped)}), below the threshold {threshold}; the sum is abandoned and no share "
            "was revealed",
            dropped,
        )
    for u in dropped:
        party.channel.drop(u)
    if len(survivors) < len(inputs):
        log.warning("%s: masked inputs of %s arrived but are not linked to the others' masks", party.name,
                    sorted(set(inputs) - set(survivors)))  # fmt: skip
    return survivors, dropped


def _check_answer(
    message: Any, sender: str, survivors: list[str], contributors: tuple[str, ...], one_sided_peers: list[str]
) -> dict[str, dict[str, bytes]]:
    if not isinstance(message, dict) or set(message) != {"b", "s", "k"}:
        raise ProtocolError(f"{sender!r} sent a malformed unmasking answer")
    if (
        not isinstance(message["k"], dict)
        or sorted(message["k"]) != sorted(one_sided_peers)
        or not all(isinstance(k, bytes) and len(k) == KEY_BYTES for k in message["k"].values())
    ):
        raise ProtocolError(f"{sender!r} answered with pair keys other than those of {one_sided_peers}")
    for kind, allowed in (("b", set(survivors)), ("s", set(contributors) - set(survivors))):
        part = message[kind]
        if not isinstance(part, dict) or not set(part) <= allowed:
            raise ProtocolError(
                f"{sender!r} answered with {kind!r} shares of {sorted(part) if isinstance(part, dict) else part!r}; "
                f"only {sorted(allowed)} were asked for"
            )
    return message
