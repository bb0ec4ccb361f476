"""Reproducible studies: ``mpc-pca study NAME`` measures, ``mpc-pca report DIR`` writes the report.

Modules
-------
framework
    :class:`Study`, :func:`run_study` (resumable JSON Lines results), claims and tables.
registry
    Study names and where each :class:`Study` lives.
report
    ``REPORT.md`` and ``REPORT.html`` from a results folder.
machine, plotting, timing
    Machine description, plot helpers, timing and memory helpers.
verdicts
    Three-valued verdicts from repeated measurements (sign test, trend, bootstrap CI, growth margins).
settings
    The papers' privacy settings beside this project's sound ones (both curves, both verdicts).
backends, table3, lossless, dp_utility, icassp2016_svm, dsc2018, capeagn, dp_noise, scaling
    The studies (``lossless_data``: the lossless study's offline data sets; ``dp_utility_claims``:
    the verdicts of ``icassp2018`` and ``icassp2016-fig1``; ``dsc2018_fig5``: study ``dsc2018-fig5``).
network
    Every protocol over an in-process link model vs RTT and bandwidth, checked against real sockets
    (``network_runs``: points and measurement; ``network_report``: tables and plot;
    ``network_claims``: the claims;
    ``network_model``: the time decomposition and crossovers; ``network_sockets``: processes over
    the WAN emulator).
"""

from mpc_pca.studies.framework import Claim, Study, Table, run_study
from mpc_pca.studies.registry import load_study, study_table

__all__ = ["Claim", "Study", "Table", "load_study", "run_study", "study_table"]
