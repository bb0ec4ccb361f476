"""Shares of a random orthogonal matrix that one holder, or no single holder, knows (issue 39).

The tensor eigensolvers hide what their receiver sees behind a Haar-random
rotation on shares (``Q C Q^T`` in the spectrum mode, ``B = U S`` in the
masked Rayleigh-Ritz step). :attr:`TensorSession.rotations` says who draws it:

``"holder0"`` (default)
    Holder 0 draws a Haar ``Q`` and secret-shares it (seeds only; no round of
    its own when the seeds ride in another send run). Holder 0 knows ``Q``.
``"every-holder"``
    Holder ``i`` draws a Haar ``Q_i``; all ``M`` are shared in ONE round, and
    the holders multiply ``Q = Q_(M-1) ... Q_1 Q_0`` on shares, adjacent pairs
    at a time: ``ceil(log2 M)`` levels, each one Beaver opening
    (:func:`~protocols.tensor.batched.open_products`) and one truncation round
    (:func:`~protocols.tensor.batched.truncate_many`), so
    ``1 + 2 ceil(log2 M)`` rounds. Only the openings of masked operands and
    truncations are seen (uniform, docs/secure_tensor.md sections 2-3), so a
    coalition of all holders but ``j`` knows every factor but ``Q_j``.

Haar law: write ``Q = L Q_j R`` with ``L = Q_(M-1) ... Q_(j+1)`` and
``R = Q_(j-1) ... Q_0``, independent of ``Q_j``. For every fixed orthogonal
``L``, ``R`` the Haar measure of ``O(n)`` is invariant under ``X -> L X R``
(left and right invariance), so given ``(L, R)`` the product is Haar: ``Q`` is
Haar if any one factor is, and it stays Haar *given everything a coalition
missing holder ``j`` knows* (``L``, ``R``), which is the point.

Fixed point (:func:`rotation_error_bound`): each factor is encoded with ``f``
fractional bits, off by at most ``2^-(f+1)`` per entry, i.e.
``u = n 2^-(f+1)`` in spectral norm; each truncated product adds at most one ulp
per entry, ``t = n 2^-f`` in norm. If ``|A~ - A| <= a`` and ``|B~ - B| <= b``
for orthogonal ``A``, ``B`` then ``|A~ B~ + T - A B| <= a + b + a b + t``, so
``1 + e`` multiplies: for ``M`` factors (any pairing, ``M - 1`` products)
``e_M <= (1 + u)^M (1 + t)^(M - 1) - 1`` (about ``(3 M - 2) n 2^-(f+1)``), and
``|Q~^T Q~ - I| <= 2 e_M + e_M^2`` (:func:`orthogonality_bound`). ``M = 1`` is
the holder-0 rotation's own rounding.

Offline: ``Q`` does not depend on the data. :func:`prepare_rotations` makes the
rotations a solve will need ahead of time (before the data is read); a solver
takes a prepared one (:func:`take_rotation`, each used once) and otherwise
makes it at its start, before any data-dependent step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import numpy as np
from numpy.typing import NDArray

from protocols.errors import InputValidationError
from protocols.messages import expect_seed
from protocols.prg import RingPRG
from protocols.sharing import expand_share, split_seeded
from protocols.tensor.batched import open_products, truncate_many
from protocols.tensor.ops import matmul, share_input
from protocols.tensor.session import ROTATIONS, Rotations, TensorSession
from protocols.tensor.shared import SharedTensor

_U = np.uint64


def haar_rotation(size: int, prg: RingPRG | None = None) -> NDArray[np.float64]:
    """A Haar-random ``size x size`` orthogonal matrix from ChaCha20 (Box-Muller normals, QR with sign fix).

    Multiplying the columns of ``Q`` by the signs of ``diag(R)`` makes the law
    exactly Haar (Mezzadri 2007); the generator is the CSPRNG of :mod:`protocols.prg`.
    """
    words = (prg or RingPRG()).ring_elements((2, size, size))
    u = ((words >> _U(11)).astype(np.float64) + 0.5) / 2.0**53
    normals = np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * np.pi * u[1])
    q, r = np.linalg.qr(normals)
    return cast(NDArray[np.float64], q * np.sign(np.diag(r)))


def rotation_factors(session: TensorSession, drawn_by: Rotations) -> int:
    """How many Haar factors the rotation multiplies: 1 (``"holder0"``) or ``M`` (``"every-holder"``)."""
    return 1 if drawn_by == "holder0" else session.n_holders


def rotation_error_bound(size: int, factors: int, frac_bits: int) -> float:
    """Bound on ``|Q~ - Q|_2`` for the shared ``Q~`` against the exact product ``Q`` of the drawn factors.

    ``(1 + u)^M (1 + t)^(M - 1) - 1`` with ``u = n 2^-(f+1)`` (encoding) and
    ``t = n 2^-f`` (one ulp per truncated product), ``n = size``, ``M = factors``
    (module docstring).
    """
    if factors < 1:
        raise InputValidationError(f"a rotation has at least one factor, got {factors}")
    u = size * 2.0 ** -(frac_bits + 1)
    t = size * 2.0**-frac_bits
    return float((1.0 + u) ** factors * (1.0 + t) ** (factors - 1) - 1.0)


def session_rotation_error(session: TensorSession, size: int, frac_bits: int) -> float:
    """:func:`rotation_error_bound` of a ``size x size`` rotation drawn as ``session.rotations`` says."""
    return rotation_error_bound(size, rotation_factors(session, session.rotations), frac_bits)


def orthogonality_bound(size: int, factors: int, frac_bits: int) -> float:
    """Bound on ``|Q~^T Q~ - I|_2``: ``2 e + e^2`` with ``e`` from :func:`rotation_error_bound`."""
    e = rotation_error_bound(size, factors, frac_bits)
    return 2.0 * e + e * e


def shared_rotation(session: TensorSession, size: int, *, drawn_by: Rotations) -> SharedTensor:
    """Shares of a Haar-random ``size x size`` orthogonal matrix with the session's fractional bits.

    Every member calls this with the same arguments. ``drawn_by="holder0"``:
    holder 0 draws and shares it; ``"every-holder"``: the product of one
    rotation from every holder, multiplied on shares (module docstring).
    """
    return shared_rotations(session, (size,), drawn_by=drawn_by)[0]


def shared_rotations(
    session: TensorSession, sizes: Sequence[int], *, drawn_by: Rotations
) -> list[SharedTensor]:
    """:func:`shared_rotation` for several sizes at once (one sharing round; the products level by level).

    Raises
    ------
    InputValidationError
        An unknown ``drawn_by`` or a size below 1 (before anything is sent).
    """
    if drawn_by not in ROTATIONS:
        raise InputValidationError(f"drawn_by={drawn_by!r} is not one of {ROTATIONS}")
    sizes = [int(n) for n in sizes]
    if any(n < 1 for n in sizes):
        raise InputValidationError(f"rotation sizes must be at least 1, got {sizes}")
    if drawn_by == "holder0":
        leader = session.holders[0]
        mine = session.party.name == leader
        return [
            share_input(session, haar_rotation(n) if mine else None, owner=leader, shape=(n, n))
            for n in sizes
        ]
    factors = _share_every_holder(session, sizes)
    # Q = Q_(M-1) ... Q_0: the factors left to right, adjacent pairs multiplied per level
    levels = [f[::-1] for f in factors]
    while len(levels[0]) > 1:
        pairs = [(level[i], level[i + 1]) for level in levels for i in range(0, len(level) - 1, 2)]
        products = iter(_multiply(session, pairs))
        levels = [
            [next(products) for _ in range(len(level) // 2)] + ([level[-1]] if len(level) % 2 else [])
            for level in levels
        ]
    return [level[0] for level in levels]


def _share_every_holder(session: TensorSession, sizes: Sequence[int]) -> list[list[SharedTensor]]:
    """Every holder draws a Haar rotation per size and shares it; ONE round (all seeds sent, then received).

    Returns, per size, the ``M`` sharings in holder order (shells at non-holders).
    """
    session.start()
    m = session.n_holders
    session.stats.inputs += m * len(sizes)
    f = session.frac_bits
    if not session.is_holder:
        return [[SharedTensor(session, None, (n, n), f) for _ in range(m)] for n in sizes]
    me = session.party.name
    peers = [h for h in session.holders if h != me]
    kept: list[NDArray[np.uint64]] = []
    for n in sizes:
        own, seeds = split_seeded(session.codec.encode(haar_rotation(n), name="rotation factor"), m)
        kept.append(own)
        for peer, seed in zip(peers, seeds, strict=True):
            session.party.send(peer, seed)
    received = {peer: [expect_seed(session.party.recv(peer), sender=peer) for _ in sizes] for peer in peers}
    return [
        [
            SharedTensor(session, kept[s] if h == me else expand_share(received[h][s], (n, n)), (n, n), f)
            for h in session.holders
        ]
        for s, n in enumerate(sizes)
    ]


def _multiply(session: TensorSession, pairs: list[tuple[SharedTensor, SharedTensor]]) -> list[SharedTensor]:
    """``X Y`` truncated back to ``f`` bits for every pair: one opening round and one truncation round.

    A session with a product engine (CrypTen) multiplies each pair with its
    engine (:func:`~protocols.tensor.ops.matmul`, two rounds per pair) instead.
    """
    if session.engine is not None:
        return [matmul(x, y) for x, y in pairs]
    raw = open_products(pairs)
    return truncate_many([(z, session.frac_bits) for z in raw])


def prepare_rotations(session: TensorSession, sizes: Sequence[int]) -> None:
    """Make rotations of ``sizes`` now, drawn as the session says, for later solves (data-independent).

    Call it before the data is read: the rounds it takes are then off the
    online phase. Each prepared rotation is taken once (:func:`take_rotation`).
    """
    made = shared_rotations(session, sizes, drawn_by=session.rotations)
    for n, q in zip(sizes, made, strict=True):
        session.prepared_rotations.setdefault(int(n), []).append(q)


def take_rotation(session: TensorSession, size: int, *, drawn_by: Rotations | None = None) -> SharedTensor:
    """A prepared rotation of ``size`` (removed, so used once), or a fresh one made now.

    ``drawn_by`` defaults to the session's setting; a prepared rotation is used
    only when it matches (prepared ones are drawn as the session says).
    """
    mode = session.rotations if drawn_by is None else drawn_by
    ready = session.prepared_rotations.get(int(size), [])
    if mode == session.rotations and ready:
        return ready.pop(0)
    return shared_rotation(session, size, drawn_by=mode)
