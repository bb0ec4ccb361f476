"""This project's secure sum inside Flower: a server workflow and a client mod (the ``flower`` extra).

A Flower app that uses SecAgg+ changes two names::

    from mpc_pca.integrations.flower import SecureSumWorkflow, secure_sum_mod

    DefaultWorkflow(fit_workflow=SecureSumWorkflow(num_shares=3, reconstruction_threshold=0.7))
    ClientApp(client_fn=client_fn, mods=[secure_sum_mod])

The protocol (pairwise masks, Shamir-shared seeds relayed encrypted by the
server, dropout tolerance, fixed-point scale from the agreed range) is in
:mod:`mpc_pca.integrations.star_sum.protocol`; the Flower-free client and server
steps in :mod:`~mpc_pca.integrations.star_sum.client` and
:mod:`~mpc_pca.integrations.star_sum.server`. Without Flower installed, importing
this package raises an :class:`ImportError` that gives the ``pip install`` line.

Modules
-------
workflow
    :class:`~mpc_pca.integrations.flower.workflow.SecureSumWorkflow`, the ServerApp side.
mod
    :func:`~mpc_pca.integrations.flower.mod.secure_sum_mod`, the ClientApp side.
"""

from __future__ import annotations

try:
    import flwr  # noqa: F401
except ImportError as exc:  # the extra is not installed
    raise ImportError(
        'mpc_pca.integrations.flower needs Flower: pip install "mpc-pca[flower]" (flwr==1.42.0)'
    ) from exc

from mpc_pca.integrations.flower.mod import secure_sum_mod
from mpc_pca.integrations.flower.workflow import RoundOutcome, SecureSumWorkflow

__all__ = ["RoundOutcome", "SecureSumWorkflow", "secure_sum_mod"]
