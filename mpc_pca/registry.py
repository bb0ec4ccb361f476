"""Every protocol of the package, by name: one line each, returning its protocol object.

A protocol is one :class:`~mpc_pca.deployment.Deployment` object: its roles,
settings and their defaults, announcement schema, result fields, message caps
and capabilities are declared there, once. This module only says which object
each name is. Each line imports the protocol's module when the protocol is
asked for (never at import time, and never the others'), so that a
``pppca-ss`` party does not import scikit-learn; the imports are plain import
statements, so the import contracts (``lint-imports``) see them.

Adding a protocol is its module plus one line in :func:`_table`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TYPE_CHECKING

from protocols.errors import InputValidationError

if TYPE_CHECKING:
    from mpc_pca.deployment import Deployment


def _pppca(name: str) -> Deployment:
    from mpc_pca.pppca.deployment import PPPCADeployment

    return PPPCADeployment(name)


def _wide(name: str) -> Deployment:
    from mpc_pca.wide.deployment import WideDeployment

    return WideDeployment(name)


def _pppca_dp(name: str) -> Deployment:
    from mpc_pca.pppca.dp_deploy import PPPCADPDeployment

    return PPPCADPDeployment(name)


def _curator(name: str) -> Deployment:
    from mpc_pca.dp.curator_deploy import CuratorDeployment

    return CuratorDeployment(name)


def _local(name: str) -> Deployment:
    from mpc_pca.dp.local_deploy import LocalDeployment

    return LocalDeployment(name)


def _dispca(name: str) -> Deployment:
    from mpc_pca.dp.dispca_deploy import DisPCADeployment

    return DisPCADeployment(name)


def _dpdpca(name: str) -> Deployment:
    from mpc_pca.dp.dpdpca_deploy import DPDPCADeployment

    return DPDPCADeployment(name)


def _capepca(name: str) -> Deployment:
    from mpc_pca.dp.cape_deploy import CapeDeployment

    return CapeDeployment(name)


def _capeagn(name: str) -> Deployment:
    from mpc_pca.dp.capeagn_deploy import CapeAGNDeployment

    return CapeAGNDeployment(name)


def _table() -> dict[str, Callable[[str], Deployment]]:
    """Each protocol's name and the function that makes its object, in the order ``--help`` lists them."""
    return {
        "pppca-ss": _pppca,
        "pppca-he": _pppca,
        "pppca-randomized": _wide,
        "pppca-dp": _pppca_dp,
        "ag": _curator,
        "sn": _curator,
        "ppm": _curator,
        "ppca": _curator,
        "pooled": _curator,
        "local": _local,
        "dispca": _dispca,
        "dispca-full": _dispca,
        "dpdpca": _dpdpca,
        "capepca": _capepca,
        "capeagn": _capeagn,
    }


def names() -> list[str]:
    """Every protocol's name, in registry order (no protocol module is imported)."""
    return list(_table())


def entries() -> dict[str, Deployment]:
    """Every protocol's object, by name (imports every protocol's module)."""
    return {name: make(name) for name, make in _table().items()}


def deployable_names() -> list[str]:
    """The protocols whose parties may run as processes and with ``mpc-pca party``."""
    return [name for name, protocol in entries().items() if protocol.deployable]


def entry(name: str) -> Deployment:
    """The protocol object of ``name``, matched without regard to case (``PPPCA-SS`` is ``pppca-ss``).

    This is the one place a protocol name given by a user is resolved: callers
    use the returned object's :attr:`~mpc_pca.deployment.Deployment.name` (the
    registry's spelling) from then on.

    Parameters
    ----------
    name : str
        The name as given, e.g. on the command line.

    Returns
    -------
    Deployment
        A fresh object of the protocol (only its own module is imported).

    Raises
    ------
    InputValidationError
        For an unknown name: names it, suggests the closest known name when
        one is close ("did you mean"), and lists the known ones.
    """
    table = _table()
    key = str(name).strip().lower()
    if key in table:
        return table[key](key)
    close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    raise InputValidationError(f"unknown protocol {name!r}{hint} choose one of {list(table)}")


def deployment(name: str) -> Deployment:
    """The protocol object of ``name`` if its parties may run between organisations.

    Raises
    ------
    InputValidationError
        If the protocol runs in one process only, naming the ones that deploy.
    """
    protocol = entry(name)
    if not protocol.deployable:
        raise InputValidationError(
            f"protocol {protocol.name!r} cannot run as separate parties yet; choose one of {deployable_names()}"
        )
    return protocol


__all__ = ["deployable_names", "deployment", "entries", "entry", "names"]
