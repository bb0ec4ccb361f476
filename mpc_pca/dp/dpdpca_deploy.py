"""DPDPCA between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``dpdpca``.

The roles of :mod:`mpc_pca.dp.dpdpca` (Wang & Chang, IEEE DSC 2018, §IV.C,
Alg. 1-2), one party each: ``owner0 .. owner{L-1}`` (ranks ``0 .. L-1``), the
``proxy`` (rank ``L``) and the data ``user`` (rank ``L + 1``). The only
seeded noise is the proxy's ``G'`` (Alg. 2, line 8): the proxy takes the
noise seed's generator 0. The mask ``b``, every encryption's randomness and
the user's key come from :mod:`secrets` in every run; the mask cancels
exactly, so a fixed noise seed reproduces the result in every runner.

The fixed-point encoding (``frac_bits``), the mask's width (``mask_bits``),
the noise calibration (``calibration``), the test-only switch for small keys
and the row count the key must hold are the object's own parameters: the
defaults deploy; the estimator :class:`~mpc_pca.dp.dpdpca_estimator.DPDPCA`
passes its own.

Announced (public) settings: every party's ``n_components``, ``epsilon``,
``delta``, ``neighbour``, ``noise_calibration``, ``row_norm``, ``key_bits``
and ``allow_insecure_key_size`` (test-only, default ``False``); each owner
adds its number of features. No row count is announced: the proxy and the
user learn only the total ``N`` (Alg. 1 line 5).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import PublicSettings, Role, Variant
from mpc_pca.deployment_kit import (
    CAP_SLACK,
    HARNESS_FIELDS,
    HOLDER_WIDTH_SCHEMA,
    HoldersFirst,
    Key,
    agree,
    agree_width,
    check_announcements,
    check_no_data,
    gaussian_schema,
    seeded_generator,
    subspace_fields,
)
from mpc_pca.dp.common import (
    DP_FIELDS,
    GAUSSIAN_OPTIONS,
    GAUSSIAN_SHARED,
    check_privacy,
    gaussian_view,
    prepare_own_rows,
)
from mpc_pca.dp.dpdpca import (
    DPDPCA_CALIBRATIONS,
    DPDPCAConfig,
    DPDPCAModel,
    check_integer,
    owner_role,
    proxy_role,
    user_role,
)
from mpc_pca.roles import PROXY, USER, owner_names
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError
from protocols.paillier.keys import check_key_bits

__all__ = ["HARNESS_FIELDS", "MAX_ROWS", "DPDPCADeployment"]

#: Row count the pre-flight plaintext check assumes: no party knows ``N`` before the run.
MAX_ROWS = 1 << 40
#: The CLI's Paillier modulus size when ``key_bits`` is not given.
DEFAULT_KEY_BITS = 2048
SHARED = (*GAUSSIAN_SHARED, "key_bits", "allow_insecure_key_size")
#: Every party's announcement, checked (naming the sender) before anything is compared or used.
SCHEMA: dict[str, Key] = {
    **gaussian_schema("dpdpca"),
    "key_bits": Key("int", 1, 1 << 14),
    "allow_insecure_key_size": Key("flag"),
}


@dataclass(frozen=True)
class DPDPCADeployConfig:
    """The agreed run: DPDPCA's :class:`DPDPCAConfig` and the settings the result reports."""

    config: DPDPCAConfig
    settings: dict[str, Any]


class DPDPCADeployment(HoldersFirst):
    """DPDPCA's data owners, proxy and data user as separate parties.

    Parameters
    ----------
    name : {"dpdpca"}, optional
        The registry name.
    frac_bits : int, default=40
        Fixed-point fractional bits of the integer encoding (1 to 200).
    mask_bits : int, default=128
        Statistical hiding of the column sums by the mask ``b`` (40 to 512).
    calibration : {"sensitivity", "paper"}, default="sensitivity"
        Size ``G'`` for the centred scatter's true sensitivity or the paper's ``Delta = 1``.
    allow_insecure_key_size : bool, default=False
        Test-only: every party announces keys below 2048 bits as allowed
        (a setting ``allow_insecure_key_size`` given to :meth:`public` wins).
    max_rows : int, default=MAX_ROWS
        The largest ``N`` the key must hold every plaintext for
        (:meth:`configure`); a runner that holds every part may pass the true ``N``.

    Raises
    ------
    InputValidationError
        For a value out of range, naming it.
    """

    others = (PROXY, USER)

    variants = MappingProxyType(
        {
            "dpdpca": Variant(
                "DPDPCA with Paillier and a proxy (Wang & Chang 2018, Alg. 1-2); centred scatter",
                {**GAUSSIAN_OPTIONS, "key_bits": 2048},
                (*DP_FIELDS, "noise_sigma", "effective_epsilon"),
            )
        }
    )

    def __init__(
        self,
        name: str | None = None,
        *,
        frac_bits: int = 40,
        mask_bits: int = 128,
        calibration: str = "sensitivity",
        allow_insecure_key_size: bool = False,
        max_rows: int = MAX_ROWS,
    ) -> None:
        super().__init__(name)
        if calibration not in DPDPCA_CALIBRATIONS:
            raise InputValidationError(
                f"calibration={calibration!r} is not supported; choose one of {list(DPDPCA_CALIBRATIONS)}"
            )
        if not isinstance(allow_insecure_key_size, bool):
            raise InputValidationError(
                f"allow_insecure_key_size={allow_insecure_key_size!r} must be True or False"
            )
        self.frac_bits = check_integer(frac_bits, "frac_bits", 1, 200)
        self.mask_bits = check_integer(mask_bits, "mask_bits", 40, 512)
        self.calibration = calibration
        self.allow_insecure_key_size = allow_insecure_key_size
        self.max_rows = check_integer(max_rows, "max_rows", 1, MAX_ROWS)

    def holder_names(self, n_providers: int) -> tuple[str, ...]:
        return owner_names(n_providers)

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings (key size included), plus the width of an owner's rows."""
        view = gaussian_view(self.name, settings)
        insecure = settings.get("allow_insecure_key_size", self.allow_insecure_key_size)
        if not isinstance(insecure, bool):
            raise InputValidationError(f"allow_insecure_key_size={insecure!r} must be True or False")
        key_bits = settings.get("key_bits")
        view["key_bits"] = check_key_bits(DEFAULT_KEY_BITS if key_bits is None else key_bits, insecure)
        view["allow_insecure_key_size"] = insecure
        if party.startswith("owner"):
            rows = prepare_own_rows(party, data, view, self.name, clip=False)
            check_n_components(view["n_components"], rows.shape[1])
            view["n_features"] = int(rows.shape[1])
        else:
            check_no_data(party, data)
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> DPDPCADeployConfig:
        """:class:`DPDPCAConfig` with this object's encoding, mask and calibration.

        Raises
        ------
        InputValidationError
            Naming the parties where announcements differ, or if the key
            cannot hold the largest plaintext for up to ``max_rows`` rows.
        """
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMA, holders, HOLDER_WIDTH_SCHEMA)
        agreed = agree(views, SHARED)
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        eps, dlt, relation = check_privacy(
            agreed["epsilon"], agreed["delta"], agreed["neighbour"], agreed["noise_calibration"]
        )
        config = DPDPCAConfig(
            n_owners=n_providers,
            n_features=d,
            n_components=k,
            epsilon=eps,
            delta=dlt,
            neighbour=relation,
            key_bits=agreed["key_bits"],
            frac_bits=self.frac_bits,
            mask_bits=self.mask_bits,
            calibration=self.calibration,
            noise_calibration=agreed["noise_calibration"],
            allow_insecure_key_size=agreed["allow_insecure_key_size"],
        )
        budget = config.key_bits - 2
        if config.plaintext_bits(self.max_rows) > budget:
            rows = "2^40" if self.max_rows == MAX_ROWS else str(self.max_rows)
            raise InputValidationError(
                f"up to {config.plaintext_bits(self.max_rows)}-bit values would be encrypted for N <= {rows} rows "
                f"(frac_bits={config.frac_bits}, mask_bits={config.mask_bits}, noise sigma "
                f"{config.noise_sigma:.3g}), but a {config.key_bits}-bit key holds at most {budget}; "
                "use a larger key"
            )
        return DPDPCADeployConfig(config, agreed)

    def message_cap(self, config: DPDPCADeployConfig) -> int:
        """An owner's ``D(D+1)/2 + D + 1`` ciphertexts of ``2 key_bits`` bits, doubled, plus slack."""
        cfg = config.config
        d = cfg.n_features
        ciphertexts = d * (d + 1) // 2 + d + 1
        return 2 * ciphertexts * (2 * cfg.key_bits // 8 + 8) + 8 * cfg.n_components * d + CAP_SLACK

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """The proxy's ``G'`` generator is the noise seed's generator 0; no other party draws DP noise."""
        return seeded_generator(noise_seed, 0) if party == PROXY else None

    def role(
        self,
        party: str,
        config: DPDPCADeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        cfg = config.config
        if party == USER:
            return lambda p: user_role(p, cfg)
        if party == PROXY:
            if rng is None:
                raise InputValidationError("the proxy needs a noise generator for G'")
            return lambda p: proxy_role(p, cfg, rng)
        rows = prepare_own_rows(party, data, config.settings, self.name)
        return lambda p: owner_role(p, rows, cfg)

    def result(self, party: str, config: DPDPCADeployConfig, output: Any) -> dict[str, Any]:
        """The data user's model as ``mpc-pca run`` writes it for dpdpca (but :data:`HARNESS_FIELDS`)."""
        if party != USER:
            return {}
        model: DPDPCAModel = output
        variance = model.eigenvalues / (model.n_samples - 1)
        out = subspace_fields(model.components, variance, model.n_samples, config.settings)
        out.update(noise_sigma=config.config.noise_sigma, effective_epsilon=config.config.effective_epsilon)
        return out

    def result_party(self, layout: Mapping[str, int]) -> str:
        return USER
