"""PPPCA with ``reveal="components"``: nobody ever sees the covariance matrix.

Steps 1-2 (mean and N to the server) are the paper's. Step 3 changes: the
providers run only the *share round* of the additive secure sum on their
centred Gram matrices ``X_i^T X_i`` (Liu et al., Alg. 2 steps 5-6), so they
end up holding additive shares of ``G = sum_i X_i^T X_i`` and no one
reconstructs it. Step 8 is then done on shares: the providers, with the server
as the dealer of Beaver triples and truncation masks
(:mod:`protocols.tensor`), run the secure subspace iteration of
:func:`protocols.tensor.eig.top_eigenvectors`, and only the top-k components,
their eigenvalues and the total variance ``tr(G) / (N - 1)`` are revealed to
the server, which sends ``T`` to the providers as in step 8.

Who learns what: the server learns N, the mean, the total variance and the
top-k components and eigenvalues, plus a Haar-random rotation of the revealed
basis; the providers learn N, the mean, the total variance, ``T`` and the top-k
eigenvalues (which they check, :mod:`mpc_pca.pppca.answer_check`). The
dealer's masks are independent of the data; a server colluding with any one
provider can unmask that provider's view of every opening, i.e. learns ``G``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.roles import SERVER
from protocols.errors import InputValidationError, ProtocolError
from protocols.party import Party
from protocols.tensor import TensorSession, share_sum
from protocols.tensor.eig import EigResult, IterationPlan, plan_iterations, top_eigenvectors

REVEAL_MODES = ("covariance", "components")
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

    def plan(self, n_features: int, n_components: int) -> IterationPlan:
        return plan_iterations(
            n_features, n_components, eigengap=self.eigengap, min_ratio=self.min_ratio, tol=self.tol
        )


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
    party: Party, providers: tuple[str, ...], settings: ComponentsSettings, engine: str
) -> TensorSession:
    if engine not in ENGINES:
        raise InputValidationError(f"engine={engine!r} is not one of {ENGINES}")
    if engine == "crypten":
        from protocols.tensor.crypten_engine import CrypTenTensorSession

        return CrypTenTensorSession(party, holders=providers, dealer=SERVER, frac_bits=settings.frac_bits)
    return TensorSession(party, holders=providers, dealer=SERVER, frac_bits=settings.frac_bits)


def provider_eigensolve(
    party: Party,
    gram: NDArray[np.float64],
    providers: tuple[str, ...],
    n_components: int,
    settings: ComponentsSettings,
    gram_frac_bits: int,
    engine: str = "native",
) -> None:
    """Provider side of the modified steps 5-8: share ``X_i^T X_i`` and take part in the solve.

    ``engine="crypten"`` computes the products with CrypTen's Beaver code (the
    server still deals every triple and truncation pair).
    """
    session = _session(party, providers, settings, engine)
    d = gram.shape[0]
    shared = share_sum(session, gram, shape=(d, d), frac_bits=gram_frac_bits, name="centred Gram matrix")
    top_eigenvectors(shared, n_components, to=SERVER, plan=settings.plan(d, n_components))


def server_eigensolve(
    party: Party,
    providers: tuple[str, ...],
    n_features: int,
    n_components: int,
    settings: ComponentsSettings,
    gram_frac_bits: int,
    engine: str = "native",
) -> EigResult:
    """Server side: deal triples and masks, receive the top-k eigenpairs of ``G`` (not ``G``)."""
    session = _session(party, providers, settings, engine)
    d = n_features
    shared = share_sum(session, None, shape=(d, d), frac_bits=gram_frac_bits)
    result = top_eigenvectors(shared, n_components, to=SERVER, plan=settings.plan(d, n_components))
    if result is None:
        raise ProtocolError("the server received no eigenpairs")
    return result


def components_error_bounds(
    result: EigResult, n_samples: int, n_parties: int, gram_frac_bits: int, settings: ComponentsSettings
) -> tuple[float, NDArray[np.float64]]:
    """Error bounds of the secure eigensolve, valid when the allowed eigengap holds.

    ``eta`` bounds the spectral norm of the fixed-point error in the scaled
    covariance: the Gram rounding ``d M 2^-(f_G+1)`` plus one truncation ulp
    ``2^-f`` per entry of ``Ĉ`` (times ``d``), mapped back by ``1/alpha``. With
    ``t = tol`` (the plan's bound on ``tan theta``, which assumes
    ``lambda_{k+1} <= (1 - eigengap) lambda_k``), eigenvalues are off by at most
    ``eta + lambda_1 t^2`` (Rayleigh quotients over a subspace at angle theta),
    and component ``i`` by ``sqrt(2) (t + 2 (eta + lambda_1 t) / gap_i)`` where
    ``gap_i`` is its distance to the nearest other revealed eigenvalue (the
    Ritz step separates the components inside the subspace, Davis-Kahan).
    """
    d = result.components.shape[1]
    scale = 1.0 / (n_samples - 1)
    gram_eta = d * n_parties * 2.0 ** -(gram_frac_bits + 1)
    tensor_eta = d * 2.0**-settings.frac_bits / result.scale
    eta = (gram_eta + tensor_eta) * scale
    values = result.eigenvalues * scale
    t = result.plan.tol
    lam1 = float(values[0]) if values.size else 0.0
    variance_bound = eta + lam1 * t * t
    bounds = np.empty(values.shape[0])
    for i in range(values.shape[0]):
        others = np.delete(values, i)
        gap = float(np.min(np.abs(others - values[i]))) if others.size else np.inf
        bounds[i] = (
            min(np.sqrt(2.0), np.sqrt(2.0) * (t + 2.0 * (eta + lam1 * t) / gap)) if gap > 0 else np.sqrt(2.0)
        )
    return variance_bound, bounds
