"""Study ``network``: every protocol's wall time against RTT and bandwidth, secret sharing vs Paillier (issue 28).

Every party runs as a thread of this process and every message goes through
the in-process link model (:mod:`protocols.testing.link_model`): delayed
by RTT/2 and serialised at its sender's uplink bandwidth. Connection set-up
(TCP, TLS, rendezvous, agreement), which threads do not do, is added as
:data:`~protocols.testing.link_model.SETUP_ROUND_TRIPS` round trips (an
estimate; study option ``setup_rtt=N`` changes it). Each protocol is also run
once with no network at all (its compute), so every point gets the model's
decomposition ``compute + depth x RTT/2 + bytes / bandwidth + set-up``
(depth: the longest chain of messages)
(:mod:`mpc_pca.studies.network_model`) beside its measured time. DPDPCA
(2048-bit Paillier over the d x d scatter) is measured at RTT 0 only and
extrapolated by the decomposition, whose accuracy the other protocols'
measured points check. Where the build has the user-space WAN emulator
(:mod:`mpc_pca.studies.network_sockets`), a few points also run as processes
over real sockets through it, and the report gives both times.
"""

from __future__ import annotations

from mpc_pca.studies.framework import Study
from mpc_pca.studies.network_claims import claims
from mpc_pca.studies.network_report import plot, tables
from mpc_pca.studies.network_runs import OPTIONS, measure, points

STUDY = Study(
    name="network",
    summary="every protocol's wall time vs RTT (0, 20, 100 ms) and uplink bandwidth (10, 100, 1000 Mbit/s) over an "
    "in-process link model, SS vs Paillier crossover, the model checked against real sockets (issue 28)",
    points=points,
    measure=measure,
    plot=plot,
    tables=tables,
    claims=claims,
    options=OPTIONS,
    description=(
        "3 providers + server (+ consumer; capePCA: aggregator + noise generator; DPDPCA: proxy + user) as threads; "
        "every message delayed by RTT/2 and serialised at its sender's uplink (protocols.testing.link_model). "
        "Full size: 30,000 rows x d = 100 (spiked Gaussian: 5 directions of variance 10 to 6 over a unit bulk, random mean, seed 28, rows scaled to norm <= 1), k = 5, 2 "
        "repeats per point (3 for each protocol's compute, the decomposition's base); DPDPCA at d = 20 (study option dpdpca_d), measured with no network and extrapolated. Quick: 600 x "
        "10, RTT 0 and 100 ms, 100 Mbit/s, three protocols (shares, HE, components), 1 repeat. One BLAS thread per "
        "party. Set-up is added as stated round trips (6, the set-up's accounting: rendezvous 3, links 2.5, "
        "announcements 0.5; issue 28 measured 13.6 with the mesh of then); the socket check measures it. Socket check: every party a process over TLS with "
        "every link through the user-space WAN emulator (protocols.testing.wan_emulator), PPPCA-SS and PPPCA-HE at 100 "
        "Mbit/s and each RTT (quick: SS at 100 ms only), beside threads over the model at the same link. "
        "Verdicts: bootstrap CIs at alpha 0.05 one-sided (HE/SS ratio above 1 at each network; components' "
        "excess over covariance; model/measured ratio inside the margin). Timings on a shared machine move with "
        "its load (see the machine section)."
    ),
)
