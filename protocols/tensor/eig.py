"""Top-k eigenvectors of a shared symmetric PSD matrix, from shared-tensor operations only.

Orthogonal (subspace) iteration with polynomial orthonormalization, then a
masked Rayleigh-Ritz step whose small result is revealed to named parties.
The derivation, the accuracy/round trade-off and what is revealed are in
docs/secure_tensor.md; in short:

1. ``tr(C)`` is revealed to every member (it is the total variance, an output)
   and ``Ĉ = alpha C`` with public ``alpha <= 1/tr(C)``, so every eigenvalue and
   entry of ``Ĉ`` lies in ``[-1, 1]`` (eigenvalues in ``[0, 1]``).
2. ``Y_0 = Ĉ Q_0`` for a public orthonormal ``Q_0``; then ``T`` times
   ``Y <- orth(Ĉ Y)``. ``orth`` applies ``r`` odd polynomial steps
   ``Y <- Y p(Y^T Y)``: they multiply ``Y`` on the right by a polynomial in
   ``Y^T Y``, so they never change its column space (the span is exactly
   that of the subspace iteration) and keep its singular values in about
   ``[0.65, 1.15]``; each step is three matrix products (six rounds).
3. ``s`` Newton-Schulz steps ``Y <- Y (3 I - Y^T Y) / 2`` make ``Y`` orthonormal
   to rounding precision.
4. ``H = Y^T Ĉ Y``; every holder inputs a Haar-random ``k x k`` rotation, ``S``
   is their product, and only ``Y S`` and ``S^T H S`` are revealed. The
   receiver orthonormalizes ``Y S`` and diagonalizes the ``k x k`` matrix.

Iteration counts (:func:`plan_iterations`): the subspace error after ``T``
steps is at most ``(1 - gap)^T tan(theta_0)``, where ``gap`` is the relative
eigengap ``1 - lambda_{k+1} / lambda_k`` the user allows; ``r`` is the
smallest number of polynomial steps that keeps a direction with
``lambda / tr(C) >= min_ratio`` from shrinking, found by iterating the scalar
map in float.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike, NDArray

from protocols.encoding import FixedPointCodec, check_finite
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.runtime import RunResult, run_inprocess
from protocols.sharing import split
from protocols.tensor.joint_rotation import take_rotation
from protocols.tensor.ops import (
    add_public,
    fix_left,
    from_share,
    matmul,
    matmul_fixed,
    matmul_public,
    mul_public_int,
    reveal,
    truncate,
)
from protocols.tensor.session import DEFAULT_FRAC_BITS, TensorSession
from protocols.tensor.shared import SharedTensor

#: Odd quintic ``x (a + b x^2 + c x^4)`` with coefficients on a 2^-6 grid: slope
#: 3.44 at zero, maps [0.2, 1.2] into about [0.65, 1.15].
QUINTIC = (220, -306, 130)
QUINTIC_BITS = 6
#: Newton-Schulz ``x (3 - x^2) / 2``: converges quadratically to 1 from (0, sqrt 3).
CUBIC = (3, -1, 0)
CUBIC_BITS = 1

#: Band the polynomial steps keep singular values in, used by the planner.
_BAND_LOW = 0.3


@dataclass(frozen=True)
class IterationPlan:
    """How many steps a secure eigensolve takes, chosen from public parameters.

    Attributes
    ----------
    iterations : int
        Subspace-iteration steps ``T`` (one multiplication by ``Ĉ`` each).
    poly_steps : int
        Polynomial orthonormalization steps per iteration ``r``.
    polish_steps : int
        Newton-Schulz steps at the end ``s``.
    products : int
        Secret x secret matrix products (each two rounds), excluding the masking.
    """

    iterations: int
    poly_steps: int
    polish_steps: int
    eigengap: float
    min_ratio: float
    tol: float
    products: int = field(init=False)

    def __post_init__(self) -> None:
        # (T - 1) products by Ĉ, three per quintic step, two per Newton-Schulz step, two for H
        products = (self.iterations - 1) + self.iterations * 3 * self.poly_steps + 2 * self.polish_steps + 2
        object.__setattr__(self, "products", products)

    def as_dict(self) -> dict[str, float | int]:
        return {
            "iterations": self.iterations,
            "poly_steps": self.poly_steps,
            "polish_steps": self.polish_steps,
            "eigengap": self.eigengap,
            "min_ratio": self.min_ratio,
            "tol": self.tol,
            "secret_products": self.products,
        }


def _poly(x: float, coeffs: tuple[int, int, int], bits: int) -> float:
    a, b, c = (v / 2.0**bits for v in coeffs)
    return x * (a + b * x * x + c * x**4)


def poly_steps_for(min_ratio: float, max_steps: int = 12) -> int:
    """Fewest quintic steps per iteration that keep a direction with ``lambda/tr >= min_ratio`` alive.

    Iterates the scalar map ``s <- p^r(rho s)`` (``p`` the quintic) for every
    ``rho`` on a grid of ``[min_ratio, 1]`` and returns the smallest ``r`` whose
    steady state stays above 0.3 for all of them.
    """
    rhos = np.geomspace(min_ratio, 1.0, 40)
    for r in range(1, max_steps + 1):
        ok = True
        for rho in rhos:
            s = 1.0
            low = np.inf
            for it in range(120):
                s = rho * s
                for _ in range(r):
                    s = _poly(s, QUINTIC, QUINTIC_BITS)
                if it >= 60:
                    low = min(low, s)
            if not (low >= _BAND_LOW and s <= 1.2):
                ok = False
                break
        if ok:
            return r
    raise InputValidationError(
        f"min_ratio={min_ratio} is too small: no number of orthonormalization steps up to {max_steps} "
        "keeps such a weak direction; raise min_ratio"
    )


def plan_iterations(
    n_features: int,
    n_components: int,
    *,
    eigengap: float = 0.1,
    min_ratio: float = 0.01,
    tol: float = 1e-6,
    polish_steps: int = 6,
) -> IterationPlan:
    """Choose the iteration counts from the eigengap and variance ratio the user allows.

    Parameters
    ----------
    n_features, n_components : int
        ``d`` and ``k``.
    eigengap : float, default=0.1
        Assumed lower bound on ``1 - lambda_{k+1} / lambda_k``.
    min_ratio : float, default=0.01
        Assumed lower bound on ``lambda_k / tr(C)``.
    tol : float, default=1e-6
        Target ``tan`` of the largest principal angle between the computed and
        the true top-k subspace.
    polish_steps : int, default=6
        Final Newton-Schulz steps.

    Returns
    -------
    IterationPlan
        ``T = ceil(log(tol / d) / log(1 - eigengap))`` (taking
        ``tan(theta_0) <= d`` for the public random start) and ``r`` from
        :func:`poly_steps_for`.
    """
    if not 1 <= n_components <= n_features:
        raise InputValidationError(
            f"n_components={n_components} must be between 1 and n_features={n_features}"
        )
    if not 0.0 < eigengap < 1.0:
        raise InputValidationError(f"eigengap={eigengap} must lie strictly between 0 and 1")
    if not 0.0 < min_ratio <= 1.0 / n_components:
        raise InputValidationError(
            f"min_ratio={min_ratio} must lie in (0, 1/k = {1.0 / n_components:.3g}]: "
            "k eigenvalues cannot all exceed 1/k of the trace"
        )
    if not 0.0 < tol < 1.0:
        raise InputValidationError(f"tol={tol} must lie strictly between 0 and 1")
    if not 0 <= polish_steps <= 20:
        raise InputValidationError(f"polish_steps={polish_steps} must be between 0 and 20")
    iterations = max(1, math.ceil(math.log(tol / n_features) / math.log(1.0 - eigengap)))
    if n_components == n_features:
        iterations = 1  # the whole space: nothing to converge
    return IterationPlan(iterations, poly_steps_for(min_ratio), polish_steps, eigengap, min_ratio, tol)


def _poly_step(y: SharedTensor, coeffs: tuple[int, int, int], bits: int) -> SharedTensor:
    """``Y <- Y (a I + b A + c A^2) / 2^bits`` with ``A = Y^T Y`` (integer a, b, c)."""
    a, b, c = coeffs
    gram = matmul(y.T, y)
    k = gram.shape[0]
    inner = mul_public_int(gram, np.int64(b))
    if c:
        inner = inner + mul_public_int(matmul(gram, gram), np.int64(c))
    inner = add_public(inner, a * np.eye(k))
    return matmul(y, inner, extra_bits=bits)


@dataclass
class EigResult:
    """What a receiver of :func:`top_eigenvectors` gets."""

    components: NDArray[np.float64]  # (k, d), rows, unit norm
    eigenvalues: NDArray[np.float64]  # (k,), decreasing, of the input matrix
    trace: float
    plan: IterationPlan
    scale: float  # alpha: Ĉ = alpha C
    basis_singular_values: NDArray[np.float64]


def _check_symmetric(c: SharedTensor) -> None:
    """Open ``C - C^T`` among holders (one round) and raise if any entry differs."""
    session = c.session
    diff = None if c.share is None else c.share - c.share.T
    opened = reveal(from_share(session, diff, c.shape, c.frac_bits), session.holders)
    if opened is not None and np.any(opened != 0):
        worst = float(np.max(np.abs(opened)))
        raise ProtocolError(f"the shared matrix is not symmetric: max |C - C^T| = {worst:.6g}")


def reveal_trace(c: SharedTensor) -> float:
    """Reveal ``tr(C)`` to every member of the session (it is the total variance)."""
    session = c.session
    members = (*session.holders, session.dealer, *session.observers)
    diag = None if c.share is None else np.array([np.trace(c.share)], dtype=np.uint64)
    value = reveal(from_share(session, diag, (1,), c.frac_bits), members)
    if value is None:
        raise ProtocolError("the trace reveal returned nothing")
    return float(value[0])


def trace_scale_factor(trace: float, frac_bits: int) -> int:
    """The public integer ``K = floor(2^(61 - frac_bits) / tr(C))`` that scales a shared matrix by its trace.

    ``alpha = K 2^(frac_bits - 61) <= 1 / tr(C)`` puts the eigenvalues of
    ``alpha C`` in ``[0, 1]`` and keeps ``C_int K < 2^61`` (the truncation's
    ``|x| < 2^62`` precondition with a bit to spare).

    Raises
    ------
    ProtocolError
        If the revealed trace is not positive, or so large that ``K < 256``
        (too few significant bits would survive), or so small that
        ``K >= 2^62`` (the ring would overflow).
    """
    if not trace > 0:
        raise ProtocolError(
            f"the shared matrix has trace {trace:.6g}; a PSD matrix with a signal has trace > 0"
        )
    factor = math.floor(2.0 ** (61 - frac_bits) / trace)
    if factor < 2**8:
        raise ProtocolError(
            f"trace {trace:.6g} is too large for {frac_bits} fractional bits: the scaling factor would "
            f"be {factor} < 256; rescale the data"
        )
    if factor >= 2**62:
        raise ProtocolError(f"trace {trace:.6g} is too small for the ring; rescale the data")
    return factor


def top_eigenvectors(
    c: SharedTensor,
    n_components: int,
    *,
    to: str | Sequence[str],
    plan: IterationPlan | None = None,
    start_seed: int = 0,
    mask: bool = True,
    check_symmetric: bool = True,
) -> EigResult | None:
    """Top-k eigenpairs of a shared symmetric PSD ``d x d`` matrix, revealed only to ``to``.

    Every member calls this with the same public arguments. The matrix is never
    reconstructed; the members learn ``tr(C)``; the receivers learn the
    components and eigenvalues (plus a random rotation of the basis, which
    carries no information; see the module docstring).

    Parameters
    ----------
    c : SharedTensor of shape (d, d)
        Shares of a symmetric positive semi-definite matrix (any fractional bits).
    n_components : int
        ``k``.
    to : str or sequence of str
        Receiver(s) of the result.
    plan : IterationPlan, optional
        From :func:`plan_iterations` (default settings when omitted).
    start_seed : int, default=0
        Seed of the *public* random start ``Q_0`` (not secret; any value works).
    mask : bool, default=True
        Rotate the revealed basis by holder-chosen Haar-random rotations.
    check_symmetric : bool, default=True
        Open ``C - C^T`` among the holders (re-randomised shares of zero when
        ``C`` is symmetric, so nothing is learnt) and stop if it is not zero.

    Raises
    ------
    InputValidationError
        ``k`` out of range or a non-square matrix (before anything is sent).
    ProtocolError
        A non-symmetric matrix, a trace that is not positive or does not fit
        the scaling, or a top-k direction weaker than ``plan.min_ratio``.

    Returns
    -------
    EigResult or None
        At each receiver; ``None`` elsewhere.
    """
    session = c.session
    if c.ndim != 2 or c.shape[0] != c.shape[1]:
        raise InputValidationError(f"top_eigenvectors needs a square matrix, got shape {c.shape}")
    d = c.shape[0]
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)):
        raise InputValidationError(f"n_components must be an integer, got {n_components!r}")
    k = int(n_components)
    if not 1 <= k <= d:
        raise InputValidationError(f"n_components={k} is out of range; it must be between 1 and d={d}")
    plan = plan_iterations(d, k) if plan is None else plan
    f = session.frac_bits
    # every holder's Haar rotation, multiplied on shares (this solver always did; the session's
    # "holder0" setting does not weaken it); data-independent, so made first
    rotation = take_rotation(session, k, drawn_by="every-holder") if mask else None
    if check_symmetric:
        _check_symmetric(c)

    # 1. public scale from the revealed trace: Ĉ = alpha C with alpha <= 1/tr(C)
    trace = reveal_trace(c)
    shift = 61 - f  # G_int * K < 2^61 keeps the truncation's |x| < 2^62 precondition
    factor = trace_scale_factor(trace, c.frac_bits)
    alpha = factor * 2.0 ** (c.frac_bits - shift - f)
    scaled_share = None if c.share is None else c.share * np.uint64(factor)
    c_hat = truncate(from_share(session, scaled_share, c.shape, f + shift), shift)

    # 2. subspace iteration with polynomial orthonormalization
    q0, _ = np.linalg.qr(np.random.default_rng(start_seed).standard_normal((d, k)))
    y = matmul_public(c_hat, q0)
    fixed = fix_left(c_hat)  # Ĉ - A opened once; each Ĉ Y then opens only Y - B
    for it in range(plan.iterations):
        if it:
            y = matmul_fixed(fixed, y)
        for _ in range(plan.poly_steps):
            y = _poly_step(y, QUINTIC, QUINTIC_BITS)
        session.party.iteration("subspace iteration", it + 1, plan.iterations)
    # 3. Newton-Schulz polish
    for _ in range(plan.polish_steps):
        y = _poly_step(y, CUBIC, CUBIC_BITS)
    # 4. Rayleigh-Ritz matrix and masking rotation
    h = matmul(y.T, matmul_fixed(fixed, y))
    if rotation is not None:
        y = matmul(y, rotation)
        h = matmul(rotation.T, matmul(h, rotation))
    basis = reveal(y, to)
    ritz = reveal(h, to)
    if basis is None or ritz is None:
        return None
    return _rayleigh_ritz(basis, ritz, trace, alpha, plan)


def _rayleigh_ritz(
    basis: NDArray[np.float64], ritz: NDArray[np.float64], trace: float, alpha: float, plan: IterationPlan
) -> EigResult:
    """Receiver side: orthonormalize the revealed basis and diagonalize the k x k Ritz matrix."""
    singular = np.asarray(np.linalg.svd(basis, compute_uv=False), dtype=np.float64)
    if singular[-1] < 0.5:
        raise ProtocolError(
            f"the revealed basis has a singular value {singular[-1]:.3g} < 0.5: a top-k direction explains "
            f"less than min_ratio={plan.min_ratio} of the variance; rerun with a smaller min_ratio"
        )
    q, r = np.linalg.qr(basis)
    r_inv = np.linalg.inv(r)
    h = r_inv.T @ ((ritz + ritz.T) / 2.0) @ r_inv
    values, vectors = np.linalg.eigh((h + h.T) / 2.0)
    order = np.argsort(values)[::-1]
    components = (q @ vectors[:, order]).T
    pivots = np.argmax(np.abs(components), axis=1)
    signs = np.sign(components[np.arange(components.shape[0]), pivots])
    signs[signs == 0] = 1.0
    components = components * signs[:, None]
    eigenvalues = np.clip(values[order], 0.0, None) / alpha
    return EigResult(components, eigenvalues, trace, plan, alpha, singular)


def run_top_eigenvectors(
    matrix: ArrayLike,
    n_components: int,
    *,
    n_holders: int = 2,
    plan: IterationPlan | None = None,
    frac_bits: int = DEFAULT_FRAC_BITS,
    timeout: float = 120.0,
) -> tuple[EigResult, RunResult]:
    """Share a local symmetric PSD matrix among ``n_holders`` and run :func:`top_eigenvectors` in-process.

    For tests and demos: every check runs before any thread starts. The dealer
    (party ``"dealer"``) is the receiver.
    """
    arr = np.asarray(matrix, dtype=np.float64)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise InputValidationError(f"matrix must be square, got shape {arr.shape}")
    check_finite(arr, "matrix")
    if not np.array_equal(arr, arr.T):
        worst = float(np.max(np.abs(arr - arr.T)))
        raise InputValidationError(f"matrix must be symmetric; max |C - C^T| = {worst:.6g}")
    d = arr.shape[0]
    if isinstance(n_components, bool) or not isinstance(n_components, (int, np.integer)):
        raise InputValidationError(f"n_components must be an integer, got {n_components!r}")
    if not 1 <= n_components <= d:
        raise InputValidationError(
            f"n_components={n_components} is out of range; it must be between 1 and d={d}"
        )
    if isinstance(n_holders, bool) or not isinstance(n_holders, int) or n_holders < 2:
        raise InputValidationError(f"n_holders must be an integer >= 2, got {n_holders!r}")
    plan = plan_iterations(d, int(n_components)) if plan is None else plan
    encoded = FixedPointCodec(frac_bits).encode(arr, n_summands=1, name="matrix")
    shares = split(encoded, n_holders)
    holders = [f"holder{i}" for i in range(n_holders)]

    def role(name: str):
        def run(party: Party) -> EigResult | None:
            session = TensorSession(party, holders=holders, dealer="dealer", frac_bits=frac_bits)
            share = shares[holders.index(name)] if name in holders else None
            shared = from_share(session, share, (d, d))
            return top_eigenvectors(shared, int(n_components), to="dealer", plan=plan)

        return run

    run = run_inprocess({name: role(name) for name in [*holders, "dealer"]}, timeout=timeout)
    return run.outputs["dealer"], run
