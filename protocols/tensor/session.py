"""Who holds shares, who deals, and the per-party state of a secret-shared computation.

A :class:`TensorSession` is created by *every* member of the computation (the
``M >= 2`` share holders, the dealer and any observers that only receive
reveals), each in its own role function, with the same arguments. Operations
on :class:`~protocols.tensor.shared.SharedTensor` objects are collective calls
that every member makes in the same order, like
:func:`protocols.secure_sum.secure_sum`; a member with nothing to do in an
operation returns at once.

Setup (:meth:`TensorSession.start`, one round)
    * the dealer sends every holder a fresh 32-byte seed from :mod:`secrets`;
      holder ``i``'s share of every triple and truncation mask is the ChaCha20
      expansion of that seed under the nonce of the operation's number, so
      the dealer only ever sends the *last* holder explicit correction words
      (seed-compressed correlated randomness);
    * holder ``i`` sends holder ``i + 1 (mod M)`` a fresh seed; the two seeds a
      holder knows give it a share of zero, ``PRG(k_{i,i+1}) - PRG(k_{i-1,i})``,
      used to re-randomise shares before any reveal. The dealer never sees
      these seeds.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import numpy as np
from numpy.typing import NDArray

from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError, TripleReuseError
from protocols.messages import expect_seed
from protocols.party import Party
from protocols.prg import KEY_BYTES, RingPRG, nonce_for_counter

if TYPE_CHECKING:
    from protocols.tensor.engine import ProductEngine
    from protocols.tensor.offline_store import OfflineStore
    from protocols.tensor.shared import SharedTensor

Role = Literal["holder", "dealer", "observer"]
#: Who draws the eigensolvers' hiding rotations (:mod:`protocols.tensor.joint_rotation`).
Rotations = Literal["holder0", "every-holder"]
ROTATIONS: tuple[Rotations, ...] = ("holder0", "every-holder")
#: Where the correlated randomness comes from (:class:`TensorSession`'s ``randomness``).
Randomness = Literal["dealer", "providers"]
RANDOMNESS: tuple[Randomness, ...] = ("dealer", "providers")

#: Default fractional bits of shared tensors. A product of two values is held
#: with ``2 f`` fractional bits before truncation and must stay below ``2^62``
#: in magnitude, so real products must stay below ``2^(62 - 2 f)`` (16384 here).
DEFAULT_FRAC_BITS = 24


@dataclass
class TensorStats:
    """Counts of the collective operations this party took part in."""

    triples: int = 0
    truncations: int = 0
    openings: int = 0
    reveals: int = 0
    inputs: int = 0
    triple_words: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def bump(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1


class RandomnessLedger:
    """Numbers of the dealer's correlated-randomness items a party has used.

    Each triple or truncation pair is numbered by the operation counter that
    also keys its PRG stream; :meth:`consume` refuses a number twice, so a
    triple can never be used for two products (reuse would reveal the
    difference of two masked inputs).
    """

    def __init__(self) -> None:
        self._issued: set[int] = set()
        self._consumed: set[int] = set()
        #: What each issued number was, ``(kind, shapes, bits, mask)``: the request an offline phase
        #: must have made ahead of time (:class:`protocols.tensor.offline_store.Request`).
        self.requests: dict[int, tuple[str, tuple[tuple[int, ...], ...], int, int]] = {}

    def issue(
        self, ident: int, kind: str, shapes: tuple[tuple[int, ...], ...], bits: int = 0, mask: int = -1
    ) -> None:
        """Record number ``ident`` as issued, with what it is; a number is issued once."""
        if ident in self._issued:
            raise TripleReuseError(f"correlated randomness number {ident} was already issued")
        self._issued.add(ident)
        self.requests[ident] = (kind, tuple(tuple(int(n) for n in shape) for shape in shapes), bits, mask)

    def consume(self, ident: int) -> None:
        if ident not in self._issued:
            raise TripleReuseError(f"correlated randomness number {ident} was never issued")
        if ident in self._consumed:
            raise TripleReuseError(
                f"correlated randomness number {ident} was already used; triples are one-time"
            )
        self._consumed.add(ident)

    @property
    def consumed(self) -> int:
        return len(self._consumed)


def _check_offline(randomness: Randomness, role: Role, offline: OfflineStore | None) -> None:
    """An offline store exactly at the holders of a dealer-free session."""
    if randomness == "dealer" and offline is not None:
        raise InputValidationError(
            "randomness='dealer' takes no offline store; the dealer supplies the masks"
        )
    if randomness == "providers" and role == "holder" and offline is None:
        raise InputValidationError(
            "a holder of a session with randomness='providers' needs its offline store "
            "(protocols.tensor.offline_store.generate_offline, run before the data is read)"
        )
    if randomness == "providers" and role != "holder" and offline is not None:
        raise InputValidationError(f"only holders keep an offline store; this party is the {role}")


class TensorSession:
    """One party's view of a secret-shared fixed-point computation over Z_2^64.

    Parameters
    ----------
    party : Party
        The calling party.
    holders : sequence of str
        The ``M >= 2`` share holders, in the same order at every member.
    dealer : str
        The party that deals Beaver triples and truncation masks. It holds no
        shares and receives nothing from the holders except reveals addressed
        to it (re-randomised shares of the revealed value). With
        ``randomness="providers"`` it deals nothing: it is the output receiver
        the solvers report to.
    frac_bits : int, default=24
        Fractional bits ``f`` of the fixed-point encoding.
    observers : sequence of str, default=()
        Further parties that may be named as reveal receivers.
    rotations : {"holder0", "every-holder"}, default="holder0"
        Who draws the random rotations the tensor eigensolvers hide their
        reveals behind: holder 0 alone (it knows them), or every holder, the
        rotation being the product of theirs on shares so that no coalition
        short of all holders knows it (:mod:`protocols.tensor.joint_rotation`).
        Every member must pass the same value.
    randomness : {"dealer", "providers"}, default="dealer"
        Where the correlated randomness comes from: the dealer (seeds it
        shares with the holders), or an offline phase run by the holders
        among themselves (:mod:`protocols.tensor.offline_store`), so that no
        party but the holders together knows a mask. Every member must pass
        the same value.
    offline : OfflineStore, optional
        This holder's store (``randomness="providers"``; holders only).

    Notes
    -----
    Security: honest-but-curious parties; the dealer colludes with no holder.
    Any ``M - 1`` colluding holders see only uniformly random ring words (masked
    openings), so their view is independent of the data. A dealer colluding
    with one holder breaks privacy (it knows every mask).
    """

    def __init__(
        self,
        party: Party,
        *,
        holders: Sequence[str],
        dealer: str,
        frac_bits: int = DEFAULT_FRAC_BITS,
        observers: Sequence[str] = (),
        rotations: Rotations = "holder0",
        randomness: Randomness = "dealer",
        offline: OfflineStore | None = None,
    ) -> None:
        holders = tuple(holders)
        if rotations not in ROTATIONS:
            raise InputValidationError(f"rotations={rotations!r} is not one of {ROTATIONS}")
        if randomness not in RANDOMNESS:
            raise InputValidationError(f"randomness={randomness!r} is not one of {RANDOMNESS}")
        observers = tuple(observers)
        if len(holders) < 2:
            raise InputValidationError(f"a shared tensor needs at least 2 holders, got {len(holders)}")
        members = (*holders, dealer, *observers)
        if len(set(members)) != len(members):
            raise InputValidationError(f"holders, dealer and observers must be distinct names, got {members}")
        if party.name not in members:
            raise InputValidationError(f"{party.name!r} is not a member of this session ({members})")
        self.codec = FixedPointCodec(frac_bits)
        if self.codec.frac_bits > 28:
            raise InputValidationError(
                f"frac_bits={frac_bits} is too large for products: 2 f must stay below 58 bits"
            )
        self.party = party
        self.holders = holders
        self.dealer = dealer
        self.observers = observers
        self.rotations: Rotations = rotations
        #: Rotations made ahead of the data (:func:`protocols.tensor.joint_rotation.prepare_rotations`),
        #: by size; each is taken once.
        self.prepared_rotations: dict[int, list[SharedTensor]] = {}
        self.role: Role = (
            "holder" if party.name in holders else "dealer" if party.name == dealer else "observer"
        )
        self.index = holders.index(party.name) if self.role == "holder" else -1
        _check_offline(randomness, self.role, offline)
        self.randomness: Randomness = randomness
        #: This holder's dealer-free correlated randomness (``randomness="providers"``).
        self.offline = offline
        self.stats = TensorStats()
        self.ledger = RandomnessLedger()
        self._op = 0
        self._zero_counter = 0
        self._started = False
        self._dealer_seeds: list[bytes] = []
        self._my_seed = b""
        self._zero_next = b""
        self._zero_prev = b""
        #: Product engine: ``None`` is this package's own openings and Beaver
        #: products; :class:`protocols.tensor.crypten_engine.CrypTenTensorSession`
        #: installs CrypTen's (see :class:`protocols.tensor.engine.ProductEngine`).
        self.engine: ProductEngine | None = None

    # -- public properties -------------------------------------------------------

    @property
    def frac_bits(self) -> int:
        return self.codec.frac_bits

    @property
    def n_holders(self) -> int:
        return len(self.holders)

    @property
    def is_holder(self) -> bool:
        return self.role == "holder"

    @property
    def is_dealer(self) -> bool:
        return self.role == "dealer"

    @property
    def dealer_free(self) -> bool:
        """Whether the holders' offline store, not the dealer, supplies the correlated randomness."""
        return self.randomness == "providers"

    @property
    def is_last_holder(self) -> bool:
        return self.index == self.n_holders - 1

    def __repr__(self) -> str:
        return (
            f"TensorSession({self.party.name!r}, role={self.role}, holders={self.holders}, "
            f"dealer={self.dealer!r}, frac_bits={self.frac_bits}, rotations={self.rotations!r}, "
            f"randomness={self.randomness!r})"
        )

    # -- setup ---------------------------------------------------------------------

    def start(self) -> None:
        """Exchange the dealer's and the holders' seeds (idempotent; ops call it)."""
        if self._started:
            return
        self._started = True
        if self.is_dealer and not self.dealer_free:
            self._dealer_seeds = [secrets.token_bytes(KEY_BYTES) for _ in self.holders]
            for holder, seed in zip(self.holders, self._dealer_seeds, strict=True):
                self.party.send(holder, seed)
        elif self.is_holder:
            m = self.n_holders
            nxt, prev = self.holders[(self.index + 1) % m], self.holders[(self.index - 1) % m]
            self._zero_next = secrets.token_bytes(KEY_BYTES)
            self.party.send(nxt, self._zero_next)
            if not self.dealer_free:
                self._my_seed = expect_seed(self.party.recv(self.dealer), sender=self.dealer)
            self._zero_prev = expect_seed(self.party.recv(prev), sender=prev)

    # -- correlated randomness streams ----------------------------------------------

    def next_op(self) -> int:
        """Number of the next dealer-assisted operation (the same at every member)."""
        self.start()
        ident = self._op
        self._op += 1
        return ident

    def holder_stream(self, ident: int) -> RingPRG:
        """This holder's PRG stream for operation ``ident``."""
        return RingPRG(self._my_seed, nonce_for_counter(ident))

    def dealer_streams(self, ident: int) -> list[RingPRG]:
        """The dealer's copy of every holder's stream for operation ``ident``."""
        return [RingPRG(seed, nonce_for_counter(ident)) for seed in self._dealer_seeds]

    def zero_share(self, shape: tuple[int, ...]) -> NDArray[np.uint64]:
        """This holder's share of a fresh sharing of zero (holders' seeds only)."""
        self.start()
        nonce = nonce_for_counter(self._zero_counter)
        self._zero_counter += 1
        return RingPRG(self._zero_next, nonce).ring_elements(shape) - RingPRG(
            self._zero_prev, nonce
        ).ring_elements(shape)
