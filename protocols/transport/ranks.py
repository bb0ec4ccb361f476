"""The run's rank table: every party's name and its rank ``0 .. W-1``."""

from __future__ import annotations

from collections.abc import Mapping

from protocols.errors import InputValidationError

#: Most parties a run may have: the relay accepts layouts of at most this many parties
#: (``relay.MAX_PARTIES``) and the rendezvous' waiting-room status lists at most this many names
#: (``rendezvous.MAX_WAITING_NAMES``), so a larger world could never assemble. In a direct mesh
#: each party also holds ``W - 1`` links (open sockets) for the whole run.
MAX_WORLD_SIZE = 4096


def check_world_size(world_size: object, name: str = "world size") -> int:
    """Validate a world size before any party starts: an integer from 1 to :data:`MAX_WORLD_SIZE`.

    Parameters
    ----------
    world_size : object
        The value to check.
    name : str
        What it is, for the message (the setting ``world_size``, or a description).

    Examples
    --------
    >>> check_world_size(1_000_000, "world_size")
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: world_size 1000000 is out of range; it must be between 1 and 4096 (MAX_WORLD_SIZE: the most parties the relay and the rendezvous accept)
    """
    if (
        isinstance(world_size, bool)
        or not isinstance(world_size, int)
        or not 1 <= world_size <= MAX_WORLD_SIZE
    ):
        raise InputValidationError(
            f"{name} {world_size!r} is out of range; it must be between 1 and {MAX_WORLD_SIZE} "
            "(MAX_WORLD_SIZE: the most parties the relay and the rendezvous accept)"
        )
    return world_size


def check_ranks(ranks: Mapping[str, int]) -> dict[str, int]:
    """Validate a ``{party name: rank}`` map: ranks must be exactly ``0 .. W-1``."""
    table = dict(ranks)
    values = sorted(table.values())
    if not table or values != list(range(len(table))):
        raise InputValidationError(f"ranks must be 0 .. {len(table) - 1}, one per party; got {table}")
    return table
