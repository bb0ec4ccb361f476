"""The deploy floor's own keys of every announcement, the same for every protocol and every runner.

Every party's announcement starts with the floor's keys: ``protocol``,
``n_providers`` and, for a data holder, ``columns`` (its ordered column
names, ``None`` when the rows have none). Every party must agree on the first
two. The column names are agreed by name (:func:`agree_columns`): the first
holder's order is the reference, a holder whose names are a permutation of it
reorders its own columns to that order (and the per-column values it
announced, :attr:`~mpc_pca.deployment.Deployment.column_keys`, are read in
that order by every party), and different name sets are refused with the
counts and both lists before any data leaves a party. The names are public to
every party of the run (the model carries them as ``feature_names``:
:func:`with_feature_names`).

The threads runner (:mod:`mpc_pca.threads`) and the deploy floor
(:mod:`mpc_pca.deploy`) both build announcements with these functions.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from mpc_pca.deployment import PublicSettings
from mpc_pca.deployment_kit import FLOOR_HOLDER_SCHEMA, FLOOR_SCHEMA, MAX_FEATURES, AnnouncementError, shown
from protocols.errors import InputValidationError


def floor_public(
    protocol: str, n_providers: int, holder: bool, names: Sequence[str] | None = None
) -> PublicSettings:
    """The floor's own keys of one party's announcement (``names``: a holder's ordered column names)."""
    public: PublicSettings = {"protocol": protocol, "n_providers": n_providers}
    if holder:
        public["columns"] = None if names is None else [str(n) for n in names]
    return public


def agree_columns(
    views: Mapping[str, PublicSettings], holders: tuple[str, ...]
) -> tuple[tuple[str, ...] | None, dict[str, list[int] | None]]:
    """The agreed ordered column names and, per data holder, the order that puts its columns in it.

    The first holder's order is the reference
    (:func:`~mpc_pca.validation.align_columns`); a holder already in that
    order gets ``None``.

    Raises
    ------
    InputValidationError
        If some holders announced names and others none, a holder repeats a
        name, or the name sets differ: the message gives both counts
        (``29 columns vs 30``), both lists and the missing and extra names.
    """
    from mpc_pca.validation import align_columns

    present = [h for h in holders if h in views]
    names = {h: views[h].get("columns") for h in present}
    if all(value is None for value in names.values()):
        return None, {h: None for h in present}
    unnamed = [h for h, value in names.items() if value is None]
    if unnamed:
        named = [h for h in present if h not in unnamed]
        beds = [h for h in unnamed if views[h].get("snp_digests") is not None]
        if beds:
            raise InputValidationError(
                f"{', '.join(beds)} read a .bed file (its SNPs in id order, proven by digests of their .bim "
                f"records, no names announced) but {', '.join(named)} announced column names (not a .bed "
                "file); their columns cannot be matched: give every site a .bed file"
            )
        raise InputValidationError(
            f"{', '.join(unnamed)} announced no column names but {', '.join(named)} did; read every "
            "provider's table the same way (a header row on all of them, or header=False on all)"
        )
    reference, orders = align_columns([list(names[h]) for h in present], present)  # type: ignore[arg-type]
    return reference, dict(zip(present, orders, strict=True))


def align_views(
    views: Mapping[str, PublicSettings],
    reference: tuple[str, ...] | None,
    orders: Mapping[str, list[int] | None],
    column_keys: tuple[str, ...],
) -> dict[str, PublicSettings]:
    """Every holder's announcement as if its columns were in the agreed order.

    ``columns`` becomes the agreed list and each of ``column_keys`` (one value
    per column, in the holder's own order) is permuted the same way.

    Raises
    ------
    AnnouncementError
        If a holder announced a per-column value whose length is not its number of columns.
    """
    aligned: dict[str, PublicSettings] = dict(views)
    for holder, order in orders.items():
        if order is None:
            continue
        view = dict(views[holder])
        view["columns"] = list(reference or ())
        for key in column_keys:
            values = view.get(key)
            if values is None:
                continue
            if not isinstance(values, list) or len(values) != len(order):
                raise AnnouncementError(
                    holder, f"{holder} announced {key}={shown(values)} for {len(order)} columns"
                )
            view[key] = [values[i] for i in order]
        aligned[holder] = view
    return aligned


def check_floor_views(views: Mapping[str, PublicSettings], holders: tuple[str, ...]) -> None:
    """Every party runs the same protocol with the same number of providers; holders' column names match.

    Each party's floor keys are checked against
    :data:`~mpc_pca.deployment_kit.FLOOR_SCHEMA` (and a holder's against
    :data:`~mpc_pca.deployment_kit.FLOOR_HOLDER_SCHEMA`) before they are
    compared; the deployment's :meth:`~mpc_pca.deployment.Deployment.configure`
    checks the rest of each announcement against its own schema.

    Raises
    ------
    InputValidationError
        Naming the sender, key, value and limit of a floor key of the wrong
        type or range, or every party's value of the first key they disagree on.
    """
    for sender, view in views.items():
        if not isinstance(view, Mapping):
            raise AnnouncementError(
                sender, f"{sender} announced {type(view).__name__}, not a mapping of settings"
            )
        schema = {**FLOOR_SCHEMA, **(FLOOR_HOLDER_SCHEMA if sender in holders else {})}
        for key, spec in schema.items():
            reason = spec.problem(view.get(key))
            if reason is not None:
                raise AnnouncementError(
                    sender, f"{sender} announced {key}={shown(view.get(key))}, which {reason}"
                )
    for key in ("protocol", "n_providers"):
        values = {name: view.get(key) for name, view in views.items()}
        if len({json.dumps(v, sort_keys=True) for v in values.values()}) != 1:
            raise InputValidationError(f"the parties disagree on {key}: {values}")
    agree_columns(views, holders)


def check_own_announcement(party: str, public: PublicSettings) -> None:
    """Refuse, before it is sent, an announcement that its peers would refuse for its size.

    Between hosts a data holder's column names travel in its first message,
    a control frame of at most :data:`~protocols.transport.socket_frames.CONTROL_CAP`
    bytes. A ``pppca-randomized`` site reading a ``.bed`` announces no names
    (its SNPs are in id order, proven by digests), so its width is not bounded here.

    Raises
    ------
    InputValidationError
        Naming the party, its number of names or bytes and both limits.
    """
    from protocols.transport.socket_frames import CONTROL_CAP
    from protocols.transport.wire import encode_message

    names = public.get("columns")
    size = len(encode_message(dict(public)))
    count = 0 if not isinstance(names, list) else len(names)
    if size > CONTROL_CAP - (1 << 12):
        raise InputValidationError(
            f"{party}'s announcement would be {size:,} bytes with its {count:,} column names; between hosts "
            f"a party's first message is at most {CONTROL_CAP - (1 << 12):,} bytes (of a {CONTROL_CAP:,}-byte "
            f"frame), and the protocols other than pppca-randomized take at most {MAX_FEATURES:,} columns. "
            "Wider data runs between hosts as PLINK .bed files with pppca-randomized (SNPs in id order, "
            "proven by digests, no names sent), or in one process with mpc-pca run"
        )


def with_feature_names(fields: dict[str, Any], names: tuple[str, ...] | None) -> dict[str, Any]:
    """A party's result fields with the agreed column names as ``feature_names``, if they hold a model.

    Every result that carries ``components`` (the model of the party that
    learns it, a DP site's own release) gets ``feature_names`` (``None``
    when the rows had no names) unless its deployment already set it, so a
    model written by ``mpc-pca party`` names its columns for every protocol,
    as ``mpc-pca run`` does.

    Examples
    --------
    >>> with_feature_names({"components": [[1.0, 0.0]]}, ("a", "b"))
    {'components': [[1.0, 0.0]], 'feature_names': ['a', 'b']}
    >>> with_feature_names({"n_rows": 3}, ("a", "b"))
    {'n_rows': 3}
    """
    if "components" in fields and "feature_names" not in fields:
        fields["feature_names"] = None if names is None else list(names)
    return fields


__all__ = [
    "agree_columns", "align_views", "check_floor_views", "check_own_announcement", "floor_public",
    "with_feature_names",
]  # fmt: skip
