"""Shamir's ``t``-out-of-``n`` secret sharing over a prime field that holds 256-bit secrets.

A secret ``s`` (an integer below :data:`PRIME`, e.g. a 32-byte seed read as
an integer) is the constant term of a random polynomial ``f`` of degree
``t - 1`` over GF(p); party ``i`` (``x = 1 .. n``) gets ``f(i)`` (Shamir,
"How to share a secret", CACM 1979). Any ``t`` shares give ``s`` by Lagrange
interpolation at 0; any ``t - 1`` are uniformly distributed and independent
of ``s``. The ``t - 1`` random coefficients come from :func:`secrets.randbelow`.

The field is GF(p) for ``p = 2^256 + 297``, the smallest prime above
``2^256``, so every 256-bit value is a field element and a share takes
:data:`SHARE_BYTES` = 33 bytes.

Given more than ``t`` shares, :func:`reconstruct` checks that they all lie on
one polynomial of degree below ``t``; if they do not, it looks for the one
share whose removal makes the others consistent and names it
(:class:`InconsistentSharesError`), which is possible when at least ``t + 2``
shares are given and one of them lies.

Used by the dropout-tolerant secure sum (:mod:`protocols.backends.dropout`,
Bonawitz et al., CCS 2017, §4) to share each provider's mask seeds.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from protocols.errors import InputValidationError, ProtocolError

#: The field's modulus: ``2^256 + 297``, the smallest prime above ``2^256``.
PRIME = (1 << 256) + 297
#: Bytes of one share's value on the wire (big endian).
SHARE_BYTES = 33
#: Bytes of the secrets :func:`split_bytes` takes.
SECRET_BYTES = 32


class InconsistentSharesError(ProtocolError):
    """The shares given do not lie on one polynomial of the threshold's degree.

    Attributes
    ----------
    suspects : tuple of int
        The x-coordinates of the shares found to lie (empty when none could be singled out).
    """

    def __init__(self, message: str, suspects: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.suspects = suspects


@dataclass(frozen=True)
class Share:
    """One share: the point ``(x, f(x))`` of the sharing polynomial.

    Attributes
    ----------
    x : int
        The holder's evaluation point, ``1 .. n`` (never 0: ``f(0)`` is the secret).
    y : int
        ``f(x)``, an element of GF(:data:`PRIME`).
    """

    x: int
    y: int

    def to_bytes(self) -> bytes:
        """``y`` as :data:`SHARE_BYTES` big-endian bytes (``x`` is implied by who holds it)."""
        return self.y.to_bytes(SHARE_BYTES, "big")

    @classmethod
    def from_bytes(cls, x: int, data: object, *, sender: str = "a peer") -> Share:
        """Parse a share value received from ``sender``; refuse anything but a field element.

        Raises
        ------
        ProtocolError
            Naming ``sender``, if ``data`` is not :data:`SHARE_BYTES` bytes encoding a value below :data:`PRIME`.
        """
        if not isinstance(data, bytes) or len(data) != SHARE_BYTES:
            raise ProtocolError(f"{sender!r} sent a malformed Shamir share; expected {SHARE_BYTES} bytes")
        y = int.from_bytes(data, "big")
        if y >= PRIME:
            raise ProtocolError(f"{sender!r} sent a Shamir share outside the field (value >= 2^256 + 297)")
        return cls(_check_x(x), y)


def check_threshold(threshold: object, n_shares: object) -> tuple[int, int]:
    """Validate ``2 <= threshold <= n_shares``; return both as ints.

    Raises
    ------
    InputValidationError
        Naming the value and the limit.

    Examples
    --------
    >>> check_threshold(3, 5)
    (3, 5)
    >>> check_threshold(1, 5)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: threshold=1 is below 2: one share alone would reveal the secret
    """
    if isinstance(n_shares, bool) or not isinstance(n_shares, int):
        raise InputValidationError(f"n_shares must be an integer, got {n_shares!r}")
    threshold = _check_t(threshold)
    if threshold > n_shares:
        raise InputValidationError(
            f"threshold={threshold} exceeds the number of shares n={n_shares}: the secret could never be rebuilt"
        )
    if n_shares >= PRIME:
        raise InputValidationError(f"n_shares={n_shares} must be below the field size")
    return threshold, n_shares


def _check_t(threshold: object) -> int:
    if isinstance(threshold, bool) or not isinstance(threshold, int):
        raise InputValidationError(f"threshold must be an integer, got {threshold!r}")
    if threshold < 2:
        raise InputValidationError(
            f"threshold={threshold} is below 2: one share alone would reveal the secret"
        )
    return threshold


def _check_x(x: object) -> int:
    if isinstance(x, bool) or not isinstance(x, int) or not 0 < x < PRIME:
        raise InputValidationError(f"a share's x must be an integer in 1 .. p-1, got {x!r}")
    return x


def split(secret: int, n_shares: int, threshold: int) -> list[Share]:
    """Share ``secret`` so that any ``threshold`` of the ``n_shares`` shares rebuild it.

    Parameters
    ----------
    secret : int
        An element of GF(p): ``0 <= secret <`` :data:`PRIME`.
    n_shares : int
        Shares to make; share ``i`` (0-based) has ``x = i + 1``.
    threshold : int
        ``t``, with ``2 <= t <= n_shares``.

    Returns
    -------
    list of Share
        ``[Share(1, f(1)), ..., Share(n, f(n))]``.

    Raises
    ------
    InputValidationError
        For a secret outside the field or an invalid threshold.
    """
    t, n = check_threshold(threshold, n_shares)
    if isinstance(secret, bool) or not isinstance(secret, int) or not 0 <= secret < PRIME:
        raise InputValidationError("the secret must be an integer in 0 .. p-1 (p = 2^256 + 297)")
    coefficients = [secret] + [secrets.randbelow(PRIME) for _ in range(t - 1)]
    return [Share(x, _evaluate(coefficients, x)) for x in range(1, n + 1)]


def split_bytes(secret: bytes, n_shares: int, threshold: int) -> list[Share]:
    """:func:`split` of a :data:`SECRET_BYTES`-byte secret (a seed or a private key), read big endian."""
    if not isinstance(secret, bytes) or len(secret) != SECRET_BYTES:
        raise InputValidationError(f"the secret must be {SECRET_BYTES} bytes")
    return split(int.from_bytes(secret, "big"), n_shares, threshold)


def _evaluate(coefficients: Sequence[int], x: int) -> int:
    value = 0
    for c in reversed(coefficients):  # Horner
        value = (value * x + c) % PRIME
    return value


def _interpolate_at(points: Sequence[Share], at: int) -> int:
    """The value at ``at`` of the polynomial of degree ``< len(points)`` through ``points``."""
    total = 0
    for i, pi in enumerate(points):
        num, den = 1, 1
        for j, pj in enumerate(points):
            if i != j:
                num = num * (at - pj.x) % PRIME
                den = den * (pi.x - pj.x) % PRIME
        total = (total + pi.y * num * pow(den, -1, PRIME)) % PRIME
    return total


def _consistent(points: Sequence[Share], threshold: int) -> bool:
    base = points[:threshold]
    return all(_interpolate_at(base, p.x) == p.y for p in points[threshold:])


def reconstruct(shares: Sequence[Share], threshold: int, *, holders: Mapping[int, str] | None = None) -> int:
    """Rebuild the secret from at least ``threshold`` shares, checking every extra share.

    Parameters
    ----------
    shares : sequence of Share
        Shares with distinct ``x``.
    threshold : int
        ``t`` the secret was shared with.
    holders : mapping of int to str, optional
        Who sent the share at each ``x``, to name a lying share's sender.

    Returns
    -------
    int
        The secret ``f(0)``.

    Raises
    ------
    InputValidationError
        For fewer than ``threshold`` shares, repeated ``x`` or an invalid threshold.
    InconsistentSharesError
        If more than ``threshold`` shares do not lie on one polynomial of degree
        ``< threshold``; names the liar (its holder when known) when exactly one
        share's removal makes the others consistent and at least ``t + 1`` remain.
    """
    t = _check_t(threshold)
    points = list(shares)
    if len(points) < t:
        raise InputValidationError(f"{len(points)} share(s) given; rebuilding needs at least threshold={t}")
    xs = [_check_x(p.x) for p in points]
    if len(set(xs)) != len(xs):
        raise InputValidationError(f"the shares' x must be distinct, got {sorted(xs)}")
    if not all(isinstance(p.y, int) and 0 <= p.y < PRIME for p in points):
        raise InputValidationError("every share's y must be a field element")
    if _consistent(points, t):
        return _interpolate_at(points[:t], 0)
    suspects: tuple[int, ...] = ()
    if len(points) >= t + 2:
        found = [p.x for i, p in enumerate(points) if _consistent(points[:i] + points[i + 1 :], t)]
        if len(found) == 1:
            suspects = (found[0],)
    names = holders or {}
    if suspects:
        who = names.get(suspects[0], f"x={suspects[0]}")
        raise InconsistentSharesError(
            f"the share from {who!r} does not lie on the polynomial the other {len(points) - 1} shares agree on",
            suspects,
        )
    raise InconsistentSharesError(
        f"the {len(points)} shares from {[names.get(x, f'x={x}') for x in xs]} do not lie on one polynomial "
        f"of degree below {t}; the lying share cannot be singled out"
    )


def reconstruct_bytes(
    shares: Sequence[Share], threshold: int, *, holders: Mapping[int, str] | None = None
) -> bytes:
    """:func:`reconstruct` of a secret made by :func:`split_bytes`.

    Raises
    ------
    InconsistentSharesError
        Also when the rebuilt value does not fit :data:`SECRET_BYTES` bytes.
    """
    value = reconstruct(shares, threshold, holders=holders)
    if value >> (8 * SECRET_BYTES):
        raise InconsistentSharesError("the rebuilt secret does not fit 32 bytes: the shares are inconsistent")
    return value.to_bytes(SECRET_BYTES, "big")


__all__ = [
    "PRIME",
    "SECRET_BYTES",
    "SHARE_BYTES",
    "InconsistentSharesError",
    "Share",
    "check_threshold",
    "reconstruct",
    "reconstruct_bytes",
    "split",
    "split_bytes",
]
