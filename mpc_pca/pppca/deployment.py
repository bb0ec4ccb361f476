"""PPPCA (``pppca-ss``, ``pppca-he``) for the deploy floor: parties as processes and hosts.

:class:`PPPCADeployment` tells :mod:`mpc_pca.deploy` how to run the *same*
role functions as the in-process runtime (:mod:`mpc_pca.pppca.protocol`) as
separate parties. Rank layout with ``M`` providers (world size ``M + 2``):
``provider0 .. provider{M-1}`` are ranks ``0 .. M-1``, ``server`` is rank
``M``, ``consumer`` is rank ``M + 1``.

Before the protocol starts, the parties announce their public parameters
and check them in three steps (:mod:`mpc_pca.pppca.announcement`): the shape
of each announcement against :data:`SCHEMA` / :data:`PROVIDER_SCHEMA` (naming
the sender, the key and the limit), agreement of the shared settings and the
providers' columns, and, in the server's role, the announced row counts
against the ``N`` the secure sum reveals. Message caps follow from agreed
values only, never from a row count (:func:`cap_bound`).

The estimator (:class:`~mpc_pca.pppca.estimator.PPPCA`) runs this same object
as threads (:func:`mpc_pca.threads.run_protocol`), with its backend object
(``backend_factory``), without a consumer for ``fit`` and with its own
eigensolve settings (``components``).

Settings (``mpc_pca.registry``): ``n_components``, ``backend``,
``frac_bits``, ``key_bits``, ``reveal``, ``standardize`` and, for
``pppca-ss`` with ``additive-masks``, ``dropout_threshold`` (the run survives
providers that drop before their masked input of the mean secure sum
arrives; :mod:`protocols.backends.dropout`). With it, the server's result,
the consumer's and every provider's name the ``dropped_providers``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import Deployment, PublicSettings, Role, Variant
from mpc_pca.deployment_kit import Key, check_announcements
from mpc_pca.pppca.announcement import (
    LOCAL_SETTINGS,
    MAX_ANNOUNCED_ROWS,
    MAX_KEY_BITS,
    PROVIDER_SCHEMA,
    SCHEMA,
    agree_columns,
    agree_views,
    announced_components,
    backend_options,
    cap_bound,
    message_cap,
    selection,
)
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.pppca.components import ComponentsSettings, check_reveal, components_settings, hides_covariance
from mpc_pca.pppca.dealer_free import offline_fields
from mpc_pca.pppca.local_stats import LocalStatistics
from mpc_pca.pppca.preflight import check_run, check_threads, preflight
from mpc_pca.pppca.projection_table import projection_table, read_projection
from mpc_pca.pppca.protocol import (
    DROPPED_KEY,
    PPPCAConfig,
    consumer_role,
    provider_role,
    server_role,
)
from mpc_pca.pppca.scaling import exponents_of_peaks, statistics_exponents
from mpc_pca.roles import CONSUMER, SERVER, provider_names
from mpc_pca.validation import check_n_components, check_parts, check_statistics_finite
from protocols.backends import BACKEND_NAMES, SecureSumBackend, backend_class, make_backend
from protocols.backends.dropout import last_outcome
from protocols.backends.dropout_agreement import check_dropout_threshold
from protocols.errors import InputValidationError

PROTOCOLS = ("pppca-ss", "pppca-he")
#: The settings of both PPPCA protocols and their defaults (``None``: the backend's default).
PPPCA_OPTIONS: dict[str, Any] = {
    "frac_bits": None,
    "key_bits": None,
    "paillier_randomness": None,
    "paillier_workers": None,
    "standardize": False,
    "reveal": "covariance",
    "eigengap": None,
    "min_ratio": None,
    "eigensolver": None,
    "dealer": None,
}
#: The fields of a PPPCA result.
RESULT_FIELDS = (
    "backend", "standardize", "components", "explained_variance", "mean", "n_samples", "report",
    "explained_variance_ratio",
)  # fmt: skip
#: What each variant declares: its summary, its settings and the values fixed by it.
VARIANTS: dict[str, Variant] = {
    "pppca-ss": Variant(
        "PPPCA with secret sharing (Liu et al. 2020, Alg. 2)",
        {"backend": "additive", **PPPCA_OPTIONS, "dropout_threshold": None},
        RESULT_FIELDS,
    ),
    "pppca-he": Variant(
        "PPPCA with Paillier homomorphic encryption (Liu et al. 2020, Alg. 1)",
        {"backend": "paillier", **PPPCA_OPTIONS},
        RESULT_FIELDS,
        fixed={"backend": "paillier"},
    ),
}


def _dropout_fields(party: Any, run: PPPCAConfig) -> dict[str, Any]:
    """A provider's result fields under dropout tolerance: whom the server dropped, and whether it was one."""
    if run.dropout_threshold is None:
        return {}
    outcome = last_outcome(party)
    if outcome is None:
        return {}
    if outcome.me_dropped:
        return {"dropped": True, "dropped_providers": [party.name]}
    return {"dropped": False, "dropped_providers": list(outcome.dropped)}


def pppca_ranks(n_parties: int, with_consumer: bool = True) -> dict[str, int]:
    """Name-to-rank map of a PPPCA run with ``n_parties`` providers, the server and (by default) a consumer."""
    if isinstance(n_parties, bool) or not isinstance(n_parties, int) or n_parties < 1:
        raise InputValidationError(f"the number of providers must be a positive integer, got {n_parties!r}")
    ranks = {name: i for i, name in enumerate(provider_names(n_parties))}
    ranks[SERVER] = n_parties
    if with_consumer:
        ranks[CONSUMER] = n_parties + 1
    return ranks


@dataclass(frozen=True)
class PPPCARun:
    """The configuration every party derived from the agreed announcements."""

    config: PPPCAConfig
    backend: str
    frac_bits: int
    key_bits: int | None
    cap: int
    #: The agreed column names (``None`` when the providers' rows have none).
    feature_names: tuple[str, ...] | None = None


class PPPCADeployment(Deployment):
    """The deploy floor's view of ``pppca-ss`` / ``pppca-he``.

    Parameters
    ----------
    name : {"pppca-ss", "pppca-he"}
        The registry name.
    backend_factory : callable, optional
        ``backend_factory(settings) -> SecureSumBackend`` builds a party's
        backend instead of :func:`~protocols.backends.make_backend` (e.g. a
        custom subclass); the backend's name in the settings is still the one
        the parties agree on. The estimator passes its backend object this way.
    with_consumer : bool, default=True
        Whether the run has a consumer that receives the projected rows
        (steps 9-10); ``PPPCA.fit`` runs without one.
    components : ComponentsSettings, optional
        The secure eigensolve's settings (``reveal="components"``), all of them
        (``tol`` too) as an estimator chose them; by default ``eigengap`` and
        ``min_ratio`` come from the agreed announcements.
    """

    #: A provider's rows may be a ChunkedPart (``mpc-pca party`` reads a data file in chunks).
    streams_rows = True
    projects_rows = True
    #: Announced per column, in the provider's own order (the floor permutes it to the agreed one).
    column_keys = ("column_exponents",)

    def __init__(
        self,
        name: str,
        backend_factory: Callable[[Mapping[str, Any]], SecureSumBackend] | None = None,
        *,
        with_consumer: bool = True,
        components: ComponentsSettings | None = None,
    ) -> None:
        if name not in PROTOCOLS:
            raise InputValidationError(f"PPPCADeployment runs {list(PROTOCOLS)}, not {name!r}")
        self.declare(name, VARIANTS[name])
        self.with_consumer = with_consumer
        self._components = components
        self._factory = backend_factory
        self._cached_stats: dict[int, tuple[Any, LocalStatistics]] = {}
        self._local: dict[str, Any] = {}

    def _statistics(self, data: Any, rows: NDArray[np.float64]) -> LocalStatistics:
        """``LocalStatistics.of(rows)``, computed once for the announcement and the role.

        Kept per ``data`` object (compared by identity, the object held with its
        statistics), so the O(n d^2) pass is not made twice for one party's rows,
        also when one deployment serves every party of an in-process run.
        """
        cached = self._cached_stats.get(id(data))
        if cached is not None and cached[0] is data:
            return cached[1]
        stats = LocalStatistics.of(rows)
        self._cached_stats[id(data)] = (data, stats)
        return stats

    def _part_statistics(self, part: ChunkedPart) -> LocalStatistics:
        """A chunked part's statistics: the ones :meth:`preflight` read, else the part's own."""
        cached = self._cached_stats.get(id(part))
        if cached is not None and cached[0] is part:
            return cached[1]
        return part.statistics()

    def backend(self, settings: Mapping[str, Any]) -> SecureSumBackend:
        """This party's backend object for ``settings``."""
        if self._factory is not None:
            return self._factory(settings)
        return make_backend(
            settings["backend"],
            frac_bits=settings.get("frac_bits"),
            key_bits=settings.get("key_bits"),
            **backend_options(settings),
        )

    def _backend_type(self, name: str) -> type[SecureSumBackend]:
        """The class of the backend named ``name``: the factory's for its own name, else the registered one."""
        if self._factory is not None:
            made = self._factory({"backend": name})
            if made.name == name:
                return type(made)
        return backend_class(name)

    def _schema(self) -> dict[str, Key]:
        """:data:`SCHEMA`, with the factory's backend name allowed too (a custom backend object)."""
        if self._factory is None:
            return SCHEMA
        custom = self._factory({}).name
        return {**SCHEMA, "backend": Key("text", choices=(*BACKEND_NAMES, custom))}

    def check_settings(self, settings: Mapping[str, Any]) -> None:
        """Refuse settings no party could run with (raised before anything is sent)."""
        for option, value in self.fixed.items():
            if settings.get(option) != value:
                raise InputValidationError(
                    f"{self.name} uses the {value} {option}, not {option}={settings.get(option)!r}"
                )
        backend_options(settings)  # the paillier options, checked
        reveal = check_reveal(settings.get("reveal", "covariance"))
        threshold = settings.get("dropout_threshold")
        if threshold is not None:
            if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 2:
                raise InputValidationError(
                    f"dropout_threshold must be an integer of at least 2, got {threshold!r}"
                )
            tolerant = "dropout_threshold" in self.options
            if not tolerant or settings["backend"] != "additive-masks" or reveal != "covariance":
                raise InputValidationError(
                    f"dropout_threshold={threshold} runs the dropout-tolerant pairwise-mask secure sum: it needs "
                    "the additive-masks backend and reveal covariance (pppca-ss with backend='additive-masks' and "
                    f"reveal='covariance'), not {self.name} with backend={settings['backend']!r} and reveal={reveal!r}"
                )
        if hides_covariance(reveal) and settings.get("standardize"):
            raise InputValidationError(
                f"standardize=True needs the pooled variances, which reveal={reveal!r} keeps secret"
            )
        components_settings(settings, reveal)

    def runs_over_gloo(self, settings: Mapping[str, Any]) -> bool:
        if self._factory is not None:
            return bool(getattr(self._factory(settings), "runs_over_gloo", False))
        return bool(backend_class(settings["backend"]).runs_over_gloo)

    def preflight(self, parts: Sequence[Any], settings: Mapping[str, Any]) -> None:
        """Every check of :func:`~mpc_pca.pppca.preflight.preflight` and :func:`~mpc_pca.pppca.preflight.check_run`.

        The providers' statistics it computes (side by side) are kept for their
        announcements and roles, so no part is read twice.
        """
        self.check_settings(settings)
        backend = self.backend(settings)
        reveal = check_reveal(settings.get("reveal", "covariance"))
        arrays, stats, k, _ = preflight(
            list(parts), settings["n_components"], backend, standardize=bool(settings.get("standardize")),
            reveal=reveal,
        )  # fmt: skip
        for part, array, st in zip(parts, arrays, stats, strict=True):
            self._cached_stats[id(part)] = (part, st)
            self._cached_stats[id(array)] = (array, st)
        components = self._components or components_settings(settings, reveal)
        check_run(
            len(arrays),
            stats[0].n_features,
            k,
            backend,
            reveal,
            components,
            settings.get("dropout_threshold"),
        )

    def check_threads(self, settings: Mapping[str, Any]) -> None:
        """:func:`~mpc_pca.pppca.preflight.check_threads`: the secure eigensolve on CrypTen needs processes."""
        check_threads(self.backend(settings), check_reveal(settings.get("reveal", "covariance")))

    def layout(self, n_providers: int) -> dict[str, int]:
        return pppca_ranks(n_providers, self.with_consumer)

    def data_holders(self, n_providers: int) -> tuple[str, ...]:
        return provider_names(n_providers)

    def public(
        self, party: str, data: NDArray[np.float64] | ChunkedPart | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        self.check_settings(settings)
        # this party's own way of encrypting: not announced, used by its role
        self._local = {key: settings.get(key) for key in LOCAL_SETTINGS}
        backend = self.backend(settings)
        public: PublicSettings = {
            "protocol": self.name,
            **announced_components(settings["n_components"]),
            "backend": settings["backend"],
            "frac_bits": backend.codec.frac_bits,
            "key_bits": settings.get("key_bits"),
            "reveal": check_reveal(settings.get("reveal", "covariance")),
            "eigengap": settings.get("eigengap"),
            "min_ratio": settings.get("min_ratio"),
            "eigensolver": settings.get("eigensolver"),
            "dealer": settings.get("dealer"),
            "standardize": bool(settings.get("standardize")),
            "dropout_threshold": settings.get("dropout_threshold"),
        }
        if party.startswith("provider"):
            if data is None:
                raise InputValidationError(f"{party} needs its data (data=FILE)")
            if isinstance(data, ChunkedPart):  # every row checked as it was read
                stats = self._part_statistics(data)
                public["n_features"] = int(data.n_features)
                public["n_rows"] = int(stats.n_rows)
                peaks = stats.column_peaks if stats.column_peaks is not None else data.column_peaks()
                public["column_exponents"] = exponents_of_peaks(peaks).tolist()
                return public
            (rows,) = check_parts([data], min_total_rows=1, check_values=False, accept_sparse=True)
            stats = self._statistics(data, rows)
            check_statistics_finite(
                rows, (stats.column_sums, stats.scatter_triangle), int(party[len("provider") :])
            )
            public["n_features"] = int(rows.shape[1])
            public["n_rows"] = int(rows.shape[0])
            public["column_exponents"] = statistics_exponents(stats).tolist()
        elif data is not None:
            raise InputValidationError(f"the {party} holds no data: data=None for it")
        return public

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> PPPCARun:
        """The run from every party's announcement, each checked against :data:`SCHEMA` first.

        Raises
        ------
        InputValidationError
            Naming the sender, key, value and limit of an announcement that does
            not fit the schema (e.g. ``n_rows`` above :data:`MAX_ANNOUNCED_ROWS`),
            or the parties and their values where they disagree.
        """
        layout = self.layout(n_providers)
        missing, extra = sorted(set(layout) - set(views)), sorted(map(str, set(views) - set(layout)))
        if missing or extra:
            raise InputValidationError(
                f"announcements must come from exactly the parties {sorted(layout)}; missing {missing}, "
                f"unexpected {extra}"
            )
        check_announcements(views, self._schema(), provider_names(n_providers), PROVIDER_SCHEMA)
        views = {name: {"n_parties": n_providers, **view} for name, view in views.items()}
        n_features = agree_views(views, n_providers)
        view = next(iter(views.values()))
        rows = tuple(int(views[name]["n_rows"]) for name in provider_names(n_providers))
        select = selection(view)
        # with a selection rule the server chooses k <= min(d, N) from the spectrum
        n_samples = sum(rows)
        k = (
            min(n_features, n_samples)
            if select is not None
            else check_n_components(view["n_components"], n_features, n_samples)
        )
        reveal = check_reveal(view.get("reveal", "covariance"))
        exponents, feature_names = agree_columns(views, n_providers)
        if feature_names is not None and len(feature_names) != n_features:
            raise InputValidationError(
                f"provider0 announced {len(feature_names)} column names for {n_features} columns"
            )
        if hides_covariance(
            reveal
        ):  # no column scaling in these modes (see mpc_pca.pppca.protocol.preflight)
            exponents = (0,) * n_features
        threshold = view.get("dropout_threshold")
        if threshold is not None and threshold > n_providers:
            raise InputValidationError(
                f"dropout_threshold={threshold} exceeds the number of providers ({n_providers})"
            )
        if threshold is not None:
            check_dropout_threshold(threshold, n_providers)  # 2 t > M (protocols.backends.dropout_agreement)
        components = self._components or components_settings(view, reveal)
        config = PPPCAConfig(
            n_providers, n_features, k, self.with_consumer, exponents, bool(view.get("standardize")), reveal,
            components=components, announced_rows=rows, select=select, dropout_threshold=threshold,
        )  # fmt: skip
        per_entry = self._backend_type(str(view["backend"])).max_bytes_per_entry(view.get("key_bits"))
        return PPPCARun(
            config, view["backend"], view["frac_bits"], view.get("key_bits"),
            message_cap(views, n_features, per_entry), feature_names,
        )  # fmt: skip

    def message_cap(self, config: PPPCARun) -> int:
        return config.cap

    def role(
        self, party: str, config: PPPCARun, data: NDArray[np.float64] | ChunkedPart | None, rng: Any
    ) -> Role:
        settings = {
            "backend": config.backend,
            "frac_bits": config.frac_bits,
            "key_bits": config.key_bits,
            **(self._local if config.backend == "paillier" else {}),
        }
        backend = self.backend(settings)
        run = config.config
        if party == SERVER:
            return lambda p: server_role(p, run, backend)
        if party == CONSUMER:
            if run.dropout_threshold is None:
                return lambda p: consumer_role(p, run)

            def consumer(p: Any) -> dict[str, Any]:
                projection = consumer_role(p, run)
                return {"projection": projection, "dropped_providers": list(p.context[DROPPED_KEY])}

            return consumer
        if data is None:
            raise InputValidationError(f"{party} needs its data (data=FILE)")
        if isinstance(data, ChunkedPart):
            part = data

            def streamed(p: Any) -> dict[str, Any]:
                stats = self._part_statistics(part)  # computed when the part was read, not again
                provider_role(p, part, run, backend, stats)
                return {"n_rows": int(stats.n_rows), **_dropout_fields(p, run), **offline_fields(p)}

            return streamed
        (rows,) = check_parts([data], min_total_rows=1, check_values=False, accept_sparse=True)

        stats = self._statistics(data, rows)

        def provider(p: Any) -> dict[str, Any]:
            provider_role(p, rows, run, backend, stats)
            return {"n_rows": int(rows.shape[0]), **_dropout_fields(p, run), **offline_fields(p)}

        return provider

    def result(self, party: str, config: PPPCARun, output: Any) -> dict[str, Any]:
        if party == SERVER:
            names = config.feature_names
            return {
                "backend": config.backend,
                "standardize": config.config.standardize,
                **output.result_fields(),
                "feature_names": None if names is None else list(names),
            }
        if party == CONSUMER:
            if isinstance(output, dict):  # a run that tolerates dropouts: only the survivors' rows
                dropped = list(output["dropped_providers"])
                table = projection_table(np.asarray(output["projection"]), config.config, dropped)
                return {"projection": table, "dropped_providers": dropped}
            return {"projection": projection_table(np.asarray(output), config.config)}
        return {"n_rows": int(output["n_rows"]), **{k: v for k, v in output.items() if k != "n_rows"}}

    def projection(self, layout: Mapping[str, int], outputs: Mapping[str, Any]) -> NDArray[np.float64] | None:
        """The consumer's stacked ``X_i T`` (the survivors' rows in a run that tolerated dropouts)."""
        output = outputs.get(CONSUMER)
        if isinstance(output, dict):
            output = output["projection"]
        return None if output is None else np.asarray(output)

    def result_party(self, layout: Mapping[str, int]) -> str:
        return SERVER


__all__ = [
    "MAX_ANNOUNCED_ROWS",
    "MAX_KEY_BITS",
    "SCHEMA",
    "PPPCADeployment",
    "PPPCARun",
    "cap_bound",
    "message_cap",
    "pppca_ranks",
    "projection_table",
    "read_projection",
]
