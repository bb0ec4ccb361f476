"""PPPCA's fixed-point error bounds and the range and precision checks made before a run.

The ring sum of M encodings is off by at most ``M 2^-(f+1)`` per entry;
:func:`gram_entry_error` turns that into the error of every entry of the
pooled Gram matrix in the data's units, :func:`rounding_error_bounds` into
how far the top-k eigenvectors can turn (Weyl, Davis-Kahan), and
:func:`check_ring_range` / :func:`check_precision` refuse, before anything is
sent, data that would leave the ring or keep too few significant bits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.components import backend_engine, hides_covariance
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.scaling import gram_scale_exponent, sums_scale_exponent
from protocols.backends import SecureSumBackend
from protocols.encoding import FixedPointCodec
from protocols.errors import InputValidationError

if TYPE_CHECKING:
    from mpc_pca.pppca.config import PPPCAConfig

STATS_NAME = "column sums and row count"
GRAM_NAME = "centred Gram matrix X_i^T X_i"


def components_gram_bits(backend: SecureSumBackend) -> int:
    """Fractional bits of the Gram shares with ``reveal="components"``.

    The backend's own with the native engine. With the CrypTen engine the Gram
    matrix is shared by :func:`protocols.tensor.share_sum` in Z_2^64 (not by the
    crypten secure-sum backend), with at least the project's default 20 bits:
    CrypTen's 16 would leave fewer than 20 significant bits of the unscaled
    covariance of e.g. standardized wine (this mode has no column scaling).
    """
    f = backend.codec.frac_bits
    if backend_engine(backend) == "crypten":
        return max(f, FixedPointCodec().frac_bits)
    return f


def gram_shift_of(config: PPPCAConfig, frac_bits: int, n_samples: int) -> int:
    """``B`` of the run: 0 with the covariance hidden (the eigensolver's own scaling), else as agreed."""
    if hides_covariance(config.reveal):
        return 0
    return gram_scale_exponent(config.n_parties, frac_bits, n_samples)


def gram_entry_error(config: PPPCAConfig, frac_bits: int, n_samples: int) -> NDArray[np.float64]:
    """``u`` with ``|rounding error of G_jk| <= u_j u_k`` in the data's units.

    The ring sum of M encodings is off by at most ``M 2^-(f+1)`` per entry; the
    scaling by ``2^B`` and ``diag(2^E)`` (:mod:`mpc_pca.pppca.scaling`) turns
    that into ``M 2^-(f+1) 2^-B 2^(E_j + E_k)``.
    """
    shift = gram_shift_of(config, frac_bits, n_samples)
    base = np.sqrt(config.n_parties * 2.0 ** -(frac_bits + 1 + shift))
    return base * np.ldexp(1.0, np.asarray(config.exponents, dtype=np.int64))


def rounding_error_bounds(eigenvalues: NDArray[np.float64], k: int, eta: float) -> NDArray[np.float64]:
    """How far fixed-point rounding can move the top-k eigenvectors.

    ``eta`` bounds the spectral norm of the error ``E`` of the server's matrix
    (:func:`mpc_pca.pppca.standardize.server_matrix`; with no scaling and no
    standardization it is ``d M 2^-(f+1) / (N - 1)``).
    Eigenvalues move by at most ``eta`` (Weyl); eigenvector ``i`` turns by
    ``sin(theta_i) <= 2 eta / gap_i`` (Davis-Kahan, Yu-Wang-Samworth form) with
    ``gap_i`` its distance to the nearest other eigenvalue, so after sign
    alignment its entries differ by at most ``sqrt(2) sin(theta_i)``.

    ``eigenvalues`` (decreasing) may be only the ``k + 1`` largest: the nearest
    neighbour of each of the top ``k`` is among them.
    """
    bounds = np.empty(k)
    for i in range(k):
        others = np.delete(eigenvalues, i)
        gap = float(np.min(np.abs(others - eigenvalues[i]))) if others.size else np.inf
        bounds[i] = min(np.sqrt(2.0), np.sqrt(2.0) * 2 * eta / gap) if gap > 0 else np.sqrt(2.0)
    return bounds


def check_ring_range(
    stats: Sequence[LocalStatistics], backend: SecureSumBackend, config: PPPCAConfig
) -> None:
    """Check, before anything is sent, that no provider's payload can overflow the ring.

    ``stats`` are the providers' statistics of the normalized rows ``Y``
    (:func:`mpc_pca.pppca.scaling.normalized`). The first payload
    ``2^A [s_i, n_i]`` is checked exactly. For the centred Gram matrix,
    ``|G_jk| <= max_j G_jj`` (Cauchy-Schwarz), so its diagonal, which each
    provider gets from its local statistics in O(d), bounds every entry.
    """
    m = len(stats)
    f = backend.codec.frac_bits
    n_samples = sum(s.n_rows for s in stats)
    mean = np.sum([s.column_sums for s in stats], axis=0) / n_samples
    shift = sums_scale_exponent(m, f)
    gram_shift = gram_shift_of(config, f, n_samples)
    for i, st in enumerate(stats):
        backend.check_input(np.ldexp(st.sums_and_count(), shift), m, f"{STATS_NAME} of provider{i}")
        backend.check_input(
            np.ldexp(st.centred_gram_diagonal(mean), gram_shift), m, f"{GRAM_NAME} (diagonal) of provider{i}"
        )


#: Significant bits the server's matrix must keep after fixed-point rounding.
MIN_SIGNIFICANT_BITS = 20


def check_precision(eta: float, largest_diagonal: float, config: PPPCAConfig) -> None:
    """Refuse data whose covariance fixed-point rounding would swamp.

    ``eta`` bounds the spectral norm of the rounding error of the server's
    matrix (:func:`mpc_pca.pppca.standardize.server_matrix`); it must stay
    below ``2^-MIN_SIGNIFICANT_BITS`` (about 1e-6) of the matrix's largest
    diagonal entry. With the per-column scaling of :mod:`mpc_pca.pppca.scaling`
    this fails only when a column's offset dwarfs its spread (e.g. values
    ``1e12 + noise``: the scale is set by the largest magnitude, the
    covariance by the spread); subtracting a rough per-column offset from every
    row first (any constant: components and variances do not change) fixes it.
    """
    if largest_diagonal > 0 and eta <= 2.0**-MIN_SIGNIFICANT_BITS * largest_diagonal:
        return
    if largest_diagonal <= 0:
        raise InputValidationError(
            "every column is constant over the pooled rows; there is no variance to analyse"
        )
    raise InputValidationError(
        f"the fixed-point rounding error bound {eta:.3g} of the {config.n_features}x{config.n_features} "
        f"covariance is not below 2^-{MIN_SIGNIFICANT_BITS} of its largest diagonal entry "
        f"{largest_diagonal:.3g}: fewer than {MIN_SIGNIFICANT_BITS} significant bits would be left. "
        "The columns' offsets dwarf their spread; subtract a rough per-column offset (e.g. a typical "
        "value of each column) from every row before the run: components and variances are unchanged"
    )
