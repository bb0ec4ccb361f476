"""Agreeing on the ordered column names of every provider's table.

PPPCA sums the providers' statistics entry by entry, so column ``j`` must
mean the same feature at every provider. Before any data is sent the parties
agree on one ordered list of names, the first provider's: in one process
(``mpc-pca run``) the tables are compared directly; across hosts (``mpc-pca
party``) each provider announces its names in the settings agreement
(:func:`mpc_pca.floor.agree_columns`). A provider whose columns are a
permutation of the first provider's is reordered by name (and told so);
different names are refused with the counts and both lists.
"""

from __future__ import annotations

from collections.abc import Sequence

from mpc_pca.data.tables import Table
from mpc_pca.validation import align_columns

#: How many of a reordered table's column names its note lists (a .bed site may have millions).
SHOWN_NAMES = 50


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
        names = list(table.names)
        shown = (
            f"{names}"
            if len(names) <= SHOWN_NAMES
            else f"{names[:SHOWN_NAMES]} and {len(names) - SHOWN_NAMES:,} more"
        )
        notes.append(
            f"{table.source}: columns reordered by name to match {tables[0].source} (its order was {shown})"
        )
    return aligned, notes
