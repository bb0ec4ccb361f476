"""Every role name of every protocol, in one place.

A role name is also the party's name on the wire and in reports, so all
parties of a run must agree on it; protocols import the names from here.

========================  ====================================================
protocol                  roles
========================  ====================================================
PPPCA (SS and HE)         ``provider0..M-1``, :data:`SERVER`, :data:`CONSUMER`
centralized DP baselines  ``provider0..M-1``, :data:`CURATOR`
DPdisPCA                  ``provider0..M-1``, :data:`AGGREGATOR`
capePCA                   ``provider0..M-1``, :data:`AGGREGATOR`, :data:`NOISE_GENERATOR`
DPDPCA                    ``owner0..L-1``, :data:`PROXY`, :data:`USER`
========================  ====================================================
"""

from __future__ import annotations

SERVER = "server"
CONSUMER = "consumer"
AGGREGATOR = "aggregator"
NOISE_GENERATOR = "noise-generator"
CURATOR = "curator"
PROXY = "proxy"
USER = "user"


def provider_names(n_parties: int) -> tuple[str, ...]:
    """Names of the data providers: ``provider0`` ... ``provider{M-1}``.

    Examples
    --------
    >>> provider_names(3)
    ('provider0', 'provider1', 'provider2')
    """
    return tuple(f"provider{i}" for i in range(n_parties))


def owner_names(n_owners: int) -> tuple[str, ...]:
    """Names of DPDPCA's data owners: ``owner0`` ... ``owner{L-1}``."""
    return tuple(f"owner{i}" for i in range(n_owners))
