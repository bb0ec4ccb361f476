"""pppca-dp: differential privacy added inside PPPCA's secure sum, with exact integer noise in the ring.

PPPCA (Liu et al., AAAI 2020, Alg. 1/2) lets the server reconstruct the exact
pooled covariance. Here every provider adds **its share of Analyze-Gauss noise**
(Dwork, Talwar, Thakurta & Zhang, STOC 2014) to its own payload, in the
fixed-point ring, before the secure sum; the server reconstructs only the
noisy sums, never the exact covariance, and no trusted noise generator is
needed (compare capePCA, JSTSP 2018).

Flow (M providers, a server; any backend of :mod:`protocols.backends`
working in the 64-bit fixed-point ring: additive shares, pairwise masks,
Paillier):

1. each provider clips its rows to norm ``<= 1`` (warning locally with the
   count, :class:`~mpc_pca.validation.RowsClippedWarning`; the count is never
   sent), rounds every entry to ``r = frac_bits / 2`` fractional bits
   (integers ``x_int`` with ``||x_int|| <= B = 2^r + sqrt(d)/2``), and
   computes **exactly in integers** its column sums ``s_i`` and Gram matrix
   ``G_i = X_int^T X_int`` (already at the ring's scale ``2^frac_bits``);
2. secure sum of ``[s_i + e_i, n_i]`` (only with ``centre=True``): the server
   learns ``s + e`` and ``N``;
3. secure sum of the upper triangle of ``G_i + E_i``: the server learns
   ``G + E``;
4. server: ``C = (G + E - (s + e)(s + e)^T / N) / (N - 1)`` (or, with
   ``centre=False``, the second moment ``(G + E) / N`` of data the caller
   centred beforehand), top-``k`` eigenvectors, sent to the providers.

Noise. ``e_i`` and ``E_i`` are i.i.d. discrete Gaussians ``N_Z(0, sigma^2 / h)``
per entry, drawn exactly from :mod:`secrets` (:mod:`protocols.dp.discrete_gaussian`,
Canonne, Kamath & Steinke 2020), added to the integer payload, and carried to the
backend as ``integer / 2^frac_bits`` (exact in float64 below ``2^53``, so the
backend's encoding gives back the same ring integer): no floating-point sampler
or rounding touches the noise.

Neighbours and sensitivity (in ring units). Replace-one: ``N`` is public and one
row ``x`` becomes ``x'``. Then ``G`` changes by ``x_int x_int^T - x'_int x'_int^T``,
whose Frobenius norm (which bounds the upper triangle's L2 norm) is at most
``sqrt(2) B^2``, and ``s`` (at scale ``2^r`` in the ring) by at most
``2 B 2^r``. The centred scatter matrix is a post-processing of ``(s, G)`` and
``N``, so it needs no sensitivity of its own; the mean ``(s + e) / N`` is
**released noisily** and paid for: the two releases together are one Gaussian
mechanism with unit-noise sensitivity
``sqrt((Delta_s / sigma_s)^2 + (Delta_G / sigma_G)^2)``; a fraction
``mean_share`` of its square goes to the sums and the rest to ``G``, i.e.
``sigma_s = Delta_s u / sqrt(w)``, ``sigma_G = Delta_G u / sqrt(1 - w)`` with
``u`` the calibrated ``sigma / Delta`` (analytic Gaussian by default,
:mod:`protocols.dp.calibration`). With ``centre=False`` nothing but ``G + E``
is released and ``sigma_G = Delta_G u``: exactly pooled Analyze Gauss.

Discrete versus continuous noise. ``N_Z(0, sigma^2)^d`` is
``Delta^2 / (2 sigma^2)``-zCDP (CKS 2020) and its ``(epsilon, delta)``
curve is the continuous Gaussian's up to terms of order
``exp(-2 pi^2 sigma^2 / ...)`` (CKS 2020); a sum of independent discrete
Gaussians is within ``tau`` of one (Kairouz, Liu & Steinke, ICML 2021,
:func:`protocols.dp.discrete_gaussian.discrete_sum_slack`). Here ``sigma`` is
``> 10^5`` ring units, where those terms underflow to 0 in float64; the
guarantee is stated as the analytic Gaussian's ``(epsilon, delta)``. That
statement rests on the cited results, not on a bound computed here; the
zCDP statement (``rho = 1 / (2 u^2)``, what :mod:`protocols.dp.accounting`
charges) needs no continuous approximation, only the sum slack ``tau`` (0 here).

Collusion threshold ``h = min_honest``. Each provider adds variance
``sigma^2 / h``, so the noise of any ``h`` honest providers alone has variance
``sigma^2``: the release is ``(epsilon, delta)``-DP against the server
colluding with up to ``M - h`` providers (who can subtract their own noise).
With ``c > M - h`` colluders the remaining noise has variance
``(M - c) sigma^2 / h``, i.e. ``sigma`` shrinks by ``sqrt((M - c) / h)``;
:meth:`DPSumPlan.epsilon_with_colluders` gives the exact ``epsilon`` then.
The server, honest, sees total variance ``M sigma^2 / h``: ``h = M`` (default)
is pooled-AG noise with no collusion tolerance, ``h = 1`` tolerates ``M - 1``
colluders at ``M`` times the variance.

Trust: honest-but-curious parties. The server learns ``N``, the noisy sums and
the noisy Gram matrix; providers learn ``T``.
"""

from __future__ import annotations

import math
import random
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from numbers import Integral, Real
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.linalg import top_eigenpairs
from mpc_pca.pppca.dp_rounding import check_row_rounding
from mpc_pca.roles import SERVER, provider_names
from mpc_pca.row_norms import clip_rows, clipped_hint
from mpc_pca.validation import RowsClippedWarning, check_n_components, check_parts
from protocols.backends import SecureSumBackend
from protocols.dp.accounting import PrivacyAccountant, charge_gaussian
from protocols.dp.calibration import (
    analytic_gaussian_epsilon,
    check_delta_value,
    check_epsilon_value,
    gaussian_sigma,
)
from protocols.dp.discrete_gaussian import RandBelow, sample_discrete_gaussian
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.party import Party

SUMS_NAME = "noisy column sums and row count"
GRAM_NAME = "noisy Gram matrix X_i^T X_i"

#: Fractional bits of pppca-dp's ring encoding by default: rows get 16 bits, the Gram matrix 32.
DEFAULT_FRAC_BITS = 32
#: Largest magnitude a float64 carries exactly as an integer.
_FLOAT_EXACT = 2**53


@dataclass(frozen=True)
class DPSumPlan:
    """The public noise plan every party agrees on before a pppca-dp run.

    Attributes are in ring units (multiples of ``2^-frac_bits``) unless noted.
    """

    n_parties: int
    n_features: int
    epsilon: float
    delta: float
    frac_bits: int
    min_honest: int
    centre: bool = True
    mean_share: float = 0.1
    calibration: str = "analytic"

    @property
    def row_bits(self) -> int:
        """``r``: fractional bits of each row entry, half the ring's."""
        return self.frac_bits // 2

    @property
    def row_bound(self) -> float:
        """``B = 2^r + sqrt(d)/2``: bound on ``||x_int||`` for ``||x|| <= 1`` after rounding."""
        return 2.0**self.row_bits + math.sqrt(self.n_features) / 2.0

    @property
    def gram_sensitivity(self) -> float:
        """L2 sensitivity of the Gram triangle under replace-one: ``sqrt(2) B^2``."""
        return math.sqrt(2.0) * self.row_bound**2

    @property
    def sums_sensitivity(self) -> float:
        """L2 sensitivity of the column sums at ring scale: ``2 B 2^r``."""
        return 2.0 * self.row_bound * 2.0**self.row_bits

    @property
    def unit_sigma(self) -> float:
        """``sigma / Delta`` of the combined release (0 for ``epsilon = inf``)."""
        return gaussian_sigma(1.0, self.epsilon, self.delta, self.calibration)

    @property
    def gram_sigma(self) -> float:
        """Total noise standard deviation per Gram entry that ``h`` honest providers guarantee."""
        share = 1.0 - self.mean_share if self.centre else 1.0
        return self.gram_sensitivity * self.unit_sigma / math.sqrt(share)

    @property
    def sums_sigma(self) -> float:
        """Total noise standard deviation per column sum that ``h`` honest providers guarantee."""
        if not self.centre:
            return 0.0
        return self.sums_sensitivity * self.unit_sigma / math.sqrt(self.mean_share)

    def provider_variance(self, sigma: float) -> Fraction:
        """Each provider's discrete-Gaussian variance ``sigma^2 / h`` as an exact fraction."""
        return Fraction(sigma) ** 2 / self.min_honest

    def server_std(self, sigma: float) -> float:
        """Standard deviation of the noise the server's sum carries: ``sigma sqrt(M / h)``."""
        return sigma * math.sqrt(self.n_parties / self.min_honest)

    def epsilon_with_colluders(self, colluders: int) -> float:
        """``epsilon`` (at the same ``delta``) against the server plus ``colluders`` providers.

        ``epsilon`` while ``M - colluders >= h``; beyond, the exact analytic
        Gaussian ``epsilon`` for noise ``sigma sqrt((M - c) / h)``; ``inf`` when
        every provider colludes.
        """
        if (
            isinstance(colluders, bool)
            or not isinstance(colluders, Integral)
            or not 0 <= colluders <= self.n_parties
        ):
            raise InputValidationError(
                f"colluders={colluders!r} must be an integer from 0 to {self.n_parties}"
            )
        honest = self.n_parties - int(colluders)
        if math.isinf(self.epsilon) or honest >= self.min_honest:
            return self.epsilon
        if honest == 0:
            return math.inf
        return analytic_gaussian_epsilon(
            self.unit_sigma * math.sqrt(honest / self.min_honest), 1.0, self.delta
        )


@dataclass
class DPSumModel:
    """What the server computes: the noisy statistics and the released subspace."""

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    n_samples: int
    noisy_sums: NDArray[np.float64]
    noisy_gram: NDArray[np.float64]
    matrix: NDArray[np.float64]
    total_variance: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def mean(self) -> NDArray[np.float64]:
        """The noisy pooled mean ``(s + e) / N`` (zeros without centring)."""
        return self.noisy_sums / self.n_samples


# -- local preparation ---------------------------------------------------------------


def clip_rows_locally(data: NDArray[np.float64], index: int) -> NDArray[np.float64]:
    """Scale rows longer than 1 to norm 1 at the provider, warning with the count (never sent).

    :func:`mpc_pca.row_norms.clip_rows` (shared with the DP family): every
    row longer than 1 is rescaled, and only rows longer than ``1 + 1e-9``
    (not round-off of data already scaled to norm 1) are counted and warned about.
    """
    out, count = clip_rows(data)
    if count == 0:
        return out
    warnings.warn(
        f"provider{index}: {count} of {data.shape[0]} rows had norm > 1 and were clipped to norm 1 "
        "before the DP noise (local information, not sent to any party); the released subspace is "
        f"that of the clipped rows; {clipped_hint(count, data.shape[0], row_norm_option=False)}",
        RowsClippedWarning,
        stacklevel=3,
    )
    return out


@dataclass(frozen=True)
class IntegerStatistics:
    """A provider's exact integer column sums (scale ``2^r``) and Gram triangle (scale ``2^(2r)``)."""

    n_rows: int
    sums: NDArray[np.int64]
    gram_triangle: NDArray[np.int64]

    @classmethod
    def of(cls, data: NDArray[np.float64], row_bits: int) -> IntegerStatistics:
        """Round rows (norm <= 1) to ``row_bits`` fractional bits; sums and Gram exactly in int64."""
        rows = np.rint(data * float(2**row_bits)).astype(np.int64)
        gram = rows.T @ rows  # exact: |entries| <= n B^2 < 2^63 (checked by the caller)
        upper = np.triu_indices(data.shape[1])
        return cls(int(data.shape[0]), rows.sum(axis=0), np.ascontiguousarray(gram[upper]))


def carrier(ring_integers: NDArray[np.int64], frac_bits: int, name: str) -> NDArray[np.float64]:
    """``integers / 2^frac_bits`` as float64, exact (the backend's encoding returns the same integers)."""
    peak = int(np.max(np.abs(ring_integers))) if ring_integers.size else 0
    if peak >= _FLOAT_EXACT:
        raise InputValidationError(
            f"{name} has a ring value of magnitude {peak} >= 2^53, which float64 cannot carry exactly; "
            "use fewer frac_bits or fewer rows per provider"
        )
    return ring_integers.astype(np.float64) / float(2**frac_bits)


# -- roles ------------------------------------------------------------------------------


def noise_source(rng: np.random.Generator | None) -> RandBelow | None:
    """A provider's source of uniform integers for its discrete Gaussian noise.

    ``None`` (no noise seed: the private default) draws from :mod:`secrets`;
    a generator (a known noise seed) seeds a deterministic source from it, so
    a run with the same seed adds the same noise: experiments only, not private.
    """
    if rng is None:
        return None
    return random.Random(int.from_bytes(rng.bytes(32), "big")).randrange


def provider_role(
    party: Party,
    stats: IntegerStatistics,
    plan: DPSumPlan,
    backend: SecureSumBackend,
    noise: RandBelow | None = None,
) -> None:
    """Provider: add its noise shares to its integer payloads, take part in both secure sums.

    ``noise`` is the source of its discrete Gaussian draws (:func:`noise_source`).
    """
    providers = provider_names(plan.n_parties)
    d = plan.n_features
    if plan.centre:
        sums = stats.sums * (1 << plan.row_bits)
        if plan.sums_sigma > 0:
            sums = sums + sample_discrete_gaussian(plan.provider_variance(plan.sums_sigma), d, noise)
        payload = np.concatenate([sums, [stats.n_rows << plan.frac_bits]]).astype(np.int64)
        backend.secure_sum(
            party,
            carrier(payload, plan.frac_bits, SUMS_NAME),
            contributors=providers,
            receiver=SERVER,
            name=SUMS_NAME,
        )
    triangle = stats.gram_triangle
    if plan.gram_sigma > 0:
        triangle = triangle + sample_discrete_gaussian(
            plan.provider_variance(plan.gram_sigma), triangle.size, noise
        )
    backend.secure_sum(
        party,
        carrier(triangle, plan.frac_bits, GRAM_NAME),
        contributors=providers,
        receiver=SERVER,
        name=GRAM_NAME,
    )
    expect_real_array(party.recv(SERVER), SERVER, (d, None), "T")


def server_role(
    party: Party, plan: DPSumPlan, backend: SecureSumBackend, n_components: int, n_samples_public: int | None
) -> DPSumModel:
    """Server: reconstruct the noisy sums and Gram matrix, form the matrix, release the top-``k`` subspace.

    ``n_samples_public=None`` (a deployed run, where no party announces its
    row count) takes ``N`` from the secure sum of the counts (step 2), which
    needs ``plan.centre``; a given ``N`` is checked against that sum.
    """
    providers = provider_names(plan.n_parties)
    d = plan.n_features
    if n_samples_public is None and not plan.centre:
        raise InputValidationError("pppca-dp without centring needs the public row count N")
    n_samples = 0 if n_samples_public is None else n_samples_public
    noisy_sums = np.zeros(d)
    if plan.centre:
        summed = backend.secure_sum(party, None, contributors=providers, receiver=SERVER, name=SUMS_NAME)
        if summed is None:
            raise ProtocolError(f"the server received no {SUMS_NAME}")
        if summed.shape != (d + 1,):
            raise ProtocolError(f"the summed {SUMS_NAME} have shape {summed.shape}, expected ({d + 1},)")
        n_samples = round(float(summed[-1]))
        if n_samples_public is None and n_samples < 2:
            raise ProtocolError(f"the summed row count is {n_samples}; pppca-dp needs at least 2 rows")
        if n_samples_public is not None and n_samples != n_samples_public:
            raise ProtocolError(
                f"the summed row count {n_samples} differs from the agreed N={n_samples_public}"
            )
        noisy_sums = summed[:d]
    packed = backend.secure_sum(party, None, contributors=providers, receiver=SERVER, name=GRAM_NAME)
    if packed is None:
        raise ProtocolError(f"the server received no {GRAM_NAME}")
    if packed.shape != (d * (d + 1) // 2,):
        raise ProtocolError(f"the summed {GRAM_NAME} has shape {packed.shape}")
    gram = np.zeros((d, d))
    rows, cols = np.triu_indices(d)
    gram[rows, cols] = packed
    gram[cols, rows] = packed
    if plan.centre:
        matrix = (gram - np.outer(noisy_sums, noisy_sums) / n_samples) / (n_samples - 1)
    else:
        matrix = gram / n_samples
    values, components, all_values = top_eigenpairs(matrix, n_components)
    transfer = np.ascontiguousarray(components.T)
    for provider in providers:
        party.send(provider, transfer)
    return DPSumModel(components, values, n_samples, noisy_sums, gram, matrix, float(all_values.sum()))


def provider_statistics(
    part: NDArray[np.float64], index: int, plan: DPSumPlan, backend: SecureSumBackend, n_rows_bound: int
) -> IntegerStatistics:
    """Step 1 at provider ``index``, with every range check before anything is sent.

    Clips the rows (:func:`clip_rows_locally`), rounds them to integers
    (:class:`IntegerStatistics`), and refuses, naming the provider, Gram
    entries beyond int64 for ``n_rows_bound`` rows (the total ``N`` when it
    is public, as in ``PPPCADP``; the provider's own count otherwise, where the ring
    check below bounds the sum) or a payload the ring cannot sum over
    ``plan.n_parties`` providers with room for 64 noise standard deviations.
    """
    frac_bits = plan.frac_bits
    bound = float(n_rows_bound) * plan.row_bound**2 + 64.0 * plan.gram_sigma + 1.0
    if bound >= 2.0**62:
        raise InputValidationError(
            f"N={n_rows_bound} rows at frac_bits={frac_bits} give Gram entries up to {bound:.3g} ring units, "
            "beyond int64; use fewer frac_bits"
        )
    stats = IntegerStatistics.of(clip_rows_locally(part, index), plan.row_bits)
    headroom = 64.0 * plan.gram_sigma / 2.0**frac_bits
    backend.check_input(
        np.abs(stats.gram_triangle.astype(np.float64)) / 2.0**frac_bits + headroom,
        plan.n_parties,
        f"{GRAM_NAME} of provider{index}",
    )
    return stats


# -- checks ---------------------------------------------------------------------


def check_plan_parameters(
    epsilon: object, delta: object, n_parties: int, min_honest: object, mean_share: object, frac_bits: int
) -> tuple[float, float, int, float]:
    """Validate the privacy parameters before any party starts; errors name the value and the limit."""
    eps = check_epsilon_value(epsilon)
    dlt = check_delta_value(delta)
    h = n_parties if min_honest is None else min_honest
    if isinstance(h, bool) or not isinstance(h, Integral) or not 1 <= int(h) <= n_parties:
        raise InputValidationError(
            f"min_honest={min_honest!r} must be an integer from 1 to the number of providers {n_parties}"
        )
    if isinstance(mean_share, bool) or not isinstance(mean_share, Real) or not 0.0 < float(mean_share) < 1.0:
        raise InputValidationError(f"mean_share={mean_share!r} must satisfy 0 < mean_share < 1")
    if frac_bits % 2:
        raise InputValidationError(
            f"frac_bits={frac_bits} is odd; pppca-dp rounds rows to frac_bits/2 bits so that the integer Gram "
            "matrix lands exactly on the ring's scale; use an even frac_bits"
        )
    return eps, dlt, int(h), float(mean_share)


def check_dp_run(
    parts: Sequence[ArrayLike],
    n_components: int | None,
    backend: SecureSumBackend,
    *,
    epsilon: float,
    delta: float,
    min_honest: int | None = None,
    centre: bool = True,
    mean_share: float = 0.1,
    noise_calibration: str = "analytic",
) -> DPSumPlan:
    """Every check of an in-process pppca-dp run over ``parts``, before any party starts; its noise plan.

    What the parties would refuse, in the order ``PPPCADP`` checks it before
    its accountant is charged: a backend outside the 64-bit fixed-point ring
    (CrypTen), the rows and ``n_components`` (``None``: ``min(N, d)``), bad
    privacy parameters, an odd ``frac_bits`` or one too few for the row
    rounding, and payloads that would not fit int64, the ring or a float
    carrier (each provider's statistics are computed for that, without the
    clipping warning its role gives when it runs).

    Raises
    ------
    InputValidationError
        Naming the value and the limit.
    """
    if not getattr(backend, "fixed_point_ring", True):
        raise InputValidationError(
            f"backend {getattr(backend, 'name', backend)!r} encodes in its own ring; pppca-dp adds integer "
            "noise in the 64-bit fixed-point ring and needs 'additive', 'additive-masks' or 'paillier'"
        )
    arrays = check_parts(parts)
    n_parties = len(arrays)
    d = arrays[0].shape[1]
    n_samples = sum(a.shape[0] for a in arrays)
    check_n_components(n_components, d, n_samples)
    frac_bits = backend.codec.frac_bits
    eps, dlt, h, share = check_plan_parameters(epsilon, delta, n_parties, min_honest, mean_share, frac_bits)
    check_row_rounding(frac_bits, d)
    plan = DPSumPlan(n_parties, d, eps, dlt, frac_bits, h, bool(centre), share, noise_calibration)
    plan.unit_sigma  # noqa: B018  (validates the calibration, e.g. classical with epsilon >= 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RowsClippedWarning)
        for i, part in enumerate(arrays):
            provider_statistics(part, i, plan, backend, n_samples)
    return plan


def charge_dp_run(accountant: PrivacyAccountant, plan: DPSumPlan) -> None:
    """Charge one run of ``plan``: its two releases are one Gaussian mechanism with ``sigma / Delta = unit_sigma``.

    ``epsilon = inf`` is charged with no noise, which an accountant refuses (no privacy).
    """
    unit = 0.0 if math.isinf(plan.epsilon) else plan.unit_sigma
    charge_gaussian(accountant, plan.epsilon, plan.delta, unit, "pppca-dp")
