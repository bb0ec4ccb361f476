"""capePCA between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``capepca``.

The roles of :mod:`mpc_pca.dp.cape` (Imtiaz & Sarwate, JSTSP 2018, Alg. 1),
one party each: ``provider0 .. provider{S-1}`` (ranks ``0 .. S-1``), the
``aggregator`` (rank ``S``) and the ``noise-generator`` (rank ``S + 1``). With
a noise seed the party of rank ``r`` gets the ``r``-th of
``spawn_generators(seed, S + 2)`` (:func:`~mpc_pca.deployment_kit.seeded_generator`)
in every runner, so a deployed run reproduces the estimator's result exactly.

Announced (public) settings: every party's ``n_components``, ``epsilon``,
``delta``, ``neighbour``, ``noise_calibration``, ``cape_calibration`` and
``row_norm``; each site adds its number of features. The row counts ``N_s``
are not announced: sites send them to the aggregator and the noise generator
in Alg. 1 step 1, as in-process.

Every announcement is checked against :data:`SCHEMA` (a site's against
:data:`SITE_SCHEMA` too) before any value is compared or used: exactly those
keys, each of its type and range, or an
:class:`~protocols.errors.InputValidationError` naming the sender, the key
and the limit.
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
from mpc_pca.dp.cape import (
    CapeConfig,
    CapeModel,
    aggregator_role,
    check_calibration,
    noise_generator_role,
    site_role,
)
from mpc_pca.dp.common import (
    AGGREGATOR,
    DP_FIELDS,
    GAUSSIAN_OPTIONS,
    GAUSSIAN_SHARED,
    NOISE_GENERATOR,
    check_privacy,
    gaussian_view,
    prepare_own_rows,
)
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "CapeDeployment"]

#: Settings every party announces and all must agree on.
SHARED = (*GAUSSIAN_SHARED, "cape_calibration")
#: Every party's announcement (the values' meaning is checked after agreement, by ``check_privacy``).
SCHEMA: dict[str, Key] = {**gaussian_schema("capepca"), "cape_calibration": Key("text")}
#: A site's further key: the width of its rows.
SITE_SCHEMA = HOLDER_WIDTH_SCHEMA


@dataclass(frozen=True)
class CapeDeployConfig:
    """The agreed run: capePCA's :class:`CapeConfig` and the settings the result reports."""

    config: CapeConfig
    settings: dict[str, Any]


def cape_settings(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """Validate the settings a capePCA party announces (no peer involved yet).

    Raises
    ------
    InputValidationError
        For an invalid Gaussian setting (:func:`~mpc_pca.dp.common.gaussian_view`)
        or CAPE calibration.
    """
    return {
        **gaussian_view(name, settings),
        "cape_calibration": check_calibration(settings.get("cape_calibration", "joint")),
    }


class CapeDeployment(HoldersFirst):
    """capePCA's sites, untrusted aggregator and trusted noise generator as separate parties.

    Parameters
    ----------
    name : {"capepca"}
        The registry name.
    """

    others = (AGGREGATOR, NOISE_GENERATOR)
    variants = MappingProxyType(
        {
            "capepca": Variant(
                "capePCA with CAPE correlated noise (Imtiaz & Sarwate JSTSP 2018, Alg. 1)",
                {**GAUSSIAN_OPTIONS, "cape_calibration": "joint"},
                (*DP_FIELDS, "weights", "calibration", "effective_epsilon", "noise_scale"),
            )
        }
    )

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings, plus the width of a site's rows (checked, row norms per ``row_norm``)."""
        view = cape_settings(self.name, settings)
        if party.startswith("provider"):
            rows = prepare_own_rows(party, data, view, self.name, clip=False)
            check_n_components(view["n_components"], rows.shape[1])
            view["n_features"] = int(rows.shape[1])
        else:
            check_no_data(party, data)
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> CapeDeployConfig:
        """:class:`CapeConfig` from the announcements, refused (naming parties) where they differ."""
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMA, holders, SITE_SCHEMA)
        agreed = agree(views, SHARED)
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        eps, dlt, relation = check_privacy(
            agreed["epsilon"], agreed["delta"], agreed["neighbour"], agreed["noise_calibration"]
        )
        config = CapeConfig(
            n_providers, d, k, eps, dlt, relation, agreed["cape_calibration"], agreed["noise_calibration"]
        )
        return CapeDeployConfig(config, agreed)

    def message_cap(self, config: CapeDeployConfig) -> int:
        """Packed ``d x d`` noise terms and releases (``d(d+1)/2`` floats), or the ``K x D`` components."""
        d, k = config.config.n_features, config.config.n_components
        return floats_cap(max(d * (d + 1) // 2, k * d))

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator:
        """Rank ``r``'s generator: the ``r``-th of the noise seed's, in rank order."""
        return seeded_generator(noise_seed, layout[party])

    def role(
        self,
        party: str,
        config: CapeDeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        if rng is None:
            raise InputValidationError(f"{party} needs a noise generator in capePCA")
        cfg = config.config
        if party == AGGREGATOR:
            return lambda p: aggregator_role(p, cfg, rng)
        if party == NOISE_GENERATOR:
            return lambda p: noise_generator_role(p, cfg, rng)
        rows = prepare_own_rows(party, data, config.settings, self.name)
        return lambda p: site_role(p, rows, cfg, rng)

    def result(self, party: str, config: CapeDeployConfig, output: Any) -> dict[str, Any]:
        """The aggregator's model as ``mpc-pca run`` writes it for capepca (but :data:`HARNESS_FIELDS`)."""
        if party != AGGREGATOR:
            return {"components": np.asarray(output).tolist()} if party.startswith("provider") else {}
        model: CapeModel = output
        out = subspace_fields(
            model.components, model.explained_variance, sum(model.site_samples), config.settings
        )
        out.update(
            weights=model.weights.tolist(),
            calibration=model.calibration,
            effective_epsilon=model.effective_epsilon,
            noise_scale=model.noise_scale,
        )
        return out

    def result_party(self, layout: Mapping[str, int]) -> str:
        return AGGREGATOR
