"""The trusted-curator protocols: ``ag``, ``pooled`` and the in-process baselines ``sn``, ``ppm``, ``ppca``.

The roles of :mod:`mpc_pca.dp.curator`, one party each:
``provider0 .. provider{S-1}`` (ranks ``0 .. S-1``) and the ``curator``
(rank ``S``). The curator applies one mechanism to the pooled second-moment
matrix; each variant names the estimator whose mechanism it is
(:data:`VARIANTS`): :class:`~mpc_pca.dp.baselines.AnalyzeGaussPCA` (``ag``;
Dwork et al. 2014, the ``q_pooled`` of ICASSP 2018),
:class:`~mpc_pca.dp.baselines.PooledPCA` (``pooled``, non-private),
:class:`~mpc_pca.dp.mechanism_baselines.RetractedSNPCA` (``sn``, retracted,
not DP), :class:`~mpc_pca.dp.mechanism_baselines.PrivatePowerMethodPCA`
(``ppm``) and :class:`~mpc_pca.dp.mechanism_baselines.ExponentialMechanismPCA`
(``ppca``). An estimator passes its own mechanism
(``CuratorDeployment(name, mechanism=...)``), so its parameters beyond the
settings apply. Only ``ag`` and ``pooled`` deploy between organisations; the
others are comparison baselines run as threads. The curator takes the run's
noise generator 0; providers draw no noise.

Announced (public) settings: every party's ``n_components``, ``row_norm``
and the variant's privacy settings (``ag``: ``epsilon``, ``delta``,
``neighbour``, ``noise_calibration``; ``pooled``: none); each provider adds
its number of features. ``N_s`` is sent to the curator with the Gram matrix,
never announced.

Every announcement is checked against the variant's schema (a provider's
against :data:`~mpc_pca.deployment_kit.HOLDER_WIDTH_SCHEMA` too) before any
value is compared or used: exactly those keys, each of its type and range, or
an :class:`~protocols.errors.InputValidationError` naming the sender, the key,
the value and the limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
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
    check_components_setting,
    check_no_data,
    floats_cap,
    refuse_pooled_scaling,
    seeded_generator,
    subspace_fields,
    subspace_schema,
)
from mpc_pca.dp.common import (
    CURATOR,
    DP_FIELDS,
    GAUSSIAN_OPTIONS,
    GAUSSIAN_SHARED,
    gaussian_view,
    prepare_own_rows,
)
from mpc_pca.dp.curator import CuratorConfig, CuratorModel, Mechanism, curator_role, provider_role
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "CuratorDeployment"]

#: What every party of a pooled (non-private) run must announce alike: it has no privacy parameters.
POOLED_SHARED = ("protocol", "n_components", "row_norm")
#: The type of each privacy setting a curator variant announces (their meaning is checked by its mechanism).
PRIVACY_KEYS: dict[str, Key] = {
    "epsilon": Key("real"),
    "delta": Key("real"),
    "neighbour": Key("text"),
    "noise_calibration": Key("text"),
}
_SN_WARNING = "retracted mechanism: not differentially private"


def _variant(
    summary: str,
    options: Mapping[str, Any],
    estimator: str,
    *extra: str,
    deployable: bool = True,
    **params: Any,
) -> Variant:
    """A curator variant: its estimator's mechanism, the settings it takes, its extra result fields."""
    fields = DP_FIELDS + extra
    return Variant(summary, options, fields, deployable=deployable, params={"estimator": estimator, **params})


#: The curator's variants: which estimator's mechanism the curator applies. The in-process
#: comparison baselines (``sn``, ``ppm``, ``ppca``) do not deploy: ``sn`` is not DP at all.
VARIANTS: dict[str, Variant] = {
    "ag": _variant(
        "Analyze Gauss on the pooled data, trusted curator (Dwork et al. 2014)",
        GAUSSIAN_OPTIONS,
        "AnalyzeGaussPCA",
    ),
    "sn": _variant(
        "SN Wishart noise (Imtiaz & Sarwate 2016): RETRACTED, NOT DP, comparison only",
        {k: GAUSSIAN_OPTIONS[k] for k in ("epsilon", "neighbour", "row_norm")},
        "RetractedSNPCA",
        "privacy_warning",
        deployable=False,
        fields={"privacy_warning": _SN_WARNING},
    ),
    "ppm": _variant(
        "private power method, trusted curator (Hardt & Price 2014)",
        {k: v for k, v in GAUSSIAN_OPTIONS.items() if k != "noise_calibration"},
        "PrivatePowerMethodPCA",
        "n_iter",
        deployable=False,
    ),
    "ppca": _variant(
        "exponential mechanism by Gibbs sampling, trusted curator (Chaudhuri et al. 2013)",
        {k: GAUSSIAN_OPTIONS[k] for k in ("epsilon", "row_norm")},
        "ExponentialMechanismPCA",
        deployable=False,
    ),
    "pooled": _variant(
        "non-private PCA of the pooled second-moment matrix", {"row_norm": "clip"}, "PooledPCA"
    ),
}


def _estimator_class(name: str) -> type:
    """The estimator whose mechanism a variant's curator applies (imported when a run needs it)."""
    from mpc_pca.dp import baselines, mechanism_baselines

    return getattr(baselines, name, None) or getattr(mechanism_baselines, name)


@dataclass(frozen=True)
class CuratorDeployConfig:
    """The agreed run: the curator protocol's :class:`CuratorConfig` and the settings the result reports."""

    config: CuratorConfig
    settings: dict[str, Any]


class CuratorDeployment(HoldersFirst):
    """A centralized baseline's providers and trusted curator as separate parties.

    Parameters
    ----------
    name : {"ag", "sn", "ppm", "ppca", "pooled"}
        The registry name: which mechanism the curator applies.
    mechanism : callable, optional
        ``mechanism(k) -> Mechanism``: the curator's mechanism for ``k``
        components, given by an estimator with its own parameters; by default
        the variant's estimator is built from the run's settings.
    """

    others = (CURATOR,)
    variants = MappingProxyType(VARIANTS)

    def __init__(self, name: str | None = None, mechanism: Callable[[int], Mechanism] | None = None) -> None:
        super().__init__(name)
        self._mechanism = mechanism
        self._privacy = tuple(key for key in PRIVACY_KEYS if key in self.options)

    def _estimator(self, settings: Mapping[str, Any], k: int | None) -> Any:
        """The variant's estimator with the run's settings, its parameters checked."""
        keys = {key: settings[key] for key in (*self._privacy, "row_norm")}
        estimator = _estimator_class(self.params["estimator"])(n_components=k, **keys)
        estimator._validate()
        return estimator

    def mechanism(self, config: CuratorDeployConfig) -> Mechanism:
        """The curator's mechanism: the one given, else built by the variant's estimator (so the two cannot drift)."""
        k = config.config.n_components
        if self._mechanism is not None:
            return self._mechanism(k)
        estimator = self._estimator(config.settings, k)
        estimator.n_features_in_ = config.config.n_features  # as a fit on the pooled rows would set it
        return estimator._mechanism(k)

    def _view(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """The checked settings: the subspace keys and the variant's privacy parameters."""
        if set(GAUSSIAN_SHARED) <= {"protocol", "n_components", *self.options}:
            return gaussian_view(self.name, settings)
        k = check_components_setting(settings.get("n_components"))
        view = {
            "protocol": self.name,
            "n_components": k,
            "row_norm": refuse_pooled_scaling(settings, self.name),
            **{key: settings.get(key) for key in self._privacy},
        }
        if self._mechanism is None:
            self._estimator(view, k)  # refuses invalid privacy parameters by name
        return view

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
        schema = {**subspace_schema(self.name), **{key: PRIVACY_KEYS[key] for key in self._privacy}}
        check_announcements(views, schema, holders, HOLDER_WIDTH_SCHEMA)
        agreed = agree(views, (*POOLED_SHARED, *self._privacy))
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        return CuratorDeployConfig(CuratorConfig(n_providers, d, k), agreed)

    def message_cap(self, config: CuratorDeployConfig) -> int:
        """A provider's packed Gram matrix (``D(D+1)/2`` floats) or the ``K x D`` components."""
        d, k = config.config.n_features, config.config.n_components
        return floats_cap(max(d * (d + 1) // 2, k * d))

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """The curator takes generator 0 of the run's noise seed; providers draw none."""
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
        """The curator's release as ``mpc-pca run`` writes it for ag|pooled (but :data:`HARNESS_FIELDS`)."""
        if party != CURATOR:
            return {"components": np.asarray(output).tolist()} if party.startswith("provider") else {}
        model: CuratorModel = output
        fields = subspace_fields(model.components, model.explained_variance, model.n_samples, config.settings)
        fields.update(self.params.get("fields", {}))
        fields.update(
            {key: model.fitted[f"{key}_"] for key in self.result_fields if f"{key}_" in model.fitted}
        )
        return fields

    def result_party(self, layout: Mapping[str, int]) -> str:
        return CURATOR
