"""pppca-dp between organisations: the :class:`~mpc_pca.deployment.Deployment` of ``pppca-dp``.

The roles of :mod:`mpc_pca.pppca.dp_sum`, one party each:
``provider0 .. provider{M-1}`` (ranks ``0 .. M-1``) and the ``server``
(rank ``M``), each with its own secure-sum backend built from the agreed
settings. Every provider draws its discrete-Gaussian noise share exactly
(Canonne, Kamath & Steinke 2020) from :mod:`secrets`, in-process too: the
private default. With a noise seed (experiments only: not private) provider
``i`` draws from a source seeded by the ``i``-th generator of that seed
(:func:`~mpc_pca.pppca.dp_sum.noise_source`), as ``PPPCADP(random_state=seed)``
does in-process, so the two runs add the same noise and agree exactly.

Announced (public) settings: every party's ``n_components``, ``epsilon``,
``delta``, ``noise_calibration``, ``min_honest``, ``backend``, ``frac_bits``
and ``key_bits``; each provider adds its number of features. No row count
is announced: the server learns only the total ``N``, from the secure sum of
step 2. ``PPPCADP``, which holds every part, runs the same object with
``public_rows=True`` (``N`` public before the run, as its sensitivities
assume) and with its own backend object, centring and ``mean_share``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import MODEL_FIELDS, PublicSettings, Role, Variant
from mpc_pca.deployment_kit import (
    CAP_SLACK,
    FLOOR_SCHEMA,
    HARNESS_FIELDS,
    HOLDER_WIDTH_SCHEMA,
    MAX_FEATURES,
    HoldersFirst,
    Key,
    agree,
    agree_width,
    check_announcements,
    check_components_setting,
    check_no_data,
    check_own_rows,
    seeded_generator,
)
from mpc_pca.pppca.dp_rounding import check_row_rounding
from mpc_pca.pppca.dp_sum import (
    DEFAULT_FRAC_BITS,
    DPSumModel,
    DPSumPlan,
    check_plan_parameters,
    noise_source,
    provider_role,
    provider_statistics,
    server_role,
)
from mpc_pca.roles import SERVER
from mpc_pca.validation import check_n_components
from protocols.backends import BACKEND_NAMES, SecureSumBackend, backend_class, make_backend
from protocols.dp.calibration import check_delta_value, check_epsilon_value, gaussian_sigma
from protocols.errors import InputValidationError

__all__ = ["HARNESS_FIELDS", "PPPCADPDeployment"]

SHARED = (
    "protocol",
    "n_components",
    "epsilon",
    "delta",
    "noise_calibration",
    "min_honest",
    "backend",
    "frac_bits",
    "key_bits",
)
#: Every party's announcement, checked (naming the sender) before anything is compared or used.
SCHEMA: dict[str, Key] = {
    **FLOOR_SCHEMA,
    "protocol": Key("text", choices=("pppca-dp",)),
    "n_components": Key("int", 1, MAX_FEATURES, nullable=True),
    "epsilon": Key("real"),
    "delta": Key("real"),
    "noise_calibration": Key("text"),
    "min_honest": Key("int", 1, 1 << 16, nullable=True),
    "backend": Key("text", choices=BACKEND_NAMES),
    "frac_bits": Key("int", 0, 52),
    "key_bits": Key("int", 1, 1 << 14, nullable=True),
}
#: Share of the squared privacy loss spent on the column sums (``PPPCADP``'s default, which the CLI uses).
MEAN_SHARE = 0.1
#: A provider's row count, announced only by a run whose row counts are public (``public_rows``).
ROWS_KEY: dict[str, Key] = {"n_rows": Key("int", 0, 1 << 62)}

BackendFactory = Callable[[Mapping[str, Any]], SecureSumBackend]


@dataclass(frozen=True)
class PPPCADPDeployConfig:
    """The agreed run: the noise plan, ``k``, the public ``N`` (if any) and the backend settings."""

    plan: DPSumPlan
    n_components: int
    settings: dict[str, Any]
    n_samples: int | None = None


class PPPCADPDeployment(HoldersFirst):
    """pppca-dp's providers and server as separate parties.

    Parameters
    ----------
    name : {"pppca-dp"}
        The registry name.
    backend_factory : callable, optional
        ``backend_factory(settings) -> SecureSumBackend`` gives a party's
        backend instead of :func:`~protocols.backends.make_backend` (e.g. the
        backend object ``PPPCADP`` was given); the backend's name in the
        settings is still the one the parties agree on.
    centre : bool, default=True
        Centre at the noisy pooled mean; ``False`` releases only ``G + E``
        (second moment, :mod:`mpc_pca.pppca.dp_sum`), which needs ``public_rows``.
    mean_share : float, default=0.1
        Share of the squared privacy loss spent on the column sums.
    public_rows : bool, default=False
        Whether each provider announces its row count, so that ``N`` is public
        before the run (as ``PPPCADP`` holds every part): ``n_components=None``
        is then ``min(N, d)``, the server checks the summed count against ``N``
        and the providers' range checks use ``N``. By default no row count is
        announced and the server learns ``N`` from the secure sum.
    """

    others = (SERVER,)

    variants = MappingProxyType(
        {
            "pppca-dp": Variant(
                "PPPCA with discrete-Gaussian DP noise added by the providers inside the secure sum",
                {
                    "backend": "additive",
                    "frac_bits": None,
                    "key_bits": None,
                    "epsilon": 1.0,
                    "delta": 1e-5,
                    "noise_calibration": "analytic",
                    "min_honest": None,
                },
                (
                    *MODEL_FIELDS,
                    "backend",
                    "explained_variance_ratio",
                    "epsilon",
                    "delta",
                    "min_honest",
                    "noise_std",
                    "epsilon_by_colluders",
                ),
            )
        }
    )

    def __init__(
        self,
        name: str | None = None,
        *,
        backend_factory: BackendFactory | None = None,
        centre: bool = True,
        mean_share: float = MEAN_SHARE,
        public_rows: bool = False,
    ) -> None:
        super().__init__(name)
        self._factory = backend_factory
        self.centre = centre
        self.mean_share = mean_share
        self.public_rows = public_rows

    def backend(self, settings: Mapping[str, Any]) -> SecureSumBackend:
        """A party's own secure-sum backend for the agreed ``settings`` (the same settings at every party)."""
        if self._factory is not None:
            return self._factory(settings)
        return make_backend(
            settings["backend"], frac_bits=settings["frac_bits"], key_bits=settings["key_bits"]
        )

    def _check_backend(self, settings: Mapping[str, Any]) -> str:
        """The backend's name, refused unless it works in the 64-bit fixed-point ring."""
        backend = settings.get("backend") or "additive"
        in_ring = (
            backend_class(backend).fixed_point_ring
            if self._factory is None
            else getattr(self._factory(settings), "fixed_point_ring", True)
        )
        if not in_ring:
            raise InputValidationError(
                f"backend {backend!r} encodes in its own ring; pppca-dp adds integer noise in the 64-bit "
                "fixed-point ring and needs 'additive', 'additive-masks' or 'paillier'"
            )
        return str(backend)

    def public(
        self, party: str, data: NDArray[np.float64] | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        """Checked settings (privacy, backend, ring), plus the width (and, if public, count) of a provider's rows."""
        eps = check_epsilon_value(settings.get("epsilon"))
        dlt = check_delta_value(settings.get("delta"))
        calibration = str(settings.get("noise_calibration", "analytic"))
        gaussian_sigma(1.0, eps, dlt, calibration)  # e.g. classical with epsilon >= 1 is refused here
        _refuse_row_norm(settings.get("row_norm", "clip"))
        h = settings.get("min_honest")
        if h is not None and (isinstance(h, bool) or not isinstance(h, int) or h < 1):
            raise InputValidationError(f"min_honest={h!r} must be None or a positive integer")
        backend = self._check_backend(settings)
        frac_bits = DEFAULT_FRAC_BITS if settings.get("frac_bits") is None else settings["frac_bits"]
        key_bits = settings.get("key_bits")
        for option, value in (("frac_bits", frac_bits), ("key_bits", key_bits)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
                raise InputValidationError(f"{option}={value!r} must be an integer")
        view = {
            "protocol": self.name,
            "n_components": check_components_setting(settings.get("n_components")),
            "epsilon": eps,
            "delta": dlt,
            "noise_calibration": calibration,
            "min_honest": h,
            "backend": backend,
            "frac_bits": frac_bits,
            "key_bits": key_bits,
        }
        self.backend(view)  # validates the name and the bits
        check_plan_parameters(eps, dlt, 1 if h is None else h, h, self.mean_share, frac_bits)
        if party.startswith("provider"):
            view.update(self._holder_view(party, data, view))
        else:
            check_no_data(party, data)
        return view

    def _holder_view(self, party: str, data: Any, view: Mapping[str, Any]) -> dict[str, int]:
        """A provider's width (and row count, when public), its rows checked against the settings."""
        rows = check_own_rows(party, data)
        check_n_components(view["n_components"], rows.shape[1])
        check_row_rounding(view["frac_bits"], rows.shape[1])
        own = {"n_features": int(rows.shape[1])}
        if self.public_rows:
            own["n_rows"] = int(rows.shape[0])
        return own

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> PPPCADPDeployConfig:
        """The :class:`DPSumPlan` (this object's centring and ``mean_share``), refused where announcements differ."""
        holders = self.check_views(views, n_providers)
        holder_schema = {**HOLDER_WIDTH_SCHEMA, **(ROWS_KEY if self.public_rows else {})}
        check_announcements(views, self._schema(), holders, holder_schema)
        agreed = agree(views, SHARED)
        d = agree_width(views, holders)
        n_samples = sum(int(views[h]["n_rows"]) for h in holders) if self.public_rows else None
        k = check_n_components(agreed["n_components"], d, n_samples)
        check_row_rounding(agreed["frac_bits"], d)
        eps, dlt, h, share = check_plan_parameters(
            agreed["epsilon"],
            agreed["delta"],
            n_providers,
            agreed["min_honest"],
            self.mean_share,
            agreed["frac_bits"],
        )
        plan = DPSumPlan(
            n_providers, d, eps, dlt, agreed["frac_bits"], h, self.centre, share, agreed["noise_calibration"]
        )
        return PPPCADPDeployConfig(plan, k, agreed, n_samples)

    def _schema(self) -> dict[str, Key]:
        """:data:`SCHEMA`; any backend name with a backend factory (its backend need not be a registered one)."""
        return SCHEMA if self._factory is None else {**SCHEMA, "backend": Key("text")}

    def message_cap(self, config: PPPCADPDeployConfig) -> int:
        """The Gram triangle's secure sum (``D(D+1)/2`` ring elements, or Paillier ciphertexts) and ``T``."""
        d = config.plan.n_features
        backend = backend_class(config.settings["backend"])
        per_entry = backend.max_bytes_per_entry(config.settings["key_bits"])
        entries = d * (d + 1) // 2 + d + 1
        return 2 * entries * per_entry + 8 * d * config.n_components + CAP_SLACK

    def generator(
        self, party: str, layout: Mapping[str, int], noise_seed: int | np.random.SeedSequence | None
    ) -> np.random.Generator | None:
        """Provider ``i``'s generator of ``noise_seed`` (its ``i``-th); none without a seed.

        Without a noise seed every provider draws its noise from :mod:`secrets`
        (the private default); the server draws none.
        """
        if noise_seed is None or party == SERVER:
            return None
        return seeded_generator(noise_seed, layout[party])

    def role(
        self,
        party: str,
        config: PPPCADPDeployConfig,
        data: NDArray[np.float64] | None,
        rng: np.random.Generator | None,
    ) -> Role:
        """A provider's step 1 (clip, round, range checks) runs here, before anything is sent."""
        backend = self.backend(config.settings)
        plan = config.plan
        if party == SERVER:
            return lambda p: server_role(p, plan, backend, config.n_components, config.n_samples)
        rows = check_own_rows(party, data)
        bound = rows.shape[0] if config.n_samples is None else config.n_samples  # the total N when public
        stats = provider_statistics(rows, int(party.removeprefix("provider")), plan, backend, bound)
        noise = noise_source(rng)
        return lambda p: provider_role(p, stats, plan, backend, noise)

    def result(self, party: str, config: PPPCADPDeployConfig, output: Any) -> dict[str, Any]:
        """The server's model as ``mpc-pca run`` writes it for pppca-dp (but :data:`HARNESS_FIELDS`)."""
        if party != SERVER:
            return {}
        model: DPSumModel = output
        plan = config.plan
        total = model.total_variance
        ratio = model.explained_variance / total if total > 0 else np.zeros_like(model.explained_variance)
        gram_std = plan.server_std(plan.gram_sigma) / 2.0**plan.frac_bits
        return {
            "backend": config.settings["backend"],
            "components": model.components.tolist(),
            "explained_variance": model.explained_variance.tolist(),
            "explained_variance_ratio": ratio.tolist(),
            "mean": model.mean.tolist(),
            "n_samples": int(model.n_samples),
            "epsilon": float(plan.epsilon),
            "delta": float(plan.delta),
            "min_honest": plan.min_honest,
            "noise_std": gram_std / (model.n_samples - 1 if plan.centre else model.n_samples),
            "epsilon_by_colluders": [plan.epsilon_with_colluders(c) for c in range(plan.n_parties + 1)],
        }

    def result_party(self, layout: Mapping[str, int]) -> str:
        return SERVER


def _refuse_row_norm(mode: object) -> None:
    """pppca-dp clips every provider's rows itself: only ``row_norm="clip"`` (or none) applies."""
    if mode not in (None, "clip"):
        raise InputValidationError(
            f"row_norm={mode!r}: pppca-dp always clips each provider's rows to norm 1 itself "
            "(warning with the count); only 'clip' applies"
        )
