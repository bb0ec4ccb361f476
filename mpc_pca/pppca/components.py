"""PPPCA with ``reveal="components"`` or ``reveal="spectrum"``: nobody ever sees the covariance matrix.

Steps 1-2 (mean and N to the server) are the paper's. Step 3 changes: the
providers run only the *share round* of the additive secure sum on their
centred Gram matrices ``X_i^T X_i`` (Liu et al., Alg. 2 steps 5-6), so they
end up holding additive shares of ``G = sum_i X_i^T X_i`` and no one
reconstructs it. Step 8 is then done on shares: the providers, with the server
as the dealer of Beaver triples and truncation masks
(:mod:`protocols.tensor`), run a secure eigensolver and the server receives
only its result, which it sends on as ``T`` as in step 8:

``reveal="components"``
    :func:`protocols.tensor.fast_eig.ladder_eigenvectors` (native engine; tens
    of rounds): the top-k components, their eigenvalues and the total
    variance, plus the public quantities of docs/secure_tensor.md section 8
    (normaliser exponents of the squarings, the powers and the stop decision,
    the convergence bound). With ``eigensolver="krylov"``,
    :func:`protocols.tensor.krylov_eig.krylov_eigenvectors` instead: block
    Krylov with Rayleigh-Ritz on the whole basis, about ``1 / sqrt(gap)``
    blocks where the ladder needs ``1 / gap`` iterations; the holders also see
    the Krylov-space Grams of its docstring. With the CrypTen engine the older subspace
    iteration of :func:`protocols.tensor.eig.top_eigenvectors` runs instead
    (``eigensolver="krylov"`` is refused there).
``reveal="spectrum"``
    :func:`protocols.tensor.spectrum_eig.spectrum_eigenvectors` (O(1) rounds): the
    server sees ``Q C Q^T`` for a Haar-random ``Q`` it does not know, i.e.
    every eigenvalue and nothing else (section 9), and the top-k components.

The providers learn N, the mean, the total variance, ``T`` and the top-k
eigenvalues (which they check, :mod:`mpc_pca.pppca.answer_check`) and, with
``reveal="components"``, the k x k Gram matrices of section 8. The dealer's
masks are independent of the data; a server colluding with any one provider can
unmask that provider's view of every opening, i.e. learns ``G``. With
``dealer="providers"`` (:mod:`mpc_pca.pppca.dealer_free`) the providers make
the masks among themselves and the server deals nothing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.dealer_free import (
    PHASE_OFFLINE,
    await_offline_phase,
    check_dealer,
    metered_offline_phase,
    offline_phase,
    offline_plan,
)
from mpc_pca.roles import SERVER
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.tensor import SharedTensor, TensorSession, share_sum
from protocols.tensor.eig import EigResult, IterationPlan, plan_iterations, top_eigenvectors
from protocols.tensor.fast_eig import FastEigResult, ladder_eigenvectors
from protocols.tensor.fast_eig_math import F as FAST_FRAC_BITS
from protocols.tensor.joint_rotation import prepare_rotations
from protocols.tensor.krylov_eig import krylov_eigenvectors
from protocols.tensor.offline_store import OfflineStore
from protocols.tensor.spectrum_eig import spectrum_eigenvectors

REVEAL_MODES = ("covariance", "components", "spectrum")
#: Modes in which the covariance stays secret-shared (no column scaling, no standardization).
HIDDEN_MODES = ("components", "spectrum")
#: Tensor engines of the eigensolve: this project's (:mod:`protocols.tensor`) or
#: CrypTen's (:mod:`protocols.tensor.crypten_engine`, processes only).
ENGINES = ("native", "crypten")
#: Largest trace of the pooled Gram matrix the scaling step accepts, for ``f`` fractional bits.
_SCALE_HEADROOM_BITS = 61 - 8


@dataclass(frozen=True)
class ComponentsSettings:
    """Public settings of the secure eigensolve (every party agrees on them)."""

    eigengap: float = 0.1
    min_ratio: float = 0.01
    tol: float = 1e-6
    frac_bits: int = 24
    #: Iteration cap of the ladder solver (``reveal="components"``, native engine), or block cap of
    #: the Krylov solver; ``None``: :func:`default_max_iterations` / :func:`default_max_blocks` of ``eigengap``.
    max_iterations: int | None = None
    #: The secure eigensolver of ``reveal="components"``: ``"subspace"`` (the ladder's subspace
    #: iteration) or ``"krylov"`` (block Krylov, :mod:`protocols.tensor.krylov_eig`).
    method: str = "subspace"
    #: Who makes the correlated randomness: ``"server"`` (the dealer) or ``"providers"``
    #: (an offline phase among them, :mod:`mpc_pca.pppca.dealer_free`).
    dealer: str = "server"

    def iteration_cap(self) -> int:
        if self.max_iterations is not None:
            return self.max_iterations
        if self.method == "krylov":
            return default_max_blocks(self.eigengap)
        return default_max_iterations(self.eigengap)

    def plan(self, n_features: int, n_components: int) -> IterationPlan:
        return plan_iterations(
            n_features, n_components, eigengap=self.eigengap, min_ratio=self.min_ratio, tol=self.tol
        )


#: Smallest ``eigengap`` accepted. The ladder's stopping rule divides by ``1 - (1 - g)^q`` (about
#: ``q g``, powers ``q <= 64``): below ``1e-8`` it would need a measured subspace movement under
#: ``tol 64 g = 6.4e-13`` (default ``tol = 1e-6``), finer than the iterate's 40 fractional bits
#: resolve (``2^-40 = 9.1e-13``), so such a solve could only stop at its iteration cap (and
#: ``1 - g`` rounds to 1 in float64 from ``g < 1.1e-16`` on: ``eigengap=1e-300`` divided by zero).
MIN_EIGENGAP = 1e-8
#: Largest ``eigengap`` accepted: ``lambda_{k+1} <= lambda_k / 10``. The stopping rule trusts the
#: assumed contraction ``(1 - g)^q`` without measuring it; beyond 0.9 one measured step would be taken
#: as convergence to within ``(1 - g) / g`` of its own movement (``1e-6`` of it at ``g = 0.999999``,
#: whose answer was 2e-3 off). :func:`check_assumed_gap` refuses an assumption the revealed
#: spectrum contradicts.
MAX_EIGENGAP = 0.9


def check_eigengap(eigengap: object, name: str = "eigengap") -> float:
    """Validate an assumed eigengap: a number in ``[MIN_EIGENGAP, MAX_EIGENGAP]``.

    Examples
    --------
    >>> check_eigengap(0.999999)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: eigengap=0.999999 is out of range; it must lie between 1e-08 and 0.9 (MIN_EIGENGAP and MAX_EIGENGAP: 1 - lambda_{k+1}/lambda_k as the secure eigensolve can use it)
    """
    if isinstance(eigengap, bool) or not isinstance(eigengap, (int, float)):
        raise InputValidationError(f"eigengap={eigengap!r} must be a number")
    if not MIN_EIGENGAP <= eigengap <= MAX_EIGENGAP:  # NaN fails too
        raise InputValidationError(
            f"{name}={eigengap!r} is out of range; it must lie between {MIN_EIGENGAP:g} and {MAX_EIGENGAP:g} "
            "(MIN_EIGENGAP and MAX_EIGENGAP: 1 - lambda_{k+1}/lambda_k as the secure eigensolve can use it)"
        )
    return float(eigengap)


def check_assumed_gap(
    values: NDArray[np.float64], total_variance: float, n_features: int, eigengap: float, eta: float
) -> None:
    """Refuse eigenpairs whose own spectrum shows the assumed eigengap was false.

    The revealed trace bounds the rest of the spectrum: ``lambda_{k+1} >= (tr - sum_{i<=k}
    lambda_i) / (d - k)`` (the largest of the ``d - k`` others is at least their mean). If that exceeds
    ``(1 - eigengap) lambda_k`` plus the eigenvalues' error bound ``eta`` (times ``d - k + 1``), the
    gap ``1 - lambda_{k+1} / lambda_k`` is below the assumed one and the solver's stopping rule
    trusted a contraction that did not happen: the server stops before it sends ``T``.

    Raises
    ------
    ProtocolError
        Naming the assumed eigengap and the largest gap the revealed spectrum allows.
    """
    k = values.shape[0]
    if k >= n_features or k == 0:
        return
    lam_k = float(values[-1])
    rest_mean = (float(total_variance) - float(np.sum(values))) / (n_features - k)
    slack = (n_features - k + 1) * eta / (n_features - k)
    if rest_mean - slack > (1.0 - eigengap) * lam_k:
        largest = 1.0 - rest_mean / lam_k if lam_k > 0 else 0.0
        raise ProtocolError(
            f"the assumed eigengap={eigengap:g} is false for these data: the revealed trace puts "
            f"lambda_{k + 1} >= {rest_mean:.6g} against lambda_{k} = {lam_k:.6g}, a gap of at most "
            f"{max(largest, 0.0):.3g}; no component was sent. Rerun with an eigengap below {max(largest, 0.0):.3g} "
            "(or reveal='spectrum', which assumes no gap)"
        )


#: With ``reveal="components"``, the residual of the secure eigensolve's Ritz pairs is at most
#: about ``tol * λ_1``; the answer check allows this multiple of ``tol`` (and at least ``1e-4``).
COMPONENTS_RESIDUAL_FACTOR = 64.0


def accepted_angle_bound(tol: float) -> float:
    """Largest angle bound of the ladder solver whose answer the answer check can accept: ``max(64 tol, 1e-4)``.

    The Ritz residual ``|C t - lambda t| / lambda_1`` of a basis at angle
    ``theta`` from the top-k eigenspace is at most about ``tan theta``; the
    check (:func:`mpc_pca.pppca.answer_check.relative_error`) allows this
    much. A solve that reaches its iteration cap with a larger bound stops
    before revealing anything (the top-k eigenspace is less separated than
    the assumed eigengap), so an honest server is never blamed for it.
    """
    return max(COMPONENTS_RESIDUAL_FACTOR * tol, 1e-4)


def default_max_iterations(eigengap: float) -> int:
    """Iteration cap of the ladder solver: 20 for ``eigengap >= 0.1`` (at most about 100 rounds in all), up to 100.

    Each iteration costs three rounds; a smaller allowed gap needs proportionally
    more iterations (the contraction per iteration is ``(1 - eigengap)^q``).
    """
    return int(min(100, max(20, math.ceil(2.0 / eigengap))))


#: The secure eigensolvers of ``reveal="components"`` (``eigensolver=``).
EIGENSOLVERS = ("subspace", "krylov")


def check_eigensolver(method: object) -> str:
    """Validate the ``eigensolver`` setting: one of :data:`EIGENSOLVERS`.

    Examples
    --------
    >>> check_eigensolver("lanczos")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: eigensolver='lanczos' is not one of ('subspace', 'krylov')
    """
    if method not in EIGENSOLVERS:
        raise InputValidationError(f"eigensolver={method!r} is not one of {EIGENSOLVERS}")
    return str(method)


def default_max_blocks(eigengap: float) -> int:
    """Block cap of the Krylov solver: ``ceil(ln(1e8) / (2 sqrt(eigengap)))`` between 10 and 100.

    The Chebyshev bound (:func:`protocols.tensor.krylov_math.predicted_blocks`) reaches a
    relative angle ``1e-8`` of the start's in about ``ln(1e8) / (2 sqrt(gamma))`` blocks,
    ``gamma >= eigengap``; the stop rule ends the solve as soon as the measured residual allows
    (five blocks on the 0.75 %-gap case of ``bench_reveal``), so the cap binds only when the
    assumed gap is false.
    """
    return int(min(100, max(10, math.ceil(math.log(1e8) / (2.0 * math.sqrt(eigengap))))))


def components_settings(settings: Mapping[str, Any], reveal: str) -> ComponentsSettings:
    """The secure eigensolve's agreed ``eigengap`` and ``min_ratio`` (defaults where unset), checked.

    Raises
    ------
    InputValidationError
        A value outside ``MIN_EIGENGAP <= eigengap <= MAX_EIGENGAP`` or ``0 < min_ratio <= 1``, or either
        given without ``reveal="components"`` (the only mode that uses them).
    """
    given: dict[str, Any] = {
        key: settings[key]
        for key in ("eigengap", "min_ratio", "eigensolver")
        if settings.get(key) is not None
    }
    method = check_eigensolver(given.pop("eigensolver", ComponentsSettings.method))
    if method != ComponentsSettings.method:
        given["eigensolver"] = method
    if given and reveal != "components":
        raise InputValidationError(
            f"the secure eigensolve's settings ({', '.join(f'{key}={value!r}' for key, value in given.items())}) "
            f"apply only with reveal='components', not reveal={reveal!r}"
        )
    for key, value in given.items():
        if key == "eigensolver":
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InputValidationError(f"{key}={value!r} must be a number")
    eigengap = check_eigengap(given.get("eigengap", ComponentsSettings.eigengap))
    min_ratio = given.get("min_ratio", ComponentsSettings.min_ratio)
    if not 0.0 < min_ratio <= 1.0:
        raise InputValidationError(f"min_ratio={min_ratio!r} is out of range; it must lie in (0, 1]")
    dealer = check_dealer(settings.get("dealer") or ComponentsSettings.dealer, reveal=reveal, method=method)
    return ComponentsSettings(
        eigengap=float(eigengap), min_ratio=float(min_ratio), method=method, dealer=dealer
    )


def hides_covariance(reveal: str) -> bool:
    """Whether ``reveal`` keeps the covariance secret-shared (``"components"`` or ``"spectrum"``)."""
    return reveal in HIDDEN_MODES


def check_reveal(reveal: object) -> str:
    """Validate the ``reveal`` option."""
    if reveal not in REVEAL_MODES:
        raise InputValidationError(f"reveal={reveal!r} is not one of {REVEAL_MODES}")
    return str(reveal)


def check_trace_fits(gram_trace: float, gram_frac_bits: int) -> None:
    """Refuse a pooled Gram matrix whose trace the secure scaling step cannot handle.

    The scaling factor ``floor(2^(61 - f_G) / tr(G))`` must be at least 256 (see
    :func:`protocols.tensor.eig.top_eigenvectors`).
    """
    limit = 2.0 ** (_SCALE_HEADROOM_BITS - gram_frac_bits)
    if gram_trace > limit:
        raise InputValidationError(
            f"the pooled centred Gram matrix has trace {gram_trace:.6g}, above {limit:.6g}, the largest "
            f"the secure eigensolver can scale with {gram_frac_bits} fractional bits; divide the data by a "
            "constant (components are unchanged) or lower frac_bits"
        )


def backend_engine(backend: Any) -> str:
    """The tensor engine of a run: the backend's ``tensor_engine`` capability (``"native"`` if it states none)."""
    return str(getattr(backend, "tensor_engine", "native"))


def _session(
    party: Party,
    providers: tuple[str, ...],
    settings: ComponentsSettings,
    engine: str,
    reveal: str,
    offline: OfflineStore | None = None,
) -> TensorSession:
    if engine not in ENGINES:
        raise InputValidationError(f"engine={engine!r} is not one of {ENGINES}")
    if check_dealer(settings.dealer, reveal=reveal, method=settings.method, engine=engine) == "providers":
        return TensorSession(
            party,
            holders=providers,
            dealer=SERVER,
            frac_bits=FAST_FRAC_BITS,
            rotations="every-holder",
            randomness="providers",
            offline=offline,
        )
    if engine == "crypten":
        if reveal == "spectrum":
            raise InputValidationError("reveal='spectrum' runs on the native tensor engine only")
        if settings.method != "subspace":
            raise InputValidationError(
                f"eigensolver={settings.method!r} runs on the native tensor engine only; with the CrypTen "
                "engine use eigensolver='subspace'"
            )
        from protocols.tensor.crypten_engine import CrypTenTensorSession

        return CrypTenTensorSession(party, holders=providers, dealer=SERVER, frac_bits=settings.frac_bits)
    return TensorSession(party, holders=providers, dealer=SERVER, frac_bits=FAST_FRAC_BITS)


def _solve(
    shared: SharedTensor,
    n_components: int,
    settings: ComponentsSettings,
    engine: str,
    reveal: str,
) -> EigResult | FastEigResult | None:
    d = shared.shape[0]
    if reveal == "spectrum":
        return spectrum_eigenvectors(shared, n_components, to=SERVER)
    if engine == "crypten":
        return top_eigenvectors(shared, n_components, to=SERVER, plan=settings.plan(d, n_components))
    if settings.method == "krylov":
        return krylov_eigenvectors(
            shared,
            n_components,
            to=SERVER,
            eigengap=settings.eigengap,
            tol=settings.tol,
            max_blocks=settings.iteration_cap(),
            accept_tol=accepted_angle_bound(settings.tol),
        )
    return ladder_eigenvectors(
        shared,
        n_components,
        to=SERVER,
        eigengap=settings.eigengap,
        tol=settings.tol,
        max_iterations=settings.iteration_cap(),
        accept_tol=accepted_angle_bound(settings.tol),
    )


def provider_eigensolve(
    party: Party,
    gram: NDArray[np.float64],
    providers: tuple[str, ...],
    n_components: int,
    settings: ComponentsSettings,
    gram_frac_bits: int,
    engine: str = "native",
    reveal: str = "components",
) -> None:
    """Provider side of the modified steps 5-8: share ``X_i^T X_i`` and take part in the solve.

    ``gram`` must be centred at the POOLED mean the server sent (a provider's
    own mean would leave ``n_i (m_i - m)(m_i - m)^T`` in the sum).
    ``engine="crypten"`` computes the products with CrypTen's Beaver code (the
    server still deals every triple and truncation pair). With
    ``settings.dealer == "providers"`` the providers first make every item of
    the solve among themselves (:func:`~mpc_pca.pppca.dealer_free.offline_phase`).
    """
    d = gram.shape[0]
    if settings.dealer == "providers":
        check_dealer(settings.dealer, reveal=reveal, method=settings.method, engine=engine)
        with metered_offline_phase(party):  # data-independent: the items and the masking rotation
            offline = offline_phase(party, providers, d, n_components, settings.iteration_cap(), reveal)
            session = _session(party, providers, settings, engine, reveal, offline)
            prepare_rotations(session, [d if reveal == "spectrum" else n_components])
    else:
        session = _session(party, providers, settings, engine, reveal)
    shared = share_sum(session, gram, shape=(d, d), frac_bits=gram_frac_bits, name="centred Gram matrix")
    _solve(shared, n_components, settings, engine, reveal)


def server_eigensolve(
    party: Party,
    providers: tuple[str, ...],
    n_features: int,
    n_components: int,
    settings: ComponentsSettings,
    gram_frac_bits: int,
    engine: str = "native",
    reveal: str = "components",
    consumer: str | None = None,
) -> EigResult | FastEigResult:
    """Server side: deal triples and masks (unless the providers make them), receive the top-k eigenpairs of ``G``.

    With ``settings.dealer == "providers"`` it first follows the providers'
    offline phase on their leader's reports, relaying them to ``consumer``.
    """
    if settings.dealer == "providers":
        total = len(offline_plan(n_features, n_components, len(providers), settings.iteration_cap(), reveal))
        with party.phase(PHASE_OFFLINE):
            await_offline_phase(party, providers[0], total, relay_to=consumer)
    session = _session(party, providers, settings, engine, reveal)
    d = n_features
    shared = share_sum(session, None, shape=(d, d), frac_bits=gram_frac_bits)
    result = _solve(shared, n_components, settings, engine, reveal)
    if result is None:
        raise ProtocolError("the server received no eigenpairs")
    return result


def components_error_bounds(
    result: EigResult | FastEigResult,
    n_samples: int,
    n_parties: int,
    gram_frac_bits: int,
    settings: ComponentsSettings,
) -> tuple[float, NDArray[np.float64]]:
    """Error bounds of the secure eigensolve (eigenvalues, then each component), in covariance units.

    ``eta`` bounds the spectral norm of the fixed-point error of the matrix
    whose eigenpairs are revealed: the Gram rounding ``d M 2^-(f_G+1)`` (each
    of the M providers' encodings is off by half an ulp per entry), plus the
    solver's own error mapped back by ``1/alpha`` (the scaled copy of ``G`` and
    the truncations: ``result.fixed_point_error``, or one ulp ``2^-f`` per
    entry of ``Ĉ`` times ``d`` for the CrypTen-engine solver), over ``N - 1``.
    ``t`` bounds ``tan`` of the angle between the revealed basis and the top-k
    eigenspace (the ladder's achieved bound, the plan's ``tol`` for the old
    solver, 0 for the spectrum mode, which diagonalises the whole matrix).
    Eigenvalues are off by at most ``eta + lambda_1 t^2`` (Weyl and Rayleigh
    quotients over a subspace at angle theta) and component ``i`` by
    ``sqrt(2) (t + 2 (eta + lambda_1 t) / gap_i)`` (Davis-Kahan), ``gap_i`` its
    distance to the nearest other revealed eigenvalue (the whole spectrum in
    the spectrum mode). Valid when the allowed eigengap holds.
    """
    d = result.components.shape[1]
    scale = 1.0 / (n_samples - 1)
    gram_eta = d * n_parties * 2.0 ** -(gram_frac_bits + 1)
    if isinstance(result, FastEigResult):
        tensor_eta = result.fixed_point_error / result.scale
        t = result.plan.achieved_tol
        reference = result.spectrum if result.spectrum is not None else result.eigenvalues
    else:
        tensor_eta = d * 2.0**-settings.frac_bits / result.scale
        t = result.plan.tol
        reference = result.eigenvalues
    eta = (gram_eta + tensor_eta) * scale
    values = result.eigenvalues * scale
    others_all = np.asarray(reference, dtype=np.float64) * scale
    lam1 = float(values[0]) if values.size else 0.0
    variance_bound = eta + lam1 * t * t
    bounds = np.empty(values.shape[0])
    for i in range(values.shape[0]):
        others = np.delete(others_all, i)
        gap = float(np.min(np.abs(others - values[i]))) if others.size else np.inf
        bounds[i] = (
            min(np.sqrt(2.0), np.sqrt(2.0) * (t + 2.0 * (eta + lam1 * t) / gap)) if gap > 0 else np.sqrt(2.0)
        )
    return variance_bound, bounds
