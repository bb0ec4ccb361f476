"""The trusted-curator baselines between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``ag`` and ``pooled``.

The roles of :mod:`mpc_pca.dp.curator`, one party each:
``provider0 .. provider{S-1}`` (ranks ``0 .. S-1``) and the ``curator``
(rank ``S``). The curator applies the mechanism of the estimator the CLI
builds: :class:`~mpc_pca.dp.baselines.AnalyzeGaussPCA` (``ag``; Dwork et al.
2014, the ``q_pooled`` of ICASSP 2018) or :class:`~mpc_pca.dp.baselines.PooledPCA`
(``pooled``, non-private). :func:`~mpc_pca.dp.curator.run_centralized` spawns
one generator, the curator's, so the curator takes generator 0; providers
draw no noise.

Announced (public) settings: every party's ``n_components``, ``epsilon``,
``delta``, ``neighbour``, ``noise_calibration`` and ``row_norm`` (``pooled``
uses only ``n_components`` and ``row_norm``, but reports all, like the CLI);
each provider adds its number of features. ``N_s`` is sent to the curator
with the Gram matrix, as in-process, never announced.

Every announcement is checked against :data:`SCHEMAS` (a provider's against
:data:`~mpc_pca.deployment_kit.HOLDER_WIDTH_SCHEMA` too) before any value is
compared or used: exactly those keys, each of its type and range, or an
:class:`~protocols.errors.InputValidationError` naming the sender, the key,
the value and the limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import PublicSettings, Role
from mpc_pca.deployment_kit import (
    HARNESS_FIELDS,
    HOLDER_WIDTH_SCHEMA,
    HoldersFirst,
    Key,
    agree,
    agree_width,
    check_announcements,
    check_components_setting,
    check_no_data,
    floats_cap,
    gaussian_schema,
    refuse_pooled_scaling,
    seeded_generator,
    subspace_fields,
    subspace_schema,
)
from mpc_pca.dp.baselines import AnalyzeGaussPCA, PooledPCA
from mpc_pca.dp.common import CURATOR, GAUSSIAN_SHARED, gaussian_view, prepare_own_rows
from mpc_pca.dp.curator import CuratorConfig, CuratorModel, Mechanism, curator_role, provider_role
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "CuratorDeployment"]

NAMES = ("ag", "pooled")
#: What every party of a pooled (non-private) run must announce alike: it has no privacy parameters.
POOLED_SHARED = ("protocol", "n_components", "row_norm")
#: Every party's announcement, by registry name: pooled PCA announces no privacy parameter.
SCHEMAS: dict[str, dict[str, Key]] = {"ag": gaussian_schema("ag"), "pooled": subspace_schema("pooled")}


@dataclass(frozen=True)
class CuratorDeployConfig:
    """The agreed run: the curator protocol's :class:`CuratorConfig` and the settings the result reports."""

    config: CuratorConfig
    settings: dict[str, Any]


class CuratorDeployment(HoldersFirst):
    """A centralized baseline's providers and trusted curator as separate parties.

    Parameters
    ----------
    name : {"ag", "pooled"}
        The registry name: Analyze Gauss, or non-private pooled PCA.
    """

    others = (CURATOR,)

    names = NAMES

    def mechanism(self, config: CuratorDeployConfig) -> Mechanism:
        """The curator's mechanism, built by the estimator ``mpc-pca run`` uses (so the two cannot drift)."""
        s = config.settings
        k = config.config.n_components
        if self.name == "pooled":
            return PooledPCA(n_components=k, row_norm=s["row_norm"])._mechanism(k)
        estimator = AnalyzeGaussPCA(
            n_components=k,
            epsilon=s["epsilon"],
            delta=s["delta"],
            neighbour=s["neighbour"],
            row_norm=s["row_norm"],
            noise_calibration=s["noise_calibration"],
        )
        return estimator._mechanism(k)

    def _view(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The checked settings: AG's privacy parameters; pooled PCA adds no noise and has none."""
        if self.name == "pooled":
            return {
                "protocol": self.name,
                "n_components": check_components_setting(settings.get("n_components")),
                "row_norm": refuse_pooled_scaling(settings, self.name),
            }
        return gaussian_view(self.name, settings)

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings, plus the width of a provider's rows (checked, row norms per ``row_norm``)."""
        view = self._view(settings)
        if party.startswith("provider"):
            rows = prepare_own_rows(party, data, view, self.name, clip=False)
            check_n_components(view["n_components"], rows.shape[1])
            view["n_features"] = int(rows.shape[1])
        else:
            check_no_data(party, data)
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> CuratorDeployConfig:
        """:class:`CuratorConfig` from the announcements, refused (naming parties) where they differ.

        Raises
        ------
        InputValidationError
            Naming the sender of an announcement that does not fit :data:`SCHEMAS`,
            or every party where announcements differ.
        """
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMAS[self.name], holders, HOLDER_WIDTH_SCHEMA)
        agreed = agree(views, POOLED_SHARED if self.name == "pooled" else GAUSSIAN_SHARED)
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        return CuratorDeployConfig(CuratorConfig(n_providers, d, k), agreed)

    def message_cap(self, config: CuratorDeployConfig) -> int:
        """A provider's packed Gram matrix (``D(D+1)/2`` floats) or the ``K x D`` components."""
        d, k = config.config.n_features, config.config.n_components
        return floats_cap(max(d * (d + 1) // 2, k * d))

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | None
    ) -> np.random.Generator | None:
        """The curator's generator is ``run_centralized``'s only one (index 0); providers draw none."""
        return seeded_generator(noise_seed, 0) if party == CURATOR else None

    def role(
        self,
        party: str,
        config: CuratorDeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        cfg = config.config
        if party == CURATOR:
            if rng is None:
                raise InputValidationError("the curator needs a noise generator")
            mechanism = self.mechanism(config)
            return lambda p: curator_role(p, cfg, mechanism, rng)
        rows = prepare_own_rows(party, data, config.settings, self.name)
        return lambda p: provider_role(p, rows, cfg)

    def result(self, party: str, config: CuratorDeployConfig, output: Any) -> dict[str, Any]:
        """The curator's release as ``run --protocol ag|pooled`` writes it (but :data:`HARNESS_FIELDS`)."""
        if party != CURATOR:
            return {"components": np.asarray(output).tolist()} if party.startswith("provider") else {}
        model: CuratorModel = output
        return subspace_fields(model.components, model.explained_variance, model.n_samples, config.settings)

    def result_party(self, layout: Mapping[str, int]) -> str:
        return CURATOR
