"""Party naming conventions shared by the protocols."""

from __future__ import annotations

SERVER = "server"
CONSUMER = "consumer"


def provider_names(n_parties: int) -> tuple[str, ...]:
    """Names of the data providers: ``provider0`` ... ``provider{M-1}``."""
    return tuple(f"provider{i}" for i in range(n_parties))
