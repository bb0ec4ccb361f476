"""The providers' verdict when check 4's Ritz residual refuses a ``reveal="components"`` answer.

With ``reveal="components"`` the server's ``T`` and ``Λ`` are the Ritz pairs of the secure
eigensolve (:func:`protocols.tensor.fast_eig.ladder_eigenvectors`, docs/secure_tensor.md
section 8), whose stopping rule trusts the assumed eigengap ``g`` (``1 - λ_{k+1} / λ_k``)
without measuring it. The server's trace check
(:func:`mpc_pca.pppca.components.check_assumed_gap`) refuses ``g`` when the *mean* of the other
eigenvalues contradicts it; a false gap whose mass sits in ``λ_{k+1}`` alone passes it, the
ladder stops before its basis is within ``max(64 tol, 1e-4)`` of the top-k eigenspace, and the
providers' check 4 (:mod:`mpc_pca.pppca.answer_check`: the secure Ritz residual
``(R V - V Λ) / λ_1``, opened column by column, :mod:`mpc_pca.pppca.column_residual`) is the
first to see it, in every run where one column's residual exceeds the per-column tolerance.

A residual above its tolerance proves only that the columns of ``T`` are not eigenvectors of
the pooled covariance within that tolerance. In covariance mode an honest server computing
in the clear has no excuse for that, and the error says it sent a wrong answer. In components
mode an honest server and dealer produce exactly this when ``g`` was false, so the error
states both explanations, the assumed ``g``, the residual and its tolerance, and how to rerun.
It is still a refusal: every provider raises before it projects a row (exit 4 for
``mpc-pca party``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from mpc_pca.pppca.components import ComponentsSettings
from mpc_pca.roles import SERVER
from protocols.errors import ProtocolError

if TYPE_CHECKING:
    from mpc_pca.pppca.config import PPPCAConfig

__all__ = ["refuse_false_gap"]


def refuse_false_gap(
    config: PPPCAConfig,
    only_residual: bool,
    residual: float,
    allowed: float,
    k: int,
    source: str,
    column: int = 0,
) -> None:
    """Raise the components-mode verdict when check 4's residual is the answer's only failure.

    Parameters
    ----------
    config : PPPCAConfig
        The run's settings (``reveal`` and the assumed ``components.eigengap``).
    only_residual : bool
        Whether the residual is the only check that failed. A wrong ``N``, total variance
        or mean does not follow from a false eigengap: those keep the server's error.
    residual, allowed : float
        The largest column norm ``|(R V - V Λ) e_j| / λ_1`` as opened, and the per-column tolerance.
    k : int
        The number of components (``λ_k`` and ``λ_{k+1}`` are named).
    source : str
        ``" (as opened and reported by provider0)"`` for the providers that did not open the sum.
    column : int
        ``j - 1``, the (0-based) column with that largest residual.

    Raises
    ------
    ProtocolError
        With ``reveal="components"`` and ``only_residual``; otherwise returns and the caller
        raises its own error.
    """
    if config.reveal != "components" or not only_residual:
        return
    gap = config.components.eigengap
    default = ComponentsSettings.eigengap
    without = f" (or without it: the default is {default:g})" if gap > default else ""
    raise ProtocolError(
        f"the components {SERVER!r} sent are not eigenvectors of the pooled covariance within the "
        f"tolerance{source}: C T - T Lambda is not zero; the secure eigensolve's Ritz residual "
        f"|(C T - T Lambda) e_j| / lambda_1 = {residual:.3g} in column j={column + 1}, allowed {allowed:.3g} "
        "per column. Either the "
        f"assumed eigengap={gap:g} is false for these data (lambda_{k + 1} is closer to lambda_{k} than "
        f"1 - {gap:g} allows, so the secure eigensolve stopped before it converged): rerun with a smaller "
        f"eigengap{without}, or with reveal='spectrum', which assumes no gap; or the server (the "
        "eigensolve's dealer) deviated; refusing to use its T"
    )
