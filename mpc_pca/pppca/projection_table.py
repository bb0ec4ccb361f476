"""The consumer's projected rows as a table every party and tool reads the same way.

:func:`projection_table` labels the consumer's stacked ``X_i T`` with each
row's provider and its index in that provider's rows (the consumer's JSON
result, the ``output`` file of ``mpc-pca party``); :func:`read_projection` reads one back
(``mpc-pca plot``, the tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from mpc_pca.pppca.protocol import PPPCAConfig
from protocols.errors import InputValidationError


def projection_table(
    projected: NDArray[np.float64], config: PPPCAConfig, dropped: Sequence[str] = ()
) -> dict[str, Any]:
    """The consumer's stacked rows as a table: ``provider``, ``row`` (within it), ``PC1 .. PCk``.

    ``{"columns": [...], "data": [[provider, row, pc1, ...], ...]}``: the
    rows in provider order, each labelled with its provider and its index in
    that provider's rows (``pandas.DataFrame(data, columns=columns)`` reads it).
    Providers in ``dropped`` (a run that tolerated their dropping out) sent no
    rows and are left out.

    Raises
    ------
    InputValidationError
        If the number of rows is not the sum of the announced row counts.
    """
    if config.announced_rows is None:
        raise InputValidationError(
            "the providers' row counts were not announced: the rows cannot be labelled"
        )
    announced = zip(config.providers, config.announced_rows, strict=True)
    counts = [(p, n) for p, n in announced if p not in set(dropped)]
    if sum(n for _, n in counts) != projected.shape[0]:
        raise InputValidationError(
            f"{projected.shape[0]} projected rows, but the providers announced {dict(counts)} rows"
        )
    k = projected.shape[1] if projected.ndim == 2 else 0
    labels = [(p, i) for p, n in counts for i in range(n)]
    return {
        "columns": ["provider", "row", *(f"PC{j + 1}" for j in range(k))],
        "data": [[p, i, *map(float, values)] for (p, i), values in zip(labels, projected, strict=True)],
    }


def read_projection(projection: object) -> tuple[list[str] | None, NDArray[np.float64]]:
    """The provider labels and the values of a consumer's ``projection`` (a :func:`projection_table`).

    An older bare list of rows (no labels) gives ``None`` labels.

    Raises
    ------
    InputValidationError
        If ``projection`` is neither a table with ``provider`` and ``PC1 ..``
        columns nor a list of equally long rows of numbers.
    """
    if isinstance(projection, dict):
        columns, data = projection.get("columns"), projection.get("data")
        if not isinstance(columns, list) or not isinstance(data, list) or "provider" not in columns:
            raise InputValidationError(
                "a projection table needs 'columns' (with 'provider', 'row', 'PC1', ...) and 'data'; "
                f"got the keys {sorted(map(str, projection))}"
            )
        pcs = [j for j, name in enumerate(columns) if isinstance(name, str) and name.upper().startswith("PC")]
        where = columns.index("provider")
        try:
            values = np.array([[row[j] for j in pcs] for row in data], dtype=np.float64).reshape(
                len(data), len(pcs)
            )
            labels = [str(row[where]) for row in data]
        except (TypeError, ValueError, IndexError) as exc:
            raise InputValidationError(
                f"the projection table's rows do not match its columns ({exc})"
            ) from exc
        return labels, values
    try:
        values = np.array(projection, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputValidationError(f"a projection is a table or a list of rows of numbers ({exc})") from exc
    if values.ndim != 2:
        raise InputValidationError(f"a projection's rows must form a 2-D array, got shape {values.shape}")
    return None, values


__all__ = ["projection_table", "read_projection"]
