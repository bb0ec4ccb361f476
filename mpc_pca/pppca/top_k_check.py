"""Check 5 of the server's answer: the eigenpairs sent are the *top* ``k`` (a few secure power steps).

Checks 1-4 (:mod:`mpc_pca.pppca.answer_check`) prove that ``(V, Λ)`` are
eigenpairs of ``R``, the matrix the server eigendecomposed (PPPCA, Liu et al.,
AAAI 2020, Alg. 2 step 8), but not that they are the largest: a server that
sends eigenpairs (2, 3) of standardized wine (4.73, 2.51, 1.45, ...) as the top
two passes them. This check runs Krylov (power) steps on ``C``, the
compression of ``R`` to ``V⊥`` (the orthogonal complement of the ``k`` columns
of ``V``), and compares the largest Ritz value ``θ`` with the smallest
eigenvalue sent, ``λ̂_k``.

Protocol. Provider0 draws ``x`` uniform on the unit sphere of ``V⊥`` from the
operating system's CSPRNG after it holds the server's answer and sends it to
the others (before the digest of check 2, which every
other provider compares before it uses ``x``), so ``x`` is independent of
``(V, Λ)``: the server committed to them before ``x`` existed.
For ``j = 1 .. p`` the providers open ``z_j = R y_{j-1} / λ̂_1`` by one secure
sum of ``d`` numbers (each adds ``a ∘ G_i (a ∘ y) / ((N - 1) λ̂_1)`` with ``G_i``
its centred Gram matrix, as in check 4; the first sum rides on check 4's), with
``y_0 = x`` and ``y_j`` the next Arnoldi vector (``z_j`` orthonormalized against
``V`` and ``y_0 .. y_{j-1}``, computed by provider0 and attached to the opening
it forwards; the others check it is a unit vector orthogonal to both). Every
provider then computes ``θ = λ̂_1 λ_max(sym(Y^T Z))`` and refuses the answer when
``θ > λ̂_k + τ``, ``τ = 4 ε λ̂_1`` plus the check's fixed-point noise (``ε`` the
run's relative error, :func:`~mpc_pca.pppca.answer_check.relative_error`).

Honest server: never refused. ``Y`` has orthonormal columns in ``V⊥``, so
``λ_max(Y^T R Y) <= λ_max(C)``. The honest ``(V, Λ)`` are the exact top-``k``
eigenpairs of a matrix ``R_h`` with ``||R - R_h||_2 <= ε λ̂_1`` (the server's
rounding plus LAPACK's backward error), so ``λ_max(C) <= λ_{k+1}(R_h) + ε λ̂_1
<= λ̂_k + ε λ̂_1``; the opened noise ``E`` moves ``θ`` by at most ``λ̂_1
||E||_F``. No probability is involved.

Cheating server: caught with probability at least ``1 - β``, ``β = 2^-b``
(:data:`FAILURE_BITS`). Let the server send true eigenpairs ``S`` other than the
top ``k``. Then ``λ̂_k = min_S λ <= λ_{k+1}`` and ``V⊥`` holds an eigenvector
``u`` of a missed top eigenvalue, so ``μ = λ_max(C) >= λ_k``. Let ``c`` be the
coordinates of ``x`` in ``C``'s eigenbasis (eigenvalues ``μ_i >= 0``). For any
polynomial ``P`` of degree ``m = p - 1``, ``w = P(C) x`` lies in the Krylov
space, so ``θ >= w^T C w / w^T w = Σ c_i^2 P(μ_i)^2 μ_i / Σ c_i^2 P(μ_i)^2``. Take
``h = g / 2``, ``a = (1 - h) μ`` and ``P(s) = T_m(2 s / a - 1)`` (Chebyshev):
``|P| <= 1`` on ``[0, a]`` and ``P(μ) = T_m(z) >= ζ^m / 2`` with ``z = (1 + h) / (1 -
h)``, ``ζ = z + √(z^2 - 1) = (1 + √h) / (1 - √h)``. Dropping the (non-negative)
terms with ``μ_i <= a`` from the numerator and bounding theirs by ``||x||^2 = 1``
in the denominator, ``θ >= a q / (1 + q)`` with ``q = c_1^2 P(μ)^2``; ``θ >= (1 -
g) μ`` as soon as ``q >= 2 (1 - g) / g``, i.e. when ``c_1^2 ζ^{2m} >= 8 (1 - g) / g``.
For ``x`` uniform on the sphere of dimension ``n = d - k``, ``c_1`` has density at
most ``Γ(n/2) / (√π Γ((n-1)/2)) <= √((n-1)/(2π))``, so ``P(|c_1| <= t) <= t
√(2(n-1)/π) = β`` for ``t = β √(π / (2(n-1)))``. Hence with

    ``p = 1 + ⌈ln(8 (1 - g) / (g t^2)) / (2 ln ζ)⌉``

steps, except with probability ``β``, ``θ >= (1 - g) λ_k`` and the answer is
refused whenever

    ``λ_k - λ_{k+1} > g λ_k + τ``      (g = :data:`RELATIVE_GAP` = 1/4).

After ``n`` steps the Krylov space is invariant, ``θ = μ`` exactly and every
such answer with ``λ_k > λ_{k+1} + τ`` is refused (probability 1), so ``p`` is
capped at ``n`` (:func:`power_steps`): 11 on wine (``d = 13, k = 2``: the cap),
25 at ``d = 100, k = 2``. A server sending approximate eigenpairs gains at most
check 4's tolerance, already in ``τ``. The argument is for exact products; the
opened ones carry fixed-point noise below ``2^-40 λ̂_1`` per entry, which the
honest bound counts and which perturbs the Krylov space of the cheating case
by a like amount (not analysed further: far below any tolerance stated here).

Modes. The check runs with ``reveal="covariance"`` only (:func:`run_steps`),
where the server reconstructs ``R`` anyway. With ``reveal="components"`` or
``"spectrum"`` it does not run and nothing of ``R Y`` is opened: those modes
hide the covariance from everyone, and the products below would show it to
every provider. There the top-``k`` property is not checked by the providers;
it rests on the secure eigensolve run with an honest-but-curious dealer, as
those modes already assume (checks 1-4 and the mean still run).

What the providers learn (nothing on the server's side: it learns no opening):
``x`` and ``Z = R Y / λ̂_1`` for the ``d x p`` matrix ``Y`` (orthonormal columns
spanning the Krylov space ``span{x, C x, ..., C^{p-1} x}`` of ``V⊥``), i.e. the
covariance's action on ``p`` public directions orthogonal to ``T``. When ``p
= d - k`` (wine) that is all of ``R`` restricted to ``V⊥``, hence with ``V`` and
``Λ`` the whole matrix the server eigendecomposed.
"""

from __future__ import annotations

import functools
import math
import secrets

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.check_opening import CheckOpening
from mpc_pca.pppca.components import hides_covariance
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.roles import SERVER
from protocols.errors import ProtocolError
from protocols.triangle import packed_matvec

#: ``b``: a server sending other eigenpairs escapes with probability at most ``2^-b``.
FAILURE_BITS = 20
#: ``g``: the detection guarantee holds when ``λ_k - λ_{k+1} > g λ_k + τ``.
RELATIVE_GAP = 0.25
#: Below this norm (in units of ``λ̂_1``) a new Krylov direction is noise: a fresh one is used.
INVARIANT_NORM = 1e-8


def power_steps(n_features: int, k: int, gap: float = RELATIVE_GAP, failure_bits: int = FAILURE_BITS) -> int:
    """``p``, the number of matrix-vector products: ``min(n, 1 + ⌈ln(8(1-g)/(g t²)) / (2 ln ζ)⌉)`` (module docstring)."""
    n = n_features - k
    if n <= 1:
        return max(n, 0)  # a 1-dimensional V⊥: one product gives its only eigenvalue
    t = 2.0**-failure_bits * math.sqrt(math.pi / (2.0 * (n - 1)))
    root = math.sqrt(gap / 2.0)
    zeta = (1.0 + root) / (1.0 - root)
    degree = math.ceil(math.log(8.0 * (1.0 - gap) / (gap * t * t)) / (2.0 * math.log(zeta)))
    return min(n, 1 + degree)


def run_steps(reveal: str, n_features: int, k: int) -> int:
    """``p`` power steps with ``reveal="covariance"``; none in the hidden modes (nothing of ``R Y`` is opened).

    The products ``R Y`` show the providers the covariance (all of it when ``p = d - k``),
    which ``reveal="components"`` and ``"spectrum"`` hide from everyone; the server
    sees it anyway with ``"covariance"``. In the hidden modes the top-``k`` property
    rests on the secure eigensolve with an honest-but-curious dealer (module docstring).
    """
    return 0 if hides_covariance(reveal) else power_steps(n_features, k)


def complement_basis(basis: NDArray[np.float64]) -> NDArray[np.float64]:
    """An orthonormal basis ``Q`` of the span of ``V``'s columns (to project onto ``V⊥``)."""
    q, _ = np.linalg.qr(basis)
    return np.asarray(q)


def _orthogonalize(w: NDArray[np.float64], *blocks: NDArray[np.float64]) -> NDArray[np.float64]:
    """``w`` minus its components along the columns of ``blocks`` (twice: classical Gram-Schmidt, reorthogonalized)."""
    for _ in range(2):
        for block in blocks:
            if block.size:
                w = w - block @ (block.T @ w)
    return w


def start_vector(q: NDArray[np.float64]) -> NDArray[np.float64]:
    """``x`` uniform on the unit sphere of ``V⊥``: a CSPRNG Gaussian (Box-Muller), projected, normalized."""
    d = q.shape[0]
    while True:
        words = np.frombuffer(secrets.token_bytes(16 * d), dtype="<u8").reshape(2, d)
        u = np.ldexp(((words >> np.uint64(11)) + np.uint64(1)).astype(np.float64), -53)  # (0, 1]
        gauss = np.sqrt(-2.0 * np.log(u[0])) * np.cos(2.0 * math.pi * u[1])
        x = _orthogonalize(gauss, q)
        norm = float(np.linalg.norm(x))
        if norm > 1e-6:
            return np.asarray(x / norm)


def next_direction(
    z: NDArray[np.float64], q: NDArray[np.float64], directions: NDArray[np.float64]
) -> NDArray[np.float64]:
    """The next Arnoldi vector: ``z`` orthonormalized against ``V`` and the previous directions.

    When the Krylov space is (numerically) invariant, the unit vector with the
    largest part left outside ``V`` and the previous directions is used instead
    (that part is at least ``sqrt(r / d)`` when ``r`` dimensions are left): any
    orthonormal ``Y`` in ``V⊥`` keeps the honest bound.
    """
    w = _orthogonalize(z, q, directions)
    norm = float(np.linalg.norm(w))
    if norm > INVARIANT_NORM:
        return np.asarray(w / norm)
    basis = np.concatenate([q, directions], axis=1) if directions.size else q
    inside = np.einsum("ij,ij->i", basis, basis)  # ||B^T e_i||^2: each unit vector's part inside the span
    unit = np.zeros(z.shape[0])
    unit[int(np.argmin(inside))] = 1.0
    w = _orthogonalize(unit, q, directions)
    norm = float(np.linalg.norm(w))
    if norm > INVARIANT_NORM:
        return np.asarray(w / norm)
    raise ProtocolError("no direction is left outside T and the previous directions")


def check_direction(
    y: NDArray[np.float64], q: NDArray[np.float64], directions: NDArray[np.float64], sender: str
) -> None:
    """Refuse a forwarded direction that is not a unit vector orthogonal to ``V`` and the previous ones."""
    off = float(np.max(np.abs(np.concatenate([q.T @ y, directions.T @ y])), initial=0.0))
    if not (abs(float(np.linalg.norm(y)) - 1.0) <= 1e-9 and off <= 1e-9):
        raise ProtocolError(
            f"{sender!r} sent a power-step direction that is not a unit vector orthogonal to T and the previous "
            f"ones (norm {float(np.linalg.norm(y)):.6g}, largest overlap {off:.3g})"
        )


def ritz_value(directions: NDArray[np.float64], images: NDArray[np.float64]) -> float:
    """``λ_max(sym(Y^T Z))``: the largest Ritz value of the opened products, in units of ``λ̂_1``."""
    h = directions.T @ images
    return float(np.linalg.eigvalsh((h + h.T) / 2.0)[-1]) if h.size else 0.0


def verify_top(
    theta: float,
    eigenvalues: NDArray[np.float64],
    lam1: float,
    relative: float,
    noise: float,
    reporter: str | None,
) -> None:
    """Refuse the answer when the data varies more off ``T`` than along its last column.

    ``theta`` is the Ritz value in units of ``λ̂_1``; ``relative`` the run's
    relative error ``ε``; ``noise`` bounds ``||E||_F`` of the opened products
    (units of ``λ̂_1``). Allowed: ``θ λ̂_1 <= λ̂_k + (4 ε + noise) λ̂_1``.
    """
    smallest = float(eigenvalues[-1])
    allowed = smallest + (4.0 * relative + noise) * lam1
    if not theta * lam1 <= allowed:
        source = "" if reporter is None else f" (as opened and reported by {reporter})"
        raise ProtocolError(
            f"{SERVER!r} sent eigenpairs that are not the top {eigenvalues.shape[0]}{source}: the data has "
            f"variance at least {theta * lam1:.6g} along a direction orthogonal to T, above its smallest "
            f"eigenvalue {smallest:.6g} (allowed {allowed:.6g}); refusing to use its T"
        )


def gram_times(
    stats: LocalStatistics, mean: NDArray[np.float64], x: NDArray[np.float64]
) -> NDArray[np.float64]:
    """``(X_i - mean)^T (X_i - mean) x`` from the packed scatter, without a ``d x d`` matrix."""
    shift = stats.local_mean - mean
    product = packed_matvec(stats.scatter_triangle, np.asarray(x, dtype=np.float64))
    return np.asarray(product + stats.n_rows * shift * float(shift @ x))


def product(
    stats: LocalStatistics,
    mean: NDArray[np.float64],
    a_hat: NDArray[np.float64],
    y: NDArray[np.float64],
    n_total: int,
) -> NDArray[np.float64]:
    """This provider's share of check 5's ``R y / λ_1``: ``a ∘ G_i (a ∘ y) / ((N - 1) λ_1)``."""
    return np.asarray(a_hat * gram_times(stats, mean, a_hat * y) / (n_total - 1))


def power_products(
    opening: CheckOpening,
    stats: LocalStatistics,
    mean: NDArray[np.float64],
    a_hat: NDArray[np.float64],
    n_total: int,
    q: NDArray[np.float64],
    start: NDArray[np.float64],
    first: tuple[NDArray[np.float64], NDArray[np.float64]],
    steps: int,
) -> None:
    """Check 5's Arnoldi steps: ``Y`` and ``Z = R Y / λ_1`` on ``opening`` (``directions``, ``images``).

    ``first`` is the first product ``R x / λ_1`` (opened with check 4) and the
    direction provider0 attached to it. Provider0 computes each next direction
    from the opened product and attaches it to the forwarded opening; the others
    check it is a unit vector orthogonal to ``T`` and the previous directions.
    """
    directions, images = [start], [first[0]]
    pending = first[1]
    for step in range(1, steps):
        if opening.party.name != opening.first:
            check_direction(pending, q, np.stack(directions, axis=1), opening.first)
        directions.append(pending)
        more = step < steps - 1
        attach = (
            functools.partial(next_direction, q=q, directions=np.stack(directions, axis=1)) if more else None
        )
        image, pending = opening.open(
            product(stats, mean, a_hat, pending, n_total), attach=attach, extra=q.shape[0] if more else 0
        )
        images.append(image)
    opening.directions = np.stack(directions, axis=1)
    opening.images = np.stack(images, axis=1)


def _next_after(
    z: NDArray[np.float64], q: NDArray[np.float64], done: NDArray[np.float64]
) -> NDArray[np.float64]:
    return next_direction(z, q, done)


def check_selection(
    eigenvalues: NDArray[np.float64], total: float, rule: object, limit: int, tolerance: float
) -> None:
    """With a variance fraction as the rule (the server chooses ``k``), refuse a ``k`` other than the rule's.

    scikit-learn's rule (:func:`mpc_pca.linalg.components_for_ratio`): the fewest
    components whose explained variance ratio exceeds the fraction, at most
    ``limit = min(d, N)``. With the top ``k`` eigenvalues proved (checks 4 and 5)
    and the total (check 4), the providers recompute it up to ``tolerance`` (absolute,
    per eigenvalue). ``"mle"`` needs every eigenvalue: not checked.
    """
    if not isinstance(rule, float) or total <= tolerance:
        return
    k = eigenvalues.shape[0]
    kept = np.cumsum(eigenvalues) / total
    slack = k * tolerance / total
    few = k < limit and kept[-1] <= rule - slack
    many = k >= 2 and kept[-2] > rule + slack
    if few or many:
        raise ProtocolError(
            f"{SERVER!r} chose k={k} components for the variance fraction {rule!r}, but its eigenvalues keep "
            f"{kept[-1]:.6g} of the variance with {k}"
            + (f" and {kept[-2]:.6g} with {k - 1}" if k >= 2 else "")
            + "; refusing to use its T"
        )
