"""capeAGN between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``capeagn``.

The roles of :mod:`mpc_pca.dp.capeagn` (Imtiaz & Sarwate, JSTSP 2018, §5),
one party each, in capePCA's layout: ``provider0 .. provider{S-1}`` (ranks
``0 .. S-1``), the ``aggregator`` (rank ``S``) and the ``noise-generator``
(rank ``S + 1``). With a noise seed rank ``r`` takes the ``r``-th generator
of that seed (:func:`~mpc_pca.deployment_kit.seeded_generator`; the
aggregator's also drives the tensor power method's starts), in every runner,
so a deployed run reproduces the estimator's result.

Announced (public) settings: every party's ``n_components``, ``model``,
``sigma``, ``budget_split``, ``epsilon``, ``delta``, ``neighbour``,
``noise_calibration``, ``cape_calibration`` and ``row_norm``; each site adds
its number of features. ``N_s`` goes to the aggregator and the noise
generator in step 1, as in-process, and is never announced.

Every announcement is checked against :data:`SCHEMA` (a site's against
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
    check_own_rows,
    floats_cap,
    gaussian_schema,
    refuse_pooled_scaling,
    seeded_generator,
)
from mpc_pca.dp.agn_core import PowerMethodOptions
from mpc_pca.dp.agn_privacy import AGNBudget, check_budget_split, check_release_calibration
from mpc_pca.dp.cape import check_calibration
from mpc_pca.dp.capeagn import AGNConfig, AGNModel, aggregator_role, noise_generator_role, site_role
from mpc_pca.dp.common import AGGREGATOR, GAUSSIAN_OPTIONS, NOISE_GENERATOR, check_privacy, prepare_own_rows
from mpc_pca.dp.moments import check_documents, check_model, check_sigma
from mpc_pca.dp.tensors import n_unique_entries
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "CapeAGNDeployment"]

SHARED = (
    "protocol",
    "n_components",
    "model",
    "sigma",
    "budget_split",
    "epsilon",
    "delta",
    "neighbour",
    "noise_calibration",
    "cape_calibration",
    "row_norm",
)
#: Every party's announcement: the Gaussian settings (``n_components`` required: the number of
#: topics / mixture components), the latent-variable model, its ``sigma`` (``None`` for ``stm``),
#: the budget split and the CAPE calibration. Types and ranges only; the values' meaning is
#: checked after agreement, by :func:`agn_view` (as each party checked its own).
SCHEMA: dict[str, Key] = {
    **gaussian_schema("capeagn"),
    "n_components": Key("int", 1, MAX_FEATURES),
    "model": Key("text"),
    "sigma": Key("real", nullable=True),
    "budget_split": Key("real"),
    "cape_calibration": Key("text"),
}


@dataclass(frozen=True)
class AGNDeployConfig:
    """The agreed run: capeAGN's :class:`AGNConfig` and the settings the result reports."""

    config: AGNConfig
    settings: dict[str, Any]


def agn_view(name: str, settings: Mapping[str, Any]) -> dict[str, Any]:
    """A party's checked capeAGN settings, with the CLI's defaults (``model="stm"``, split 0.5).

    Raises
    ------
    InputValidationError
        As :func:`~mpc_pca.dp.capeagn.make_agn_config` does, before any peer is involved.
    """
    model = check_model(settings.get("model") or "stm")
    eps, dlt, _ = check_privacy(settings.get("epsilon"), settings.get("delta"), settings.get("neighbour"))
    split = check_budget_split(0.5 if settings.get("budget_split") is None else settings.get("budget_split"))
    calibration = str(settings.get("noise_calibration"))
    check_release_calibration(calibration, eps, dlt, split)
    k = settings.get("n_components")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InputValidationError(
            f"n_components={k!r}: capeAGN needs the number of topics / mixture components, a positive integer"
        )
    return {
        "protocol": name,
        "n_components": k,
        "model": model,
        "sigma": check_sigma(model, settings.get("sigma")),  # refused with stm, which has no sigma
        "budget_split": split,
        "epsilon": eps,
        "delta": dlt,
        "neighbour": str(settings.get("neighbour")),
        "noise_calibration": calibration,
        "cape_calibration": check_calibration(settings.get("cape_calibration", "joint")),
        "row_norm": _row_norm(model, refuse_pooled_scaling(settings, name)),
    }


class CapeAGNDeployment(HoldersFirst):
    """capeAGN's sites, untrusted aggregator and trusted noise generator as separate parties.

    Parameters
    ----------
    name : {"capeagn"}
        The registry name.
    power : PowerMethodOptions, optional
        Restarts, iterations and tolerance of the aggregator's robust tensor
        power method (the defaults of :class:`~mpc_pca.dp.agn_core.PowerMethodOptions`
        if omitted; ``CapeAGN`` passes its own).
    """

    others = (AGGREGATOR, NOISE_GENERATOR)

    #: Its rows are word counts or mixture samples: scaling the pooled rows would change the model.
    accepts_pooled_scaling = False
    variants = MappingProxyType(
        {
            "capeagn": Variant(
                "capeAGN: DP topic model / Gaussian mixture by tensor decomposition with CAPE (JSTSP 2018, sec. 5)",
                {
                    **GAUSSIAN_OPTIONS,
                    "cape_calibration": "joint",
                    "model": "stm",
                    "sigma": None,
                    "budget_split": 0.5,
                },
                (
                    "components",
                    "weights",
                    "whitening",
                    "tensor_eigenvalues",
                    "n_samples",
                    "report",
                    "epsilon",
                    "delta",
                    "neighbour",
                    "row_norm",
                    "model",
                    "sigma",
                    "budget_split",
                    "calibration",
                    "noise_calibration",
                    "effective_epsilon",
                    "m2_noise_scale",
                    "m3_noise_scale",
                ),
            )
        }
    )

    def __init__(self, name: str | None = None, *, power: PowerMethodOptions | None = None) -> None:
        super().__init__(name)
        self.power = PowerMethodOptions() if power is None else power

    def _rows(self, party: str, data: Any, view: Mapping[str, Any], clip: bool) -> NDArray[np.float64]:
        # clip: the site's own computation (bound the rows, warn); else the pre-flight check (no warning)
        if view["model"] == "stm":  # word counts: checked, never bounded
            return check_documents(
                check_own_rows(party, data), int(party.removeprefix("provider")), warn=clip
            )
        return prepare_own_rows(party, data, view, self.name, clip=clip)

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings, plus the width of a site's rows (word counts, or rows per ``row_norm``)."""
        view = agn_view(self.name, settings)
        if party.startswith("provider"):
            rows = self._rows(party, data, view, clip=False)
            check_n_components(view["n_components"], rows.shape[1])
            view["n_features"] = int(rows.shape[1])
        else:
            check_no_data(party, data)
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> AGNDeployConfig:
        """:class:`AGNConfig` (this object's power-method options), refused where announcements differ.

        Raises
        ------
        InputValidationError
            Naming the sender of an announcement that does not fit :data:`SCHEMA`,
            or every party where announcements differ or a value is invalid.
        """
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMA, holders, HOLDER_WIDTH_SCHEMA)
        agreed = agn_view(self.name, agree(views, SHARED))  # the agreed values, checked as a party's own
        d = agree_width(views, holders)
        k = check_n_components(agreed["n_components"], d)
        eps, dlt, relation = check_privacy(agreed["epsilon"], agreed["delta"], agreed["neighbour"])
        budget = AGNBudget(
            agreed["model"],
            d,
            check_sigma(agreed["model"], agreed["sigma"]),
            eps,
            dlt,
            relation,
            agreed["budget_split"],
            agreed["noise_calibration"],
        )
        config = AGNConfig(n_providers, d, k, budget, agreed["cape_calibration"], self.power)
        return AGNDeployConfig(config, agreed)

    def message_cap(self, config: AGNDeployConfig) -> int:
        """Packed ``M2`` terms (``D(D+1)/2`` floats), ``W`` and the components (``D K``), packed ``M3`` terms."""
        d, k = config.config.n_features, config.config.n_components
        return floats_cap(max(d * (d + 1) // 2, d * k, n_unique_entries(k)))

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator:
        """Rank ``r``'s generator: the ``r``-th of the noise seed's, in rank order."""
        return seeded_generator(noise_seed, layout[party])

    def role(
        self,
        party: str,
        config: AGNDeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        if rng is None:
            raise InputValidationError(f"{party} needs a noise generator in capeAGN")
        cfg = config.config
        if party == AGGREGATOR:
            return lambda p: aggregator_role(p, cfg, rng)
        if party == NOISE_GENERATOR:
            return lambda p: noise_generator_role(p, cfg, rng)
        rows = self._rows(party, data, config.settings, clip=True)
        return lambda p: site_role(p, rows, cfg, rng)

    def result(self, party: str, config: AGNDeployConfig, output: Any) -> dict[str, Any]:
        """The aggregator's model as ``mpc-pca run`` writes it for capeagn (but :data:`HARNESS_FIELDS`)."""
        if party != AGGREGATOR:
            return {}
        model: AGNModel = output
        s = config.settings
        return {
            "components": model.components.tolist(),
            "weights": model.weights.tolist(),
            "whitening": model.whitening.tolist(),
            "tensor_eigenvalues": model.tensor_eigenvalues.tolist(),
            "n_samples": int(sum(model.site_samples)),
            "epsilon": float(s["epsilon"]),
            "delta": float(s["delta"]),
            "neighbour": s["neighbour"],
            "row_norm": s["row_norm"],
            "model": s["model"],
            "sigma": s["sigma"],
            "budget_split": s["budget_split"],
            "calibration": model.calibration,
            "noise_calibration": s["noise_calibration"],
            "effective_epsilon": model.effective_epsilon,
            "m2_noise_scale": model.aggregate_scale(2),
            "m3_noise_scale": model.aggregate_scale(3),
        }

    def result_party(self, layout: Mapping[str, int]) -> str:
        return AGGREGATOR


def _row_norm(model: str, row_norm: Any) -> Any:
    """The row-norm policy, refused with ``stm`` unless the default: word counts are checked, not clipped."""
    if model == "stm" and row_norm not in (None, "clip"):
        raise InputValidationError(
            f"row_norm={row_norm!r} applies to model='mog' only; model='stm' rows are word "
            "counts, checked as such"
        )
    return row_norm
