"""A static address table (``peers``, read from a file): every party's name and address, known before the run.

Organisations behind firewalls usually know each other's addresses in
advance (their IT staff open the ports), so the run needs no rendezvous:
each party listens on its own entry's address, dials the higher ranks and
accepts the lower ones (:func:`~protocols.transport.mesh.connect_mesh`),
which saves the rendezvous' three round trips of set-up (see
``docs/explanation/links.md``, *Set-up in round trips*).

The file is JSON, the parties in rank order::

    {"parties": [{"name": "provider0", "address": "10.0.0.1:7001"},
                 {"name": "server", "address": "[2001:db8::2]:7002"}]}

Nothing in it is trusted beyond where to dial: every link is still
authenticated against the name the table puts at that rank.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocols.errors import InputValidationError
from protocols.transport.certs import check_party_names
from protocols.transport.rendezvous import parse_endpoint

#: Largest peers file read (bytes): a table of thousands of parties fits.
MAX_PEERS_FILE_BYTES = 1 << 20
_TOP_KEYS = {"parties"}
_ENTRY_KEYS = {"name", "address"}


@dataclass(frozen=True)
class PeerTable:
    """Every party of a run in rank order, with the address its links accept on.

    Attributes
    ----------
    parties : tuple of (str, (str, int))
        ``(name, (host, port))`` at rank 0, 1, ...
    """

    parties: tuple[tuple[str, tuple[str, int]], ...]

    @property
    def ranks(self) -> dict[str, int]:
        """``{name: rank}``."""
        return {name: rank for rank, (name, _) in enumerate(self.parties)}

    @property
    def addresses(self) -> dict[str, tuple[str, int]]:
        """``{name: (host, port)}``."""
        return dict(self.parties)

    def check_ranks(self, ranks: Mapping[str, int]) -> None:
        """Refuse a table whose names and ranks are not exactly ``ranks``.

        Raises
        ------
        InputValidationError
            Naming the first rank where the table and ``ranks`` differ.
        """
        expected = sorted(ranks, key=lambda name: ranks[name])
        found = [name for name, _ in self.parties]
        if len(found) != len(expected):
            raise InputValidationError(
                f"the peers file lists {len(found)} parties ({found}), but the run has {len(expected)}: {expected}"
            )
        for rank, (mine, theirs) in enumerate(zip(found, expected, strict=True)):
            if mine != theirs:
                raise InputValidationError(
                    f"the peers file puts {mine!r} at rank {rank}, where the run has {theirs!r} "
                    f"(parties in rank order: {expected})"
                )


def parse_peers(text: str, source: str = "the peers file") -> PeerTable:
    """Parse and check a peers file's JSON text.

    Parameters
    ----------
    text : str
        ``{"parties": [{"name": NAME, "address": "HOST:PORT"}, ...]}``, in rank order.
    source : str
        What to call the file in messages (e.g. its path).

    Raises
    ------
    InputValidationError
        Naming the value: not JSON, a key missing or unknown, a name that
        cannot be a certificate's, a name or address given twice, or an
        address that is not ``HOST:PORT`` with a port in 1 .. 65535.

    Examples
    --------
    >>> table = parse_peers('{"parties": [{"name": "a", "address": "10.0.0.1:7001"},'
    ...                     ' {"name": "b", "address": "[::1]:7002"}]}')
    >>> table.ranks, table.addresses["b"]
    ({'a': 0, 'b': 1}, ('::1', 7002))
    """
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputValidationError(f"{source} is not JSON: {exc}") from None
    if not isinstance(document, dict) or set(document) != _TOP_KEYS:
        keys = sorted(document) if isinstance(document, dict) else _shown(document)
        raise InputValidationError(f'{source} must be an object with the one key "parties", got {keys}')
    entries = document["parties"]
    if not isinstance(entries, list) or not entries:
        raise InputValidationError(
            f'{source}: "parties" must be a non-empty list of parties in rank order, got {_shown(entries)}'
        )
    parties: list[tuple[str, tuple[str, int]]] = []
    names: dict[str, int] = {}
    dialled: dict[tuple[str, int], str] = {}
    for rank, entry in enumerate(entries):
        where = f"{source}: party at rank {rank}"
        if not isinstance(entry, dict) or set(entry) != _ENTRY_KEYS:
            keys = sorted(entry) if isinstance(entry, dict) else _shown(entry)
            raise InputValidationError(
                f'{where} must be an object with the keys "name" and "address", got {keys}'
            )
        name, address = entry["name"], entry["address"]
        if not isinstance(name, str):
            raise InputValidationError(f"{where}: name {_shown(name)} is not a string")
        check_party_names([name])
        if name in names:
            raise InputValidationError(f"{where}: name {name!r} is already the party at rank {names[name]}")
        if not isinstance(address, str):
            raise InputValidationError(f"{where} ({name!r}): address {_shown(address)} is not a string")
        host, port = parse_endpoint(address, f"{source}: {name!r}'s address", port_required=True)
        key = (host.lower(), port)
        if key in dialled:
            raise InputValidationError(
                f"{where}: {name!r}'s address {address!r} is already {dialled[key]!r}'s; every party "
                "needs its own HOST:PORT"
            )
        names[name] = rank
        dialled[key] = name
        parties.append((name, (host, port)))
    return PeerTable(tuple(parties))


def read_peers(path: str | Path) -> PeerTable:
    """:func:`parse_peers` of the file at ``path`` (at most :data:`MAX_PEERS_FILE_BYTES`).

    Raises
    ------
    InputValidationError
        For a file that cannot be read or is too large, and as :func:`parse_peers`.
    """
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_PEERS_FILE_BYTES + 1)
    except OSError as exc:
        raise InputValidationError(f"peers={str(path)!r} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_PEERS_FILE_BYTES:
        raise InputValidationError(
            f"peers={str(path)!r} is larger than {MAX_PEERS_FILE_BYTES:,} bytes; a peers file lists names "
            "and addresses only"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputValidationError(f"peers={str(path)!r} is not UTF-8: {exc}") from None
    return parse_peers(text, f"peers={str(path)!r}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["MAX_PEERS_FILE_BYTES", "PeerTable", "parse_peers", "read_peers"]
