"""What a PPPCA party announces and how the announcements become one run's values.

Every party of ``pppca-ss`` / ``pppca-he`` announces its public settings
(:data:`SCHEMA`; a provider adds :data:`PROVIDER_SCHEMA`): each announcement
is checked against its schema before any value is compared or used, then the
shared settings must agree (:func:`agree_views`), the providers' column names
and exponents are agreed (:func:`agree_columns`), and the message cap follows
from agreed values only (:func:`message_cap`, never above :func:`cap_bound`).
How ``n_components`` is announced (a count, or the server's rule for choosing
it) is :func:`announced_components` and :func:`selection`.
:class:`~mpc_pca.pppca.deployment.PPPCADeployment` builds the run from them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from mpc_pca.deployment_kit import FLOOR_HOLDER_SCHEMA, FLOOR_SCHEMA, MAX_FEATURES, Key
from mpc_pca.pppca.protocol import PROJECTION_CHUNK_BYTES
from mpc_pca.pppca.scaling import MAX_EXPONENT, ZERO_COLUMN, agree_exponents
from mpc_pca.roles import provider_names
from protocols.backends import BACKEND_NAMES, paillier_options
from protocols.errors import InputValidationError

#: The settings every party must announce identically.
SHARED = (
    "protocol",
    "n_parties",
    "n_components",
    "variance_fraction",
    "mle",
    "backend",
    "frac_bits",
    "key_bits",
    "reveal",
    "eigengap",
    "min_ratio",
    "eigensolver",
    "dealer",
    "standardize",
    "dropout_threshold",
)
#: Largest row count a provider may announce (refused at :meth:`PPPCADeployment.configure`).
MAX_ANNOUNCED_ROWS = 1 << 40
#: Largest dropout threshold a party may announce (no run has more providers than this).
MAX_PROVIDERS = 1 << 16
#: Largest Paillier modulus (bits) a party may announce.
MAX_KEY_BITS = 1 << 14

#: Every party's announcement: the floor's keys and the shared settings.
SCHEMA: dict[str, Key] = {
    **FLOOR_SCHEMA,
    "protocol": Key("text", choices=("pppca-ss", "pppca-he")),
    "n_components": Key("int", 1, MAX_FEATURES, nullable=True),
    "variance_fraction": Key("real", 0.0, 1.0, nullable=True, required=False),
    "mle": Key("flag", required=False),
    "backend": Key("text", choices=tuple(BACKEND_NAMES)),
    "frac_bits": Key("int", 0, 52),
    "key_bits": Key("int", 1, MAX_KEY_BITS, nullable=True),
    "reveal": Key("text", choices=("covariance", "components", "spectrum")),
    "eigengap": Key("real", 0.0, 1.0, nullable=True, required=False),
    "min_ratio": Key("real", 0.0, 1.0, nullable=True, required=False),
    "eigensolver": Key("text", choices=("subspace", "krylov"), nullable=True, required=False),
    "dealer": Key("text", choices=("server", "providers"), nullable=True, required=False),
    "standardize": Key("flag"),
    "dropout_threshold": Key("int", 2, MAX_PROVIDERS, nullable=True, required=False),
}
#: A provider's further keys: its rows' width and count, its column exponents.
PROVIDER_SCHEMA: dict[str, Key] = {
    **FLOOR_HOLDER_SCHEMA,
    "n_features": Key("int", 1, MAX_FEATURES),
    "n_rows": Key("int", 1, MAX_ANNOUNCED_ROWS),
    "column_exponents": Key("ints", ZERO_COLUMN, MAX_EXPONENT),
}


def announced_components(n_components: Any) -> dict[str, Any]:
    """How ``n_components`` is announced: ``k`` (``None``: all), or the server's rule for choosing it.

    A variance fraction or ``"mle"`` (``reveal="covariance"`` only, checked by
    :func:`~mpc_pca.pppca.preflight.selection_rule`) is announced as
    ``variance_fraction`` or ``mle`` with ``n_components`` ``None``.
    """
    if isinstance(n_components, str) and n_components == "mle":
        return {"n_components": None, "mle": True}
    if isinstance(n_components, float):
        return {"n_components": None, "variance_fraction": n_components}
    return {"n_components": n_components}


def selection(view: Mapping[str, Any]) -> float | str | None:
    """The agreed rule for choosing ``k`` on the server (``None``: ``k`` is ``n_components``)."""
    if view.get("mle"):
        return "mle"
    fraction = view.get("variance_fraction")
    return None if fraction is None else float(fraction)


def agree_views(views: Mapping[str, Mapping[str, Any]], n_parties: int) -> int:
    """Check that every party published the same settings; return the number of features."""
    for key in SHARED:
        values = {name: view.get(key) for name, view in views.items()}
        if len(set(map(json.dumps, values.values()))) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")
    rows = {name: views[name].get("n_rows") for name in provider_names(n_parties)}
    if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 1 for n in rows.values()):
        raise InputValidationError(f"every provider must announce a positive number of rows: {rows}")
    widths = {name: views[name].get("n_features") for name in provider_names(n_parties)}
    width = next(iter(widths.values()))
    if len(set(widths.values())) != 1 or isinstance(width, bool) or not isinstance(width, int):
        raise InputValidationError(f"the providers' data sets have different numbers of features: {widths}")
    return width


def agree_columns(
    views: Mapping[str, Mapping[str, Any]], n_parties: int
) -> tuple[tuple[int, ...], tuple[str, ...] | None]:
    """Check that the providers' ordered column names match; agree the column exponents.

    The deploy floor has put every provider's announcement in the agreed
    column order (:func:`mpc_pca.deploy.party.align_views`), so any
    difference left here is refused. Returns the exponents and the names
    (``None`` when the rows have none).
    """
    providers = provider_names(n_parties)
    names = {name: views[name].get("columns") for name in providers}
    if len(set(map(json.dumps, names.values()))) != 1:
        raise InputValidationError(
            f"the providers' ordered column names differ: {names}; give every provider the same "
            "columns (the deploy floor reorders a provider's columns by name)"
        )
    exponents = agree_exponents([views[name].get("column_exponents", []) for name in providers])
    first = names[providers[0]]
    return exponents, None if first is None else tuple(str(n) for n in first)


def message_cap(views: Mapping[str, Mapping[str, Any]], n_features: int, per_entry: int) -> int:
    """Largest message (bytes) any party of this run may send, from the agreed settings.

    The largest payloads are the Gram matrix's secure sum (at most ``d^2 + d + 1``
    ring elements, or that many Paillier ciphertexts of ``2 * key_bits`` bits
    when nothing is packed), ``T`` (``d x k`` floats) and one chunk of a
    provider's projected rows (at most ``max(PROJECTION_CHUNK_BYTES, 8 k)``
    bytes); 1 MiB covers headers and key exchanges. No row count enters: the
    cap depends only on values every party (or every provider) agreed on, and
    stays below :func:`cap_bound` of them.
    """
    view = next(iter(views.values()))
    d, k = n_features, int(view["n_components"] or n_features)
    return (d * d + d + 1) * per_entry + d * k * 8 + max(PROJECTION_CHUNK_BYTES, 8 * k) + (1 << 20)


def cap_bound(n_features: int, n_components: int, key_bits: int | None) -> int:
    """The largest :func:`message_cap` of any run with these agreed values, whatever the row counts.

    Every backend's summed entry takes at most ``2 * key_bits / 8 + 8`` bytes
    (a Paillier ciphertext; ring elements take 8), ``key_bits`` at most
    :data:`MAX_KEY_BITS`.
    """
    d, k = n_features, n_components
    per_entry = max(8, 2 * (MAX_KEY_BITS if key_bits is None else key_bits) // 8 + 8)
    return (d * d + d + 1) * per_entry + d * k * 8 + max(PROJECTION_CHUNK_BYTES, 8 * k) + (1 << 20)


#: Settings a party chooses for itself (how it encrypts), never announced nor agreed.
LOCAL_SETTINGS = ("paillier_randomness", "paillier_workers")


def backend_options(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The paillier backend's constructor options of ``settings`` (``{}`` for other backends).

    Raises
    ------
    InputValidationError
        If a paillier option is set for another backend, or has an invalid value.
    """
    given = {key: settings.get(key) for key in LOCAL_SETTINGS if settings.get(key) is not None}
    if settings.get("backend") != "paillier":
        if given:
            raise InputValidationError(
                f"settings {sorted(given)} are for the paillier backend, not backend={settings.get('backend')!r}"
            )
        return {}
    return paillier_options(
        settings.get("paillier_randomness"), settings.get("paillier_workers"), settings.get("key_bits")
    )
