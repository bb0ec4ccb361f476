"""The rotated-spectrum eigensolver (``reveal="spectrum"``, docs/secure_tensor.md section 9).

Holder 0 shares a Haar-random orthogonal ``Q``; the receiver sees only
``Q Ĉ Q^T`` (whose law depends on the eigenvalues alone), diagonalises it and
sends back the top-k eigenvectors ``W``; the holders map them through ``Q^T``
on shares and reveal ``Q^T W``. The companion ladder solver, the shared input
checks and the result types are in :mod:`protocols.tensor.fast_eig`.
"""

from __future__ import annotations

import numpy as np

from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.tensor.batched import open_products, reveal_many, times_public, truncate_many
from protocols.tensor.eig import _check_symmetric
from protocols.tensor.fast_eig import FastEigResult, FastPlan, _haar, _scaled_copies, _square_and_k
from protocols.tensor.fast_eig_math import F_HI, F, fix_signs
from protocols.tensor.ops import share_input
from protocols.tensor.shared import SharedTensor


def spectrum_eigenvectors(c: SharedTensor, n_components: int, *, to: str) -> FastEigResult | None:
    """Every eigenvalue and the top-k eigenvectors; the receiver sees only ``Q Ĉ Q^T`` and ``Q^T W``.

    Steps (docs/secure_tensor.md section 9): ``C - C^T`` opened among the
    holders; ``tr(C)`` revealed; ``Ĉ_hi = alpha C`` (``F_HI`` bits); holder 0
    shares a Haar-random ``Q`` (``F`` bits); ``A = Q Ĉ_hi`` (truncated to
    ``F_HI`` bits) and ``S = A Q^T`` (``F + F_HI = 60`` bits, untruncated) is
    revealed to ``to``, which diagonalises it and sends the top-k eigenvectors
    ``W`` of ``S`` to the holders; they compute ``Q^T W`` (local, ``2 F``
    bits) and reveal it to ``to``. Rounds: 7 (holders).

    ``to`` must not be a holder: holder 0 knows ``Q``.
    """
    session = c.session
    d, k = _square_and_k(c, n_components)
    if to in session.holders:
        raise InputValidationError("the receiver of Q C Q^T must not be a holder (holder 0 knows Q)")
    if session.frac_bits != F:
        raise InputValidationError(f"the spectrum solver needs a session with {F} fractional bits")
    plan = FastPlan("spectrum", 0.0, 0.0, 0)
    _check_symmetric(c)
    leader = session.holders[0]
    q = share_input(session, _haar(d) if session.party.name == leader else None, owner=leader, shape=(d, d))
    (c_hi,), alpha, trace = _scaled_copies(c, (F_HI,))
    (a,) = truncate_many([(open_products([(q, c_hi)])[0], F)])
    (s,) = open_products([(a, q.T)])
    plan.secret_products = 2
    opened = reveal_many([s], to)
    me = session.party.name
    if me == to:
        if opened is None:
            raise ProtocolError("a receiver got no revealed values")
        rotated = (opened[0] + opened[0].T) / 2.0
        values, vectors = np.linalg.eigh(rotated)
        order = np.argsort(values)[::-1]
        values, vectors = values[order], vectors[:, order]
        w = np.ascontiguousarray(vectors[:, :k])
        for h in session.holders:
            session.party.send(h, w)
    elif session.is_holder:
        w = expect_real_array(session.party.recv(to), to, (d, k), "the rotated eigenvectors")
        if float(np.max(np.abs(w))) > 1.0 + 1e-9:
            raise ProtocolError(f"{to!r} sent eigenvectors with an entry above 1 in magnitude")
    else:
        w = np.zeros((d, k))
    back = times_public(q.T, w, F)
    out = reveal_many([back], to)
    if out is None:
        return None
    mapped = out[0].T  # (k, d): rows Q^T w_i
    # symmetric (Löwdin) orthonormalisation removes Q's rounding from the basis
    u, _, vt = np.linalg.svd(mapped, full_matrices=False)
    comps = fix_signs(u @ vt)
    spectrum = np.clip(values, 0.0, None) / alpha
    plan.achieved_tol = 0.0
    eta = _spectrum_fixed_point_error(d)
    return FastEigResult(comps, spectrum[:k], trace, plan, alpha, spectrum, eta)


def _spectrum_fixed_point_error(d: int) -> float:
    """Spectral-norm bound of the error of ``Q Ĉ Q^T`` against an exact rotation of ``Ĉ``, units of ``Ĉ``.

    ``Q``'s entries are rounded to ``2^-(F+1)``, so ``|Q~^T Q~ - I| <= 2 d 2^-(F+1) + (d 2^-(F+1))^2``
    and the spectrum moves by that relative amount (times ``|Ĉ| <= 1``); ``Ĉ_hi``
    adds ``d 2^-F_HI`` and the truncation of ``A`` another ``d 2^-F_HI``.
    """
    rot = 2.0 * d * 2.0 ** -(F + 1) + (d * 2.0 ** -(F + 1)) ** 2
    return rot + 2.0 * d * 2.0**-F_HI
