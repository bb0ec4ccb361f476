"""DPDPCA: differentially private PCA over horizontally partitioned data with Paillier.

Wang & Chang, "Differentially Private Principal Component Analysis Over
Horizontally Partitioned Data", IEEE DSC 2018, §IV.C and Algorithms 1-2.

Roles: L data owners, an honest-but-curious *proxy*, and an untrusted *data
user* who holds the Paillier key and learns only a noisy scatter matrix.

1. user -> all: public key (step 1).
2. owner l -> proxy: ``Enc(R_l)``, ``Enc(v_l)``, ``Enc(N_l)`` with
   ``R_l = X_l^T X_l``, ``v_l`` the column sums (eq. 8; step 2).
3. proxy: ``Enc(R)``, ``Enc(v)``, ``Enc(N)`` by homomorphic sums (Alg. 1
   lines 2-4); ``Enc(N)`` -> user -> ``N`` in clear -> proxy (line 5, §IV.C.b).
4. proxy: random mask ``b`` (line 6), noise ``G'`` from the Gaussian mechanism
   (Alg. 2, line 8), and the correction ``G`` (eqs. 14-19, line 7); sends
   ``Enc(R')`` and ``Enc(v' = v + b)`` (lines 9-10, eqs. 20-21).
5. user: decrypts and computes ``S' = R' - v' v'^T / N`` (eq. 22) = the
   centred scatter matrix plus ``G'``; eigendecomposition.

Two deliberate deviations, both keeping the paper's algebra:

* **Exact integer correction.** The paper needs ``Enc(v_i)^(b_j / N)`` and
  makes the exponent an integer by choosing ``b`` as a multiple of ``N``; then
  ``v' = v + b`` reveals ``v mod N`` to the data user. Here the proxy instead
  sends ``Enc(N R')`` with ``N G_ij = v_i b_j + b_i v_j + b_i b_j`` (integers in
  fixed point) and the user divides by ``N`` after decryption, so ``b`` can be
  uniform over a range ``2^mask_bits`` times wider than any ``|v_i|``: ``v'``
  is then statistically independent of ``v`` (distance ``<= 2^-mask_bits``).
* **Sensitivity of the released matrix.** The user effectively learns
  ``S + G'`` with ``S`` the *centred* scatter. With rows of norm ``<= 1``,
  adding or removing one row changes ``S`` by ``N/(N+1) (x - mu)(x - mu)^T``,
  Frobenius norm ``< 4``; replacing one row by at most ``4 sqrt(2)``. The paper
  uses 1 (the sensitivity of the uncentred ``X^T X``); this module calibrates
  ``G'`` to the centred matrix it actually releases. ``calibration="paper"``
  uses the paper's ``Delta = 1`` instead and reports, in
  ``effective_epsilon_``, the ``epsilon`` that noise actually gives for the
  true sensitivity (exact analytic-Gaussian inverse, Balle & Wang 2018).
* **Encoding (eq. 5).** The paper discretises each feature to ``e`` bits with
  its min and max over the data, ``floor((2^e - 1)(x - min_F)/(max_F - min_F))``;
  those per-feature extremes are data-dependent and the map is not
  translation-free, so here every value is fixed-point encoded with
  ``frac_bits`` fractional bits (``round(x 2^frac_bits)``) after the rows are
  bounded to norm ``<= 1``. The scatter matrix is the same up to rounding.
* **Eigenvalue order.** The paper orders eigenvalues by absolute value
  (§III.A). After noise, ``S + G'`` can have large *negative* eigenvalues whose
  eigenvectors carry no variance; this module keeps the ``k`` largest
  eigenvalues (algebraic order), which is PCA's definition.

Trust model: owners honest; proxy honest-but-curious and colluding with nobody
(it learns ``N`` only); the data user is untrusted and learns ``N`` exactly,
the masked ``v'`` and ``S + G'``. ``S + G'`` is ``(epsilon, delta)``-DP for
replace-one neighbours (the paper's fixed-size definition, under which ``N``
is public). Under add/remove neighbours ``N`` itself tells neighbours apart,
so that option protects the matrix only with ``N`` treated as public, as the
other estimators here do; the exact ``N`` is released either way.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.dp.mechanisms import (
    Neighbour,
    gaussian_noise_scale,
    parse_neighbour,
    symmetric_gaussian_noise,
)
from mpc_pca.linalg import from_upper_triangle, top_eigenpairs, upper_triangle
from mpc_pca.roles import PROXY, USER, owner_names
from protocols.dp.calibration import analytic_gaussian_epsilon
from protocols.errors import InputValidationError, ProtocolError
from protocols.paillier import PaillierPublicKey, add, decrypt, encrypt, generate_keypair, multiply
from protocols.paillier.cipher import add_many, from_residue, to_residue
from protocols.paillier.serialize import ciphertexts_from_bytes, ciphertexts_to_bytes, public_key_from_bytes
from protocols.party import Party

DPDPCA_CALIBRATIONS = ("sensitivity", "paper")


def check_integer(value: object, name: str, low: int, high: int) -> int:
    """``value`` if it is an integer from ``low`` to ``high`` (e.g. ``frac_bits``), else refused.

    Raises
    ------
    InputValidationError
        Naming ``name``, the value and the range.
    """
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputValidationError(
            f"{name}={value!r} is out of range; it must be an integer from {low} to {high}"
        )
    return value


def centred_scatter_sensitivity(neighbour: Neighbour | str) -> float:
    """Frobenius-norm sensitivity of ``S = sum (x - mu)(x - mu)^T`` for rows of norm <= 1.

    Add/remove one row ``x``: ``S`` changes by ``N/(N+1) (x - mu)(x - mu)^T``
    (Welford's update), of norm ``< ||x - mu||^2 <= 4``. Replace one row:
    ``S`` without that row plus one of two rank-one terms ``u u^T``, ``w w^T``
    with ``||u||, ||w|| <= 2``, and ``||u u^T - w w^T||_F <= sqrt(||u||^4 + ||w||^4)
    <= 4 sqrt(2)``.
    """
    relation = parse_neighbour(neighbour)
    return 4.0 if relation is Neighbour.ADD_REMOVE else 4.0 * math.sqrt(2.0)


@dataclass(frozen=True)
class DPDPCAConfig:
    """Public parameters every party agrees on."""

    n_owners: int
    n_features: int
    n_components: int
    epsilon: float
    delta: float
    neighbour: Neighbour = Neighbour.REPLACE_ONE
    key_bits: int = 2048
    frac_bits: int = 40
    mask_bits: int = 128
    calibration: str = "sensitivity"
    noise_calibration: str = "analytic"
    allow_insecure_key_size: bool = False

    @property
    def owners(self) -> tuple[str, ...]:
        return owner_names(self.n_owners)

    @property
    def scale(self) -> int:
        return 1 << self.frac_bits

    def plaintext_bits(self, n_samples: int) -> int:
        """Bits of the largest signed plaintext any party encrypts (for rows of norm <= 1).

        ``|R_ij| <= N`` and ``|v_i| <= N``, so with ``s = 2^frac_bits``,
        ``B = N s 2^mask_bits`` bounds the mask and the proxy's largest value is
        ``|N R s^2 + 2 v_i b_j s + b_i b_j + N G'_ij s^2| <= 4 B^2 + N |G'| s^2``,
        with the noise entry bounded by 40 sigma (a larger draw has probability
        below 1e-300).
        """
        scale_bits = max(n_samples, 1).bit_length() + self.frac_bits
        mask_bound_bits = scale_bits + self.mask_bits
        noise_bits = (
            n_samples * max(1.0, 40.0 * self.noise_sigma)
        ).__ceil__().bit_length() + 2 * self.frac_bits
        return max(2 * mask_bound_bits + 2, noise_bits) + 1

    @property
    def noise_sigma(self) -> float:
        """Standard deviation of each upper-triangle entry of ``G'`` (Alg. 2, line 2)."""
        return gaussian_noise_scale(
            self.calibrated_sensitivity, self.epsilon, self.delta, self.noise_calibration
        )

    @property
    def calibrated_sensitivity(self) -> float:
        """``Delta`` the noise is calibrated to: the centred scatter's, or the paper's 1."""
        return 1.0 if self.calibration == "paper" else centred_scatter_sensitivity(self.neighbour)

    @property
    def effective_epsilon(self) -> float:
        """``epsilon`` the release ``S + G'`` actually has at ``delta`` for the true sensitivity.

        Equal to ``epsilon`` under ``calibration="sensitivity"`` (analytic) and
        at most ``epsilon`` under the classical formula; larger under
        ``"paper"`` (noise sized for ``Delta = 1``, true ``Delta`` up to ``4 sqrt(2)``).
        """
        if math.isinf(self.epsilon):
            return math.inf
        return analytic_gaussian_epsilon(
            self.noise_sigma, centred_scatter_sensitivity(self.neighbour), self.delta
        )


@dataclass
class DPDPCAModel:
    """What the data user computes (step 4, eq. 22) and sees (``masked_sums`` = ``v' s``)."""

    noisy_scatter: NDArray[np.float64]
    n_samples: int
    masked_sums: list[int]
    components: NDArray[np.float64]
    eigenvalues: NDArray[np.float64]
    total: float


def _to_fixed(values: NDArray[np.float64], scale: int) -> list[int]:
    """Round ``values * scale`` to Python integers (exact for any magnitude)."""
    return [int(v) for v in np.rint(np.asarray(values, dtype=np.float64) * float(scale))]


def _signed_residues(values: Sequence[int], public_key: PaillierPublicKey, what: str) -> list[int]:
    limit = public_key.n // 2
    for value in values:
        if abs(value) >= limit:
            raise InputValidationError(
                f"{what} has a value of {abs(value).bit_length()} bits, but a {public_key.bits}-bit key "
                f"holds signed values below n/2 (about {limit.bit_length()} bits); lower frac_bits or mask_bits"
            )
    return [to_residue(v, public_key.n) for v in values]


def _encrypt_signed(public_key: PaillierPublicKey, values: Sequence[int], what: str) -> bytes:
    return ciphertexts_to_bytes(public_key, encrypt(public_key, _signed_residues(values, public_key, what)))


def _ciphertexts(public_key: PaillierPublicKey, message: Any, count: int, sender: str) -> list:
    if not isinstance(message, bytes):
        raise ProtocolError(f"expected ciphertext bytes from {sender!r}, got {type(message).__name__}")
    return ciphertexts_from_bytes(public_key, message, count)


def _receive_public_key(party: Party, key_bits: int) -> PaillierPublicKey:
    """The data user's public key, refused unless it has exactly the agreed size."""
    return public_key_from_bytes(party.recv(USER), key_bits)


# -- roles ---------------------------------------------------------------------------


def owner_role(party: Party, data: NDArray[np.float64], config: DPDPCAConfig) -> None:
    """Data owner (step 2, eq. 8): send ``Enc(R_l)``, ``Enc(v_l)``, ``Enc(N_l)``."""
    public_key = _receive_public_key(party, config.key_bits)
    s = config.scale
    second_moment = upper_triangle(data.T @ data)
    message = {
        "R": _encrypt_signed(public_key, _to_fixed(second_moment, s * s), f"{party.name}'s R_l"),
        "v": _encrypt_signed(public_key, _to_fixed(data.sum(axis=0), s), f"{party.name}'s v_l"),
        "N": _encrypt_signed(public_key, [data.shape[0]], f"{party.name}'s N_l"),
    }
    party.send(PROXY, message)


def proxy_role(party: Party, config: DPDPCAConfig, rng: np.random.Generator) -> None:
    """Proxy: DPAggregate (Alg. 1) with the Gaussian mechanism (Alg. 2)."""
    public_key = _receive_public_key(party, config.key_bits)
    d = config.n_features
    tri = d * (d + 1) // 2
    shares = []
    for owner in config.owners:
        message = party.recv(owner)
        if not isinstance(message, dict) or set(message) != {"R", "v", "N"}:
            raise ProtocolError(f"{owner} sent a malformed share; expected keys R, v, N")
        shares.append(
            (
                _ciphertexts(public_key, message["R"], tri, owner),
                _ciphertexts(public_key, message["v"], d, owner),
                _ciphertexts(public_key, message["N"], 1, owner),
            )
        )
    enc_r = add_many(public_key, [s[0] for s in shares])  # Alg. 1 line 2, eq. 11
    enc_v = add_many(public_key, [s[1] for s in shares])  # line 3, eq. 12
    enc_n = add_many(public_key, [s[2] for s in shares])  # line 4, eq. 13
    party.send(USER, ciphertexts_to_bytes(public_key, enc_n))  # line 5: N via the data user
    n_samples = party.recv(USER)
    if isinstance(n_samples, bool) or not isinstance(n_samples, int) or n_samples < 2:
        raise ProtocolError(f"the data user returned N={n_samples!r}; expected an integer >= 2")

    s = config.scale
    # line 6: the mask, uniform over 2^mask_bits times the largest possible |v_i| s (|v_i| <= N)
    half_range = n_samples * s << config.mask_bits
    mask = [secrets.randbelow(2 * half_range + 1) - half_range for _ in range(d)]
    # line 8: G' (Alg. 2), scaled like R
    noise = _to_fixed(upper_triangle(symmetric_gaussian_noise(d, config.noise_sigma, rng)), s * s)
    rows, cols = np.triu_indices(d)
    # lines 7 and 9 in exact integers: Enc(N R') = Enc(R)^N Enc(v_i)^b_j Enc(v_j)^b_i Enc(b_i b_j + N G'_ij)
    scaled_r = multiply(public_key, enc_r, n_samples)
    cross_ij = multiply(public_key, [enc_v[i] for i in rows], [mask[j] for j in cols])
    cross_ji = multiply(public_key, [enc_v[j] for j in cols], [mask[i] for i in rows])
    plain = [mask[i] * mask[j] + n_samples * g for i, j, g in zip(rows, cols, noise, strict=True)]
    enc_plain = encrypt(public_key, _signed_residues(plain, public_key, "b_i b_j + N G'_ij"))
    enc_nr = add(public_key, add(public_key, scaled_r, cross_ij), add(public_key, cross_ji, enc_plain))
    enc_v_masked = add(
        public_key, enc_v, encrypt(public_key, _signed_residues(mask, public_key, "b"))
    )  # line 10
    party.send(
        USER,
        {
            "NR": ciphertexts_to_bytes(public_key, enc_nr),
            "v": ciphertexts_to_bytes(public_key, enc_v_masked),
        },
    )


def user_role(party: Party, config: DPDPCAConfig) -> DPDPCAModel:
    """Data user: key generation (step 1), ``N`` for the proxy, eq. 22, eigendecomposition."""
    public_key, private_key = generate_keypair(
        config.key_bits, allow_insecure_key_size=config.allow_insecure_key_size
    )
    for name in (*config.owners, PROXY):
        party.send(name, public_key.to_bytes())
    n = public_key.n
    (n_residue,) = decrypt(private_key, _ciphertexts(public_key, party.recv(PROXY), 1, PROXY))
    n_samples = int(from_residue(n_residue, n))
    party.send(PROXY, n_samples)
    d = config.n_features
    tri = d * (d + 1) // 2
    message = party.recv(PROXY)
    if not isinstance(message, dict) or set(message) != {"NR", "v"}:
        raise ProtocolError("the proxy sent a malformed aggregate; expected keys NR, v")
    nr = [
        int(from_residue(m, n))
        for m in decrypt(private_key, _ciphertexts(public_key, message["NR"], tri, PROXY))
    ]
    v = [
        int(from_residue(m, n))
        for m in decrypt(private_key, _ciphertexts(public_key, message["v"], d, PROXY))
    ]
    s = config.scale
    denominator = n_samples * s * s
    rows, cols = np.triu_indices(d)
    # eq. 22: S' = R' - v' v'^T / N, computed as (N R' - v' v'^T) / N exactly before rounding to float
    packed = np.array(
        [(nr[t] - v[i] * v[j]) / denominator for t, (i, j) in enumerate(zip(rows, cols, strict=True))]
    )
    noisy_scatter = from_upper_triangle(packed, d)
    values, components, all_values = top_eigenpairs(noisy_scatter, config.n_components)
    return DPDPCAModel(noisy_scatter, n_samples, v, components, values, float(all_values.sum()))
