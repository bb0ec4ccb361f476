"""``pppca-randomized``: the protocol object of the wide-data solver (``iterates="server"`` or ``"sites"``).

Roles, messages and what each party learns: :mod:`mpc_pca.wide.roles`.
Layout with ``M`` sites: ``provider0 .. provider{M-1}`` (ranks ``0 .. M-1``),
``server`` (rank ``M``).

Settings (every party announces the same): ``n_components`` (``k``),
``n_oversamples`` (10), ``iterated_power`` (``None``: scikit-learn's ``auto``,
resolved from the announced row counts), ``tol`` (``None``: no early stop),
``standardize``, ``backend`` (an additive secure sum), ``frac_bits``,
``start_seed`` (the public seed of the start block, so a run can be compared
with :func:`mpc_pca.wide.subspace.randomized_pca` from the same block) and
``iterates`` (:data:`ITERATES`: ``"server"``, the server leads the
iterations and sees each product ``C Q_i``; ``"sites"``, ``provider0`` leads
them and the server learns only the output). A site adds its
width, its row count and the binary exponent of its largest value
(:mod:`mpc_pca.wide.encoding`); it computes them in one pass over its rows,
chunk by chunk, keeping ``O(d)`` numbers.

Everything a run can refuse from its own values is refused before anything is
sent: bad settings and ``k`` above the site's width in :meth:`public`, a site
with no rows, a NaN or infinite value (naming its row), a value of magnitude
``>= 2^MAX_EXPONENT`` (naming it and the limit), more than ``2^32`` rows at
one site; and, from every announcement, in :meth:`configure`: widths that
differ (naming each site's), ``k > min(d, N)`` and disagreeing settings.
A site may hold fewer rows than ``k`` (even one): only pooled sums leave it.

A ``.bed`` site (:class:`~mpc_pca.data.genotype_part.BedPart`) reads its SNPs
sorted by id (:meth:`~mpc_pca.data.genotype_part.BedPart.in_id_order`), an
order every site computes alone, and announces ``columns=None`` with the
``snp_digests`` of its records in that order, never its SNP ids: equal
digests (checked in :meth:`configure`) are what proves that column ``j`` is
the same SNP at every site, so the width is bounded by
:data:`MAX_WIDE_FEATURES` only, not by the names a first message can carry.
The server's result says ``feature_order="snp_id"`` with the digests; each
site's names the columns (``feature_names``, its ids in that order).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.deployment import MODEL_FIELDS, PublicSettings, Role, Variant
from mpc_pca.deployment_kit import (
    CAP_SLACK,
    FLOOR_HOLDER_SCHEMA,
    FLOOR_SCHEMA,
    SNP_DIGESTS_KEY,
    HoldersFirst,
    Key,
    agree,
    agree_width,
    check_announcements,
    check_snp_digests,
)
from mpc_pca.pppca.chunked import ChunkedPart
from mpc_pca.roles import SERVER
from mpc_pca.wide.encoding import MAX_EXPONENT, ZERO_EXPONENT, agreed_exponent, check_rows, site_exponent
from mpc_pca.wide.roles import WideConfig, answer_size, provider_role, server_role
from mpc_pca.wide.site import SiteSums, n_features_of, site_sums
from mpc_pca.wide.subspace import auto_power, block_size, check_solver_settings
from protocols.backends import SecureSumBackend, backend_class, make_backend
from protocols.errors import InputValidationError

NAME = "pppca-randomized"
#: The secure-sum backends it runs on: the additive ones, whose parties may be threads or processes.
BACKENDS = ("additive", "additive-masks", "additive-sparse-masks")
#: The modes of ``iterates``: who leads the iterations and sees each product ``C Q_i`` (:mod:`mpc_pca.wide.roles`).
ITERATES = ("server", "sites")
#: Widest rows a site may announce: the largest genotype panels hold about 10^7 SNPs; no ``d x d``
#: array is made, and each product is one ``d x b`` block per site (``8 d b`` bytes, additive backend).
MAX_WIDE_FEATURES = 1 << 24
#: Largest row count a site may announce (``encoding.check_rows`` refuses more than 2^32 at one site).
MAX_ROWS = 1 << 40
OPTIONS: dict[str, Any] = {
    "backend": "additive",
    "frac_bits": None,
    "standardize": False,
    "n_oversamples": 10,
    "iterated_power": None,
    "tol": None,
    "start_seed": 0,
    "iterates": "server",
}
RESULT_FIELDS = (
    *MODEL_FIELDS, "backend", "standardize", "solver", "product_error_bound", "sums_error_bound", "total_variance",
    "iterates",
)  # fmt: skip
VARIANT = Variant(
    "PPPCA by randomized subspace iteration for wide data (one secure sum of a d x b block per "
    "iteration; the server, or provider0 with iterates='sites', sees the iterates)",
    OPTIONS,
    RESULT_FIELDS,
)
#: The settings every party announces identically.
SHARED = ("protocol", "n_components", "backend", "frac_bits", "standardize", "n_oversamples",
          "iterated_power", "tol", "start_seed", "iterates")  # fmt: skip
SCHEMA: dict[str, Key] = {
    **FLOOR_SCHEMA,
    "protocol": Key("text", choices=(NAME,)),
    "n_components": Key("int", 1, MAX_WIDE_FEATURES),
    "backend": Key("text", choices=BACKENDS),
    "frac_bits": Key("int", 0, 52),
    "standardize": Key("flag"),
    "n_oversamples": Key("int", 0, MAX_WIDE_FEATURES),
    "iterated_power": Key("int", 0, 10_000, nullable=True),
    "tol": Key("real", 0.0, 1.0, nullable=True),
    "start_seed": Key("int", 0, (1 << 63) - 1),
    "iterates": Key("text", choices=ITERATES),
}
HOLDER_SCHEMA: dict[str, Key] = {
    **FLOOR_HOLDER_SCHEMA,
    "n_features": Key("int", 1, MAX_WIDE_FEATURES),
    "n_rows": Key("int", 1, MAX_ROWS),
    "exponent": Key("int", ZERO_EXPONENT, MAX_EXPONENT),
    "snp_digests": SNP_DIGESTS_KEY,  # a .bed site's (mpc_pca.data.genotype_part.BedPart)
}


@dataclass(frozen=True)
class WideRun:
    """The configuration every party derived from the agreed announcements."""

    config: WideConfig
    backend: str
    frac_bits: int
    cap: int
    #: The ``.bed`` sites' agreed digests (their SNPs' records, in id order), else ``None``.
    snp_digests: tuple[str, ...] | None = None


def check_settings(settings: Mapping[str, Any]) -> None:
    """Refuse settings no party could run with (before anything is sent)."""
    if settings.get("iterates") not in ITERATES:
        raise InputValidationError(
            f"iterates={settings.get('iterates')!r} is not a mode of pppca-randomized; choose one of "
            f"{list(ITERATES)} ('server': the server sees each product C Q; 'sites': provider0 does, "
            "the server learns only the output)"
        )
    if settings.get("backend") not in BACKENDS:
        raise InputValidationError(
            f"pppca-randomized runs on the backends {list(BACKENDS)}, not {settings.get('backend')!r}"
        )
    k = settings.get("n_components")
    if k is None:
        raise InputValidationError(
            "pppca-randomized needs n_components (the k top components); None is not allowed"
        )
    check_solver_settings(k, settings["n_oversamples"], settings.get("iterated_power"), settings.get("tol"))
    seed = settings.get("start_seed")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 1 << 63:
        raise InputValidationError(f"start_seed must be an integer in [0, 2^63), got {seed!r}")


def bed_fields(digests: tuple[str, ...] | None) -> dict[str, Any]:
    """What the server's result says of a run on ``.bed`` sites: it knows no SNP id, only the digests.

    The components' columns are the SNPs sorted by id (code point order); the
    server, which reads no ``.bim``, reports ``feature_names=None``,
    ``feature_order="snp_id"`` and the agreed ``snp_digests``; every site's
    result carries the ids themselves as ``feature_names``.
    """
    if digests is None:
        return {}
    return {"feature_names": None, "feature_order": "snp_id", "snp_digests": list(digests)}


class WideDeployment(HoldersFirst):
    """``pppca-randomized``: sites ``provider0 ..`` and a ``server``; :mod:`mpc_pca.wide.roles`."""

    others = (SERVER,)
    variants = MappingProxyType({NAME: VARIANT})
    streams_rows = True

    def __init__(self, name: str | None = None, *, chunk_rows: int | None = None) -> None:
        super().__init__(name)
        self.chunk_rows = chunk_rows
        self._sums: dict[int, tuple[Any, SiteSums]] = {}
        self._ordered: dict[int, tuple[Any, Any]] = {}
        self._snp_ids: dict[str, tuple[str, ...]] = {}  # per .bed site: its SNP ids in id order

    def _in_id_order(self, data: Any) -> Any:
        """A ``.bed`` site's part with its SNPs sorted by id (kept per data object); other data unchanged."""
        reorder = getattr(data, "in_id_order", None)  # mpc_pca.data.genotype_part.BedPart
        if reorder is None:
            return data
        cached = self._ordered.get(id(data))
        if cached is None or cached[0] is not data:
            cached = (data, reorder())
            self._ordered[id(data)] = cached
        return cached[1]

    def backend(self, backend: str, frac_bits: int | None) -> SecureSumBackend:
        """This party's backend for the agreed name and ``frac_bits``."""
        return make_backend(backend, frac_bits=frac_bits)

    def _site_sums(self, party: str, data: Any) -> SiteSums:
        """The site's one pass over its rows (kept per data object for its role)."""
        cached = self._sums.get(id(data))
        if cached is not None and cached[0] is data:
            return cached[1]
        if not isinstance(data, ChunkedPart):
            array = np.asarray(data)
            if array.ndim != 2 or array.dtype.kind not in "biuf":
                raise InputValidationError(
                    f"{party}'s rows must be a 2-D array of real numbers, got shape {array.shape}, dtype {array.dtype}"
                )
        sums = site_sums(data if isinstance(data, ChunkedPart) else np.asarray(data, dtype=np.float64),
                         self.chunk_rows, party)  # fmt: skip
        self._sums[id(data)] = (data, sums)
        return sums

    def public(
        self, party: str, data: NDArray[np.float64] | ChunkedPart | None, settings: Mapping[str, Any]
    ) -> PublicSettings:
        check_settings(settings)
        public: PublicSettings = {
            "protocol": self.name,
            **{key: settings.get(key) for key in SHARED if key != "protocol"},
            "frac_bits": self.backend(settings["backend"], settings.get("frac_bits")).codec.frac_bits,
            "standardize": bool(settings.get("standardize")),
        }
        if not party.startswith("provider"):
            if data is not None:
                raise InputValidationError(
                    f"the {party} holds no rows in this protocol, but rows were given to it"
                )
            return public
        if data is None:
            raise InputValidationError(f"{party} holds rows in this protocol but was given none")
        data = self._in_id_order(data)
        sums = self._site_sums(party, data)
        check_rows(sums.n_rows, party)
        d = n_features_of(data) if isinstance(data, ChunkedPart) else int(np.shape(data)[1])
        if settings["n_components"] > d:
            raise InputValidationError(
                f"n_components={settings['n_components']} exceeds {party}'s {d} columns"
            )
        public.update(n_features=d, n_rows=sums.n_rows, exponent=site_exponent(sums.peak, party))
        digests = getattr(data, "snp_digests", None)  # a .bed site's SNP records, compared in configure
        if digests is not None:  # SNPs in id order, proven by the digests: no name list (any width)
            public.update(columns=None, snp_digests=list(digests))
            self._snp_ids[party] = tuple(getattr(data, "names", ()))
        return public

    def configure(self, views: Mapping[str, PublicSettings], n_providers: int) -> WideRun:
        holders = self.check_views(views, n_providers)
        check_announcements(views, SCHEMA, holders, HOLDER_SCHEMA)
        check_snp_digests(views, holders)
        agreed = agree(views, SHARED)
        if agreed["iterates"] == "sites" and n_providers == 2:
            raise InputValidationError(
                "iterates='sites' is refused with 2 sites: provider0 would learn provider1's own block "
                "products (their sum minus its own summand); run iterates='server' (the server sees the "
                "pooled products) or add a third site"
            )
        d = agree_width(views, holders)
        rows = tuple(int(views[name]["n_rows"]) for name in holders)
        n, k = sum(rows), int(agreed["n_components"])
        if k > min(d, n):
            raise InputValidationError(
                f"n_components={k} exceeds min(n_features={d}, n_samples={n}) over {dict(zip(holders, rows, strict=True))}"
            )
        if n < 2:
            raise InputValidationError(f"the sites hold {n} row in total; PCA needs at least 2")
        power = agreed["iterated_power"]
        config = WideConfig(
            n_providers, d, k, block_size(k, agreed["n_oversamples"], d),
            auto_power(k, n, d) if power is None else int(power), agreed["tol"], bool(agreed["standardize"]),
            int(agreed["start_seed"]), agreed_exponent([int(views[name]["exponent"]) for name in holders]), rows,
            self.chunk_rows, str(agreed["iterates"]),
        )  # fmt: skip
        per_entry = backend_class(str(agreed["backend"])).max_bytes_per_entry(None)
        largest = max(d * config.width, answer_size(config), 2 * d + 1)
        digests = views[holders[0]].get("snp_digests")
        return WideRun(
            config, str(agreed["backend"]), int(agreed["frac_bits"]), 2 * per_entry * largest + CAP_SLACK,
            None if digests is None else tuple(digests),
        )  # fmt: skip

    def message_cap(self, config: WideRun) -> int:
        return config.cap

    def role(
        self, party: str, config: WideRun, data: NDArray[np.float64] | ChunkedPart | None, rng: Any
    ) -> Role:
        backend = self.backend(config.backend, config.frac_bits)
        run = config.config
        if party == SERVER:
            return lambda p: server_role(p, run, backend)
        if data is None:
            raise InputValidationError(f"{party} holds rows in this protocol but was given none")
        data = self._in_id_order(data)
        sums = self._site_sums(party, data)
        rows = data if isinstance(data, ChunkedPart) else np.asarray(data, dtype=np.float64)
        return lambda p: provider_role(p, rows, run, backend, sums)

    def result(self, party: str, config: WideRun, output: Any) -> dict[str, Any]:
        if party == SERVER:
            return {
                "backend": config.backend,
                "standardize": config.config.standardize,
                **output.result_fields(),
                **bed_fields(config.snp_digests),
            }
        fields = {"n_rows": int(output["n_rows"]), "scores": np.asarray(output["scores"]).tolist()}
        if party in self._snp_ids:  # a .bed site names the model's columns: its SNP ids, sorted
            fields["feature_names"] = list(self._snp_ids[party])
        return fields

    def result_party(self, layout: Mapping[str, int]) -> str:
        return SERVER


__all__ = [
    "BACKENDS",
    "HOLDER_SCHEMA",
    "ITERATES",
    "NAME",
    "SCHEMA",
    "WideDeployment",
    "WideRun",
    "bed_fields",
    "check_settings",
]
