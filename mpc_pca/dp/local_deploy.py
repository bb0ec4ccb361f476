"""``local``: Analyze Gauss on one site's rows only (the ``q_local`` of Imtiaz & Sarwate, ICASSP 2018).

One protocol object with the providers as its only parties: the chosen site
perturbs its own ``A_s = X_s^T X_s / N_s`` with sensitivity ``Delta / N_s``
(Analyze Gauss, Dwork et al. 2014) and keeps the top-``K`` eigenvectors; the
other providers hold rows but do nothing, and nothing is sent. The site takes
the run's noise generator 0. A comparison baseline: it runs as threads only
(:attr:`LocalDeployment.deployable` is False).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import PublicSettings, Role, Variant
from mpc_pca.deployment_kit import (
    HOLDER_WIDTH_SCHEMA,
    HoldersFirst,
    agree,
    agree_width,
    check_announcements,
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
from mpc_pca.dp.mechanisms import (
    Neighbour,
    gaussian_noise_scale,
    second_moment_sensitivity,
    symmetric_gaussian_noise,
)
from mpc_pca.linalg import flip_signs, top_eigenpairs
from mpc_pca.validation import check_n_components
from protocols.errors import InputValidationError
from protocols.party import Party

ORDERINGS = ("eigenvalue", "magnitude")


@dataclass(frozen=True)
class LocalRelease:
    """The site's release: its top-``K`` eigenpairs of ``Â_s``, its row count and its noise scale."""

    components: NDArray[np.float64]
    explained_variance: NDArray[np.float64]
    n_samples: int
    noise_scale: float


@dataclass(frozen=True)
class LocalConfig:
    """The agreed run: ``K``, the privacy parameters and the settings the result reports."""

    n_components: int
    epsilon: float
    delta: float
    relation: Neighbour
    settings: dict[str, Any]


def local_release(
    data: NDArray[np.float64], config: LocalConfig, rng: np.random.Generator, ordering: str
) -> LocalRelease:
    """Analyze Gauss on ``data`` alone (ICASSP 2018, ``q_local``): ``A_s + E`` and its top ``K``.

    ``ordering="magnitude"`` keeps the ``K`` largest ``|eigenvalue|`` (the SVD of
    the authors' code) instead of the ``K`` largest eigenvalues.
    """
    n_s, k = data.shape[0], config.n_components
    calibration = config.settings["noise_calibration"]
    sensitivity = second_moment_sensitivity(n_s, config.relation)
    scale = gaussian_noise_scale(sensitivity, config.epsilon, config.delta, calibration)
    noisy = data.T @ data / n_s + symmetric_gaussian_noise(data.shape[1], scale, rng)
    if ordering == "magnitude":
        all_values, vectors = np.linalg.eigh(noisy)
        order = np.argsort(np.abs(all_values))[::-1][:k]
        return LocalRelease(flip_signs(vectors[:, order].T), np.abs(all_values[order]), n_s, scale)
    values, components, _ = top_eigenpairs(noisy, k)
    return LocalRelease(components, values, n_s, scale)


class LocalDeployment(HoldersFirst):
    """One site's local Analyze Gauss release; the other providers take part but send nothing.

    Parameters
    ----------
    name : {"local"}
        The registry name.
    site : int, default=0
        The index of the provider whose rows are used.
    ordering : {"eigenvalue", "magnitude"}, default="eigenvalue"
        Which ``K`` eigenpairs of ``Â_s`` the site keeps (:func:`local_release`).
    """

    variants = MappingProxyType(
        {
            "local": Variant(
                "Analyze Gauss on the first party's rows only (ICASSP 2018 q_local)",
                GAUSSIAN_OPTIONS,
                DP_FIELDS,
                deployable=False,
            )
        }
    )

    def __init__(self, name: str | None = None, site: int = 0, ordering: str = "eigenvalue") -> None:
        super().__init__(name)
        if ordering not in ORDERINGS:
            raise InputValidationError(
                f"ordering={ordering!r} is not supported; choose one of {list(ORDERINGS)}"
            )
        self.site = site
        self.ordering = ordering

    def site_name(self, n_providers: int) -> str:
        """The name of the provider whose rows are used in a run with ``n_providers`` data holders.

        Raises
        ------
        InputValidationError
            If ``site`` is not an integer (numpy's included) in ``0 .. n_providers - 1``.
        """
        site = self.site
        if isinstance(site, bool) or not isinstance(site, Integral) or not 0 <= site < n_providers:
            raise InputValidationError(f"site={site!r} must index one of the {n_providers} parts")
        return self.holder_names(n_providers)[int(site)]

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings, plus the width of the provider's rows."""
        view = gaussian_view(self.name, settings)
        rows = prepare_own_rows(party, data, view, self.name, clip=False)
        check_n_components(view["n_components"], rows.shape[1])
        view["n_features"] = int(rows.shape[1])
        return view

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> LocalConfig:
        """The agreed ``K`` and privacy parameters; refused (naming parties) where announcements differ."""
        holders = self.check_views(views, n_providers)
        self.site_name(n_providers)
        check_announcements(views, gaussian_schema(self.name), holders, HOLDER_WIDTH_SCHEMA)
        agreed = agree(views, GAUSSIAN_SHARED)
        k = check_n_components(agreed["n_components"], agree_width(views, holders))
        eps, dlt, relation = check_privacy(
            agreed["epsilon"], agreed["delta"], agreed["neighbour"], agreed["noise_calibration"]
        )
        return LocalConfig(k, eps, dlt, relation, agreed)

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """The site takes generator 0; the others draw no noise."""
        return seeded_generator(noise_seed, 0) if party == self.site_name(len(layout)) else None

    def role(
        self,
        party: str,
        config: LocalConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        if rng is None:
            return lambda p: None
        rows = prepare_own_rows(party, data, config.settings, self.name)
        ordering = self.ordering

        def site(p: Party) -> LocalRelease:
            return local_release(rows, config, rng, ordering)

        return site

    def result(self, party: str, config: LocalConfig, output: Any) -> dict[str, Any]:
        """The site's release as ``mpc-pca run`` writes it for local."""
        if output is None:
            return {}
        release: LocalRelease = output
        return subspace_fields(
            release.components, release.explained_variance, release.n_samples, config.settings
        )

    def result_party(self, layout: Mapping[str, int]) -> str:
        return self.site_name(len(layout))


__all__ = ["LocalDeployment", "LocalRelease", "local_release"]
