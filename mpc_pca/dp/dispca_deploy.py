"""DPdisPCA between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``dispca`` and ``dispca-full``.

The roles of :mod:`mpc_pca.dp.dispca` (Imtiaz & Sarwate, ICASSP 2018, Alg. 1),
one party each: ``provider0 .. provider{S-1}`` (ranks ``0 .. S-1``) and the
``aggregator`` (rank ``S``). Site ``i`` takes the ``i``-th generator of the
run's noise seed; the aggregator draws no noise (steps 9-11 are
post-processing). ``dispca-full`` is the paper's ``q_full``: sites send the
whole ``Â_s``. The aggregator's weights and the sites' factor of ``Â_s`` are
the object's own parameters (the paper's ``1/S`` and SVD by default; the
estimator :class:`~mpc_pca.dp.dispca.DPdisPCA` passes its own).

Announced (public) settings: every party's ``n_components``, ``epsilon``,
``delta``, ``neighbour``, ``noise_calibration``, ``row_norm`` and (``dispca``)
``intermediate_dim``; each site adds its number of features. ``N_s`` is not
announced: each site sends it to the aggregator with ``P_s`` (step 7).

Every announcement is checked against :data:`SCHEMAS` (a site's against
:data:`~mpc_pca.deployment_kit.HOLDER_WIDTH_SCHEMA` too) before any value is
compared or used: exactly those keys, each of its type and range, or an
:class:`~protocols.errors.InputValidationError` naming the sender, the key,
the value and the limit.
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
    HARNESS_FIELDS,
    HOLDER_WIDTH_SCHEMA,
    MAX_FEATURES,
    HoldersFirst,
    Key,
    agree,
    agree_width,
    check_announcements,
    check_no_data,
    floats_cap,
    gaussian_schema,
    seeded_generator,
    subspace_fields,
)
from mpc_pca.dp.common import (
    AGGREGATOR,
    DP_FIELDS,
    GAUSSIAN_OPTIONS,
    GAUSSIAN_SHARED,
    check_intermediate_dim,
    check_privacy,
    gaussian_view,
    prepare_own_rows,
)
from mpc_pca.dp.dispca import (
    SITE_FACTORS,
    WEIGHTINGS,
    DisPCAConfig,
    DisPCAModel,
    aggregator_role,
    site_role,
)
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "DisPCADeployment"]

#: Every party's announcement, by registry name: ``dispca`` adds its intermediate dimension ``R``
#: (``None`` or ``1 ..`` :data:`~mpc_pca.deployment_kit.MAX_FEATURES`; checked against ``K`` and
#: ``D`` after agreement).
SCHEMAS: dict[str, dict[str, Key]] = {
    "dispca": {**gaussian_schema("dispca"), "intermediate_dim": Key("int", 1, MAX_FEATURES, nullable=True)},
    "dispca-full": gaussian_schema("dispca-full"),
}


@dataclass(frozen=True)
class DisPCADeployConfig:
    """The agreed run: DPdisPCA's :class:`DisPCAConfig` and the settings the result reports."""

    config: DisPCAConfig
    settings: dict[str, Any]


class DisPCADeployment(HoldersFirst):
    """DPdisPCA's sites and untrusted aggregator as separate parties.

    Parameters
    ----------
    name : {"dispca", "dispca-full"}, optional
        The registry name; ``"dispca-full"`` sends ``Â_s`` instead of ``P_s``
        (``"dispca"`` if omitted).
    weights : {"equal", "samples"}, default="equal"
        The aggregator's weights ``1/S`` (the paper) or ``N_s/N``.
    site_factor : {"svd", "psd"}, default="svd"
        ``P_s`` from the SVD of ``Â_s`` (the paper) or from its ``R`` largest
        eigenvalues clipped at 0 (:func:`~mpc_pca.dp.dispca.partial_square_root`).

    Raises
    ------
    InputValidationError
        For another name, weighting or factor, naming it and the choices.
    """

    others = (AGGREGATOR,)
    variants = MappingProxyType(
        {
            "dispca": Variant(
                "DPdisPCA (Imtiaz & Sarwate ICASSP 2018, Alg. 1): sites send P_s = U_R S_R^1/2",
                {**GAUSSIAN_OPTIONS, "intermediate_dim": None},
                (*DP_FIELDS, "intermediate_dim"),
                params={"full": False},
            ),
            "dispca-full": Variant(
                "DPdisPCA sending the full noisy A_s (ICASSP 2018 q_full)",
                GAUSSIAN_OPTIONS,
                DP_FIELDS,
                params={"full": True},
            ),
        }
    )

    def __init__(self, name: str | None = None, *, weights: str = "equal", site_factor: str = "svd") -> None:
        super().__init__(name)
        if weights not in WEIGHTINGS:
            raise InputValidationError(
                f"weights={weights!r} is not supported; choose one of {list(WEIGHTINGS)}"
            )
        if site_factor not in SITE_FACTORS:
            raise InputValidationError(
                f"site_factor={site_factor!r} is not supported; choose one of {list(SITE_FACTORS)}"
            )
        self.weights = weights
        self.site_factor = site_factor

    @property
    def full(self) -> bool:
        """Whether every site sends its whole noisy ``A_s`` (``dispca-full``) instead of ``P_s``."""
        return bool(self.params["full"])

    def _shared(self) -> tuple[str, ...]:
        return GAUSSIAN_SHARED if self.full else (*GAUSSIAN_SHARED, "intermediate_dim")

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings, plus the width of a site's rows (checked, row norms per ``row_norm``)."""
        view = gaussian_view(self.name, settings)
        r = settings.get("intermediate_dim")
        if not self.full:
            if r is not None and (isinstance(r, bool) or not isinstance(r, int) or r < 1):
                raise InputValidationError(f"intermediate_dim={r!r} must be None or a positive integer")
            view["intermediate_dim"] = r
        if party.startswith("provider"):
            rows = prepare_own_rows(party, data, view, self.name, clip=False)
            k = check_n_components(view["n_components"], rows.shape[1])
            if not self.full:
                check_intermediate_dim(r, k, rows.shape[1])
            view["n_features"] = int(rows.shape[1])
        else:
            check_no_data(party, data)
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> DisPCADeployConfig:
        """:class:`DisPCAConfig` with this object's weights and factor, refused where announcements differ.

        Raises
        ------
        InputValidationError
            Naming the sender of an announcement that does not fit :data:`SCHEMAS`,
            or every party where announcements differ.
        """
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMAS[self.name], holders, HOLDER_WIDTH_SCHEMA)
        agreed = agree(views, self._shared())
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        r = check_intermediate_dim(agreed.get("intermediate_dim"), k, d)
        eps, dlt, relation = check_privacy(
            agreed["epsilon"], agreed["delta"], agreed["neighbour"], agreed["noise_calibration"]
        )
        config = DisPCAConfig(
            n_providers,
            d,
            k,
            r,
            eps,
            dlt,
            relation,
            self.full,
            self.weights,
            self.site_factor,
            agreed["noise_calibration"],
        )
        return DisPCADeployConfig(config, agreed)

    def message_cap(self, config: DisPCADeployConfig) -> int:
        """``P_s`` (``D x R`` floats) or packed ``Â_s`` (``D(D+1)/2``), or the ``K x D`` components."""
        cfg = config.config
        d = cfg.n_features
        payload = d * (d + 1) // 2 if cfg.full else d * cfg.intermediate_dim
        return floats_cap(max(payload, cfg.n_components * d))

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """Site ``i``'s generator is the noise seed's ``i``-th; the aggregator draws no noise."""
        if party == AGGREGATOR:
            return None
        return seeded_generator(noise_seed, layout[party])

    def role(
        self,
        party: str,
        config: DisPCADeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        cfg = config.config
        if party == AGGREGATOR:
            return lambda p: aggregator_role(p, cfg)
        if rng is None:
            raise InputValidationError(f"{party} needs a noise generator in DPdisPCA")
        rows = prepare_own_rows(party, data, config.settings, self.name)
        return lambda p: site_role(p, rows, cfg, rng)

    def result(self, party: str, config: DisPCADeployConfig, output: Any) -> dict[str, Any]:
        """The aggregator's model as ``mpc-pca run`` writes it for dispca[-full] (but :data:`HARNESS_FIELDS`)."""
        if party != AGGREGATOR:
            return {"components": output.components.tolist()} if party.startswith("provider") else {}
        model: DisPCAModel = output
        out = subspace_fields(
            model.components, model.explained_variance, sum(model.site_samples), config.settings
        )
        if not self.full:
            out["intermediate_dim"] = config.config.intermediate_dim
        return out

    def result_party(self, layout: Mapping[str, int]) -> str:
        return AGGREGATOR
