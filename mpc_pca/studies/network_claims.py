"""The network study's claims: round-bound components mode, SS vs HE, the decomposition, the socket check.

Verdicts are bootstrap confidence intervals at alpha = 0.05 one-sided
(:mod:`mpc_pca.studies.verdicts`); each claim states its margin. The
records are read as the report reads them (:mod:`mpc_pca.studies.network_report`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mpc_pca.studies.framework import Claim, Record
from mpc_pca.studies.network_report import (
    compute_points,
    crossovers,
    modelled_seconds,
    predicted,
    socket_checks,
)
from mpc_pca.studies.network_runs import LABELS, MODEL_MARGIN, ROUND_BOUND_SHARE
from mpc_pca.studies.verdicts import ALPHA, Verdict, bootstrap_ci, equivalent, ratio_above


def _all(verdicts: list[Verdict]) -> bool | None:
    if not verdicts:
        return None
    if any(v.holds is False for v in verdicts):
        return False
    return True if all(v.holds for v in verdicts) else None


def _difference(a: Any, b: Any) -> float:
    return float(np.mean(a) - np.mean(b))


def claims(records: list[Record]) -> list[Claim]:
    """Round-bound components mode, SS vs HE at every network, and the decomposition's accuracy."""
    by = {(r["protocol"], r["rtt"], r["bandwidth"]): r for r in records if r["kind"] == "model"}
    out = [_round_bound_claim(by), _ss_beats_he_claim(records, by), _decomposition_claim(records, by)]
    sockets = _socket_claim(records)
    if sockets is not None:
        out.append(sockets)
    return out


def _round_bound_claim(by: dict[tuple[str, float, float], Record]) -> Claim:
    """Components mode at RTT 100 ms, 100 Mbit/s takes longer than covariance mode by most of its rounds x RTT/2."""
    src = "issue 28"
    comp, cov = by.get(("ss-components", 0.1, 100e6)), by.get(("ss-shares", 0.1, 100e6))
    text = (
        f"hiding the covariance is round-bound: at RTT 100 ms and 100 Mbit/s, reveal='components' takes longer "
        f"than covariance mode by more than {ROUND_BOUND_SHARE} x its rounds per provider x RTT/2"
    )
    if comp is None or cov is None:
        return Claim(src, text, None, "needs both at RTT 100 ms, 100 Mbit/s")
    threshold = ROUND_BOUND_SHARE * comp["provider_rounds"] * 0.1 / 2
    est, lo, hi = bootstrap_ci(
        [np.asarray(comp["seconds"]), np.asarray(cov["seconds"])],
        _difference,
        level=1 - 2 * ALPHA,
        seed=28,
    )
    holds = True if lo > threshold else (False if hi < threshold else None)
    return Claim(
        src,
        text,
        holds,
        f"difference of means {est:.2f} s, {100 * (1 - 2 * ALPHA):g}% bootstrap "
        f"CI [{lo:.2f}, {hi:.2f}] against {threshold:.2f} s ({comp['provider_rounds']} rounds per provider)",
    )


def _ss_beats_he_claim(records: list[Record], by: dict[tuple[str, float, float], Record]) -> Claim:
    """PPPCA-SS (shares) beats PPPCA-HE at every measured network."""
    src = "issue 28"
    per = {
        k[1:]: ratio_above(by[("he", *k[1:])]["seconds"], r["seconds"], threshold=1.0, seed=28)
        for k, r in by.items()
        if k[0] == "ss-shares" and ("he", *k[1:]) in by
    }
    cross = crossovers(records)
    where = "; ".join(
        f"{bw / 1e6:g} Mbit/s: {'no crossover' if a is None else f'cross at {a * 1e3:.1f} ms'}"
        f"{'' if b is None else f', lines meet at {b * 1e3:.0f} ms'}"
        for bw, (a, b) in sorted(cross.items())
    )
    return Claim(
        src,
        "secret sharing (PPPCA-SS, shares) beats Paillier (PPPCA-HE, CLI defaults) at every "
        "measured RTT <= 100 ms and bandwidth >= 10 Mbit/s",
        _all(list(per.values())),
        f"{where}. HE/SS per network: "
        + "; ".join(
            f"RTT {rtt * 1e3:g} ms, {bw / 1e6:g} Mbit/s: {v.evidence}" for (rtt, bw), v in sorted(per.items())
        )
        if per
        else "needs SS and HE at the same networks",
    )


def _decomposition_claim(records: list[Record], by: dict[tuple[str, float, float], Record]) -> Claim:
    """The decomposition predicts every measured time at RTT > 0 within :data:`MODEL_MARGIN`."""
    computes = compute_points(records)
    checks: dict[tuple[str, float, float], Verdict] = {}
    ratios: dict[tuple[str, float, float], float] = {}
    for (p, rtt, bw), r in by.items():
        if p in computes and rtt > 0:
            model = predicted(computes[p], rtt, bw)
            ratios[(p, rtt, bw)] = float(np.median(modelled_seconds(r))) / model
            checks[(p, rtt, bw)] = equivalent(
                modelled_seconds(r),
                [model] * len(r["seconds"]),
                margin=MODEL_MARGIN / (1 + MODEL_MARGIN),
                seed=28,
            )
    worst = max(ratios, key=lambda k: abs(np.log(ratios[k])), default=None)
    return Claim(
        "this study",
        f"the decomposition compute + message depth x RTT/2 + bytes/bandwidth + set-up predicts every "
        f"measured time at RTT > 0 within {MODEL_MARGIN:.0%} (what the extrapolated rows rest on)",
        _all(list(checks.values())),
        "no point at RTT > 0"
        if worst is None
        else f"{len(checks)} points; {sum(v.holds is True for v in checks.values())} within, "
        f"{sum(v.holds is False for v in checks.values())} outside; furthest: {LABELS[worst[0]]} at RTT "
        f"{worst[1] * 1e3:g} ms, {worst[2] / 1e6:g} Mbit/s, measured / model {ratios[worst]:.2f}: "
        f"{checks[worst].evidence}",
    )


def _socket_claim(records: list[Record]) -> Claim | None:
    """The in-process model against processes over the WAN emulator (``None`` without socket points)."""
    socket_rows = socket_checks(records)
    if not socket_rows:
        return None
    judged = [(c, c["verdict"]) for c in socket_rows if c["verdict"] is not None]
    return Claim(
        "this study",
        f"the in-process model (threads + set-up round trips + the start-up measured at RTT 0) is within "
        f"{MODEL_MARGIN:.0%} of processes over the user-space WAN emulator at every RTT > 0",
        _all([v for _, v in judged]),
        "; ".join(
            f"{c['protocol']} RTT {c['rtt'] * 1e3:g} ms: emulator {c['emulator']:.2f} s, model "
            f"{c['model']:.2f} s: {v.evidence}"
            for c, v in judged
        )
        or "needs the emulator at RTT 0 and at an RTT > 0 for one protocol",
    )
