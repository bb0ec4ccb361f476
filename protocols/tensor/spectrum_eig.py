"""The rotated-spectrum eigensolver (``reveal="spectrum"``, docs/secure_tensor.md section 9).

The holders share a Haar-random orthogonal ``Q`` (drawn by holder 0, or the
product of one from every holder: the session's ``rotations``,
:mod:`protocols.tensor.joint_rotation`); the receiver sees only
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
from protocols.tensor.fast_eig import FastEigResult, FastPlan, _scaled_copies, _square_and_k
from protocols.tensor.fast_eig_math import F_HI, F, fix_signs
from protocols.tensor.joint_rotation import rotation_error_bound, rotation_factors, take_rotation
from protocols.tensor.shared import SharedTensor


def spectrum_eigenvectors(c: SharedTensor, n_components: int, *, to: str) -> FastEigResult | None:
    """Every eigenvalue and the top-k eigenvectors; the receiver sees only ``Q Ĉ Q^T`` and ``Q^T W``.

    Steps (docs/secure_tensor.md section 9): ``C - C^T`` opened among the
    holders; ``tr(C)`` revealed; ``Ĉ_hi = alpha C`` (``F_HI`` bits); holder 0
    shares a Haar-random ``Q`` (``F`` bits); ``A = Q Ĉ_hi`` (truncated to
    ``F_HI`` bits) and ``S = A Q^T`` (``F + F_HI = 60`` bits, untruncated) is
    revealed to ``to``, which diagonalises it and sends the top-k eigenvectors
    ``W`` of ``S`` to the holders; they compute ``Q^T W`` (local, ``2 F``
    bits) and reveal it to ``to``. Rounds: 7 (holders), plus ``1 + 2 ceil(log2 M)``
    for an every-holder ``Q`` not prepared ahead (docs/secure_tensor.md section 9.3).

    ``to`` must not be a holder: holder 0 knows ``Q`` (with ``"holder0"``), and a
    holder that also saw ``Q C Q^T`` and ``Q^T W`` would hold more than the outputs.
    """
    session = c.session
    d, k = _square_and_k(c, n_components)
    if to in session.holders:
        raise InputValidationError("the receiver of Q C Q^T must not be a holder (holder 0 knows Q)")
    if session.frac_bits != F:
        raise InputValidationError(f"the spectrum solver needs a session with {F} fractional bits")
    plan = FastPlan("spectrum", 0.0, 0.0, 0)
    q = take_rotation(session, d)  # data-independent: before the first data-dependent step
    _check_symmetric(c)
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
    eta = _spectrum_fixed_point_error(d, rotation_factors(session, session.rotations))
    return FastEigResult(comps, spectrum[:k], trace, plan, alpha, spectrum, eta)


def _spectrum_fixed_point_error(d: int, factors: int = 1) -> float:
    """Spectral-norm bound of the fixed-point error of the spectrum mode, in units of ``Ĉ``.

    The shared ``Q~ = Q + E`` of ``factors`` Haar factors has ``|E| <= e``
    (:func:`~protocols.tensor.joint_rotation.rotation_error_bound`: ``d 2^-(F+1)``
    for one factor, about ``(3 M - 2) d 2^-(F+1)`` for ``M``), so
    ``|Q~ Ĉ Q~^T - Q Ĉ Q^T| <= 2 e + e^2`` (``|Ĉ| <= 1``) and the spectrum moves
    by at most that; ``Ĉ_hi`` adds ``d 2^-F_HI`` and the truncation of ``A``
    another ``d 2^-F_HI``. The mapped basis ``Q~^T W`` is further off by
    ``|E^T W| <= e`` plus ``W``'s rounding (``sqrt(d k) 2^-(F+1) (1 + e) <= e (1 + e)``),
    and its Löwdin orthonormalisation adds at most as much again (its singular
    values lie within that of 1): about ``4 e`` on each component beyond
    Davis-Kahan. The eigengaps of ``Ĉ`` are at most 1, so a further ``2 e`` in
    this bound raises the component bounds ``2 sqrt(2) eta / gap`` by at least
    ``4 sqrt(2) e`` and covers it.
    """
    e = rotation_error_bound(d, factors, F)
    return 4.0 * e + e * e + 2.0 * d * 2.0**-F_HI
