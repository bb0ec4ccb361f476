"""The ``private`` and ``privacy_leaks`` fields of a DP result, for ``mpc-pca run`` and ``mpc-pca party`` alike.

A DP protocol's JSON says ``"private": true``, or ``false`` with the causes
in ``"privacy_leaks"``: every :class:`~mpc_pca.validation.PrivacyLeakWarning`
the command raised (a fixed noise seed, ``epsilon=inf``, ``delta >= 1/n``,
rows scaled by the pooled data, the retracted SN mechanism), and, for a
protocol that adds no noise (``pooled``), that fact.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mpc_pca.deployment import Deployment


def holds_dp_release(protocol: Deployment, result: dict[str, Any]) -> bool:
    """Whether ``result`` is a DP protocol's release: the protocol reports ``epsilon`` and the result a model.

    In a party's result only the parties that received the model
    (``components``) hold a release; a noise generator, for one, does not.
    """
    return "epsilon" in protocol.result_fields and "components" in result


def privacy_fields(protocol: Deployment, leaks: Sequence[str]) -> dict[str, Any]:
    """``{"private": ..., "privacy_leaks": [...]}`` for a release of ``protocol`` after warnings ``leaks``.

    Parameters
    ----------
    protocol : Deployment
        The registry's protocol object; one without an ``epsilon`` setting adds no noise.
    leaks : sequence of str
        The messages of the command's :class:`~mpc_pca.validation.PrivacyLeakWarning` causes, each once.

    Examples
    --------
    >>> from mpc_pca.registry import entry
    >>> privacy_fields(entry("ag"), [])
    {'private': True, 'privacy_leaks': []}
    >>> privacy_fields(entry("pooled"), [])["privacy_leaks"]
    ['protocol pooled adds no noise: it is not differentially private']
    """
    reasons = list(leaks)
    if "epsilon" not in protocol.options:
        reasons.append(f"protocol {protocol.name} adds no noise: it is not differentially private")
    return {"private": not reasons, "privacy_leaks": reasons}


def privacy_summary(result: dict[str, Any]) -> list[str]:
    """The summary's privacy lines: ``epsilon``, ``delta``, and every guarantee of the run that differs from them.

    ``effective_epsilon`` (capePCA, capeAGN with ``--cape-calibration paper``)
    is the ``epsilon`` each site has against the aggregator's joint view of all
    releases, larger than ``epsilon`` under the paper's calibration;
    ``epsilon_by_colluders`` (pppca-dp) is the ``epsilon`` against a server
    colluding with ``c = 0, 1, ...`` providers, larger than ``epsilon`` beyond
    ``--min-honest``'s collusion.
    """
    epsilon = result["epsilon"]
    private = "" if result.get("private", True) else " (NOT private: see the warnings)"
    lines = [f"privacy: epsilon={epsilon}, delta={result.get('delta')}{private}"]
    if epsilon is None:
        return lines
    effective = result.get("effective_epsilon")
    if effective is not None and effective > epsilon * (1 + 1e-9):
        lines.append(
            f"  each site's epsilon against the aggregator's joint view of all releases: {effective:.4g} "
            f"(calibration {result.get('calibration')}; --cape-calibration joint keeps it at {epsilon})"
        )
    colluders = result.get("epsilon_by_colluders")
    if colluders and any(value > epsilon * (1 + 1e-9) for value in colluders):
        shown = ", ".join(f"{value:.4g}" for value in colluders)
        lines.append(
            f"  epsilon against the server colluding with c = 0..{len(colluders) - 1} providers: {shown} "
            "(--min-honest sets how many must stay honest for epsilon)"
        )
    return lines


__all__ = ["holds_dp_release", "privacy_fields", "privacy_summary"]
