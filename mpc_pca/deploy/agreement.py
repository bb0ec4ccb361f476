"""What every party checks of the announcements before a run starts: the floor's keys and the column names.

The floor's own keys of every announcement (``protocol``, ``n_providers``
and a data holder's ``columns``, :func:`mpc_pca.deploy.party.floor_public`)
are checked against :data:`~mpc_pca.deployment_kit.FLOOR_SCHEMA` and agreed
by every party (:func:`check_floor_views`); the holders' column names are
agreed by name (:func:`agree_columns`), the first holder's order being the
reference, before :func:`mpc_pca.deploy.party.align_views` puts every
holder's announcement in that order.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from mpc_pca.deployment import PublicSettings
from mpc_pca.deployment_kit import FLOOR_HOLDER_SCHEMA, FLOOR_SCHEMA, AnnouncementError, shown
from protocols.errors import InputValidationError


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
        raise InputValidationError(
            f"{', '.join(unnamed)} announced no column names but {', '.join(named)} did; read every "
            "provider's table the same way (a header row on all of them, or --no-header on all)"
        )
    reference, orders = align_columns([list(names[h]) for h in present], present)  # type: ignore[arg-type]
    return reference, dict(zip(present, orders, strict=True))


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


__all__ = ["agree_columns", "check_floor_views"]
