"""The run's rank table: every party's name and its rank ``0 .. W-1``."""

from __future__ import annotations

from collections.abc import Mapping

from protocols.errors import InputValidationError


def check_ranks(ranks: Mapping[str, int]) -> dict[str, int]:
    """Validate a ``{party name: rank}`` map: ranks must be exactly ``0 .. W-1``."""
    table = dict(ranks)
    values = sorted(table.values())
    if not table or values != list(range(len(table))):
        raise InputValidationError(f"ranks must be 0 .. {len(table) - 1}, one per party; got {table}")
    return table
