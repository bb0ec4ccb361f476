"""Agreeing on the ordered column names of every provider's table.

PPPCA sums the providers' statistics entry by entry, so column ``j`` must
mean the same feature at every provider. Before any data is sent the parties
agree on one ordered list of names: in one process (``mpc-pca run``) the
tables are compared directly; across hosts (``mpc-pca party``) each provider
publishes :func:`names_hash` in the settings agreement and the hashes must be
equal. A provider whose columns are a permutation of the first provider's is
reordered by name (and told so); different names are refused with both lists.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from mpc_pca.data.tables import Table
from mpc_pca.validation import align_columns


def names_hash(names: Sequence[str]) -> str:
    """SHA-256 (hex) of the ordered column names, as published in the settings agreement.

    Examples
    --------
    >>> names_hash(["a", "b"]) == names_hash(["a", "b"]) != names_hash(["b", "a"])
    True
    """
    return hashlib.sha256(json.dumps([str(n) for n in names]).encode()).hexdigest()


def agree_tables(tables: Sequence[Table]) -> tuple[list[Table], list[str]]:
    """Align every table's columns to the first table's order, by name.

    Returns
    -------
    tables : list of Table
        The tables with columns in the agreed order.
    notes : list of str
        One line per reordered table.

    Raises
    ------
    InputValidationError
        If a table has different (or repeated) names; both lists are in the message.
    """
    reference, orders = align_columns([t.names for t in tables], [t.source for t in tables])
    aligned, notes = [], []
    for table, order in zip(tables, orders, strict=True):
        if order is None:
            aligned.append(table)
            continue
        aligned.append(table.select(reference))
        notes.append(
            f"{table.source}: columns reordered by name to match {tables[0].source} "
            f"(its order was {list(table.names)})"
        )
    return aligned, notes
