"""The differential-privacy options of ``mpc-pca run`` and the harness's utility metric.

Names: ``ag``, ``sn`` (retracted, not DP), ``ppm``, ``ppca``, ``pooled``,
``local``, ``dispca``, ``dispca-full``, ``capepca``, ``capeagn``. Options added to
``run``: ``--epsilon``, ``--delta``, ``--intermediate-dim``, ``--neighbour``,
``--row-norm``, ``--cape-calibration``; for ``capeagn`` only ``--model``,
``--sigma``, ``--budget-split``. The JSON result has the keys of
``pppca-ss`` (``components``, ``explained_variance``, ``mean``, ``report``) plus
``epsilon``, ``delta``, ``neighbour``, ``row_norm`` and
``captured_energy_ratio``: ``q(V) / q_o`` on the pooled rows, computed by this
simulation harness (which holds every part), not by any party. ``capepca``
adds ``calibration`` and ``effective_epsilon`` (the guarantee against the
aggregator's joint view; see :mod:`mpc_pca.dp.cape`). ``capeagn`` (JSTSP 2018
§5) learns a topic model or Gaussian mixture instead of a subspace; its JSON
has ``components`` (``K x D`` topic-word distributions or means), ``weights``,
``whitening``, ``tensor_eigenvalues``, ``epsilon``, ``delta``, ``report``,
``model``, ``sigma``, ``calibration``, ``effective_epsilon`` and the aggregate
noise scales.

``--noise-seed`` seeds every party's DP noise: for reproducible experiments
only; a run with a known noise seed is not private (its JSON says
``"private": false``). Leave it unset for a private run. ``run``'s ``--seed``
seeds only the row split of one data set.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from mpc_pca.cli.row_bound import add_row_bound_argument
from mpc_pca.dp.metrics import captured_energy_ratio, second_moment
from mpc_pca.row_norms import clip_rows

ROW_NORM_CHOICES = ("clip", "error", "scale")


def add_dp_arguments(run: argparse.ArgumentParser) -> None:
    """Add the differential-privacy options to the ``run`` sub-command."""
    dp = run.add_argument_group("differential privacy (ag, sn, ppm, ppca, local, dispca, capepca, dpdpca)")
    dp.add_argument(
        "--epsilon",
        type=float,
        default=None,
        help="privacy parameter epsilon > 0 (default 1; inf = no noise)",
    )
    dp.add_argument(
        "--delta", type=float, default=None, help="privacy parameter 0 < delta < 1 (default 1e-5)"
    )
    dp.add_argument(
        "--intermediate-dim", type=int, default=None, help="dispca: R with K <= R <= D (default 2K)"
    )
    dp.add_argument(
        "--neighbour",
        choices=("replace-one", "add-remove"),
        default=None,
        help="neighbour relation: sensitivity sqrt(2)/N (replace-one, default) or 1/N (add-remove, the papers')",
    )
    dp.add_argument(
        "--cape-calibration",
        choices=("joint", "paper"),
        default=None,
        help="capepca: joint (default; the aggregator's view of all releases is (epsilon, delta)-DP per "
        "site) or paper (JSTSP 2018 noise, pooled-AG utility, joint view only "
        "(epsilon sqrt(2S/(S+1)), delta)-DP)",
    )
    agn = run.add_argument_group("capeagn (distributed DP tensor decomposition, JSTSP 2018 section 5)")
    agn.add_argument(
        "--model",
        choices=("stm", "mog"),
        default=None,
        help="capeagn: stm (rows are word counts, default) or mog (rows of norm <= 1; needs --sigma)",
    )
    agn.add_argument(
        "--sigma", type=float, default=None, help="capeagn --model mog: Gaussian standard deviation"
    )
    agn.add_argument(
        "--budget-split",
        type=float,
        default=None,
        help="capeagn: share of epsilon, delta spent on M2 (default 0.5)",
    )
    dp.add_argument(
        "--min-honest",
        type=int,
        default=None,
        help="pppca-dp: providers that must stay honest (not collude with the server) for the "
        "(epsilon, delta) guarantee; default: all of them",
    )
    dp.add_argument(
        "--noise-calibration",
        choices=("analytic", "classical"),
        default=None,
        help="Gaussian noise calibration: analytic (Balle & Wang 2018, default, any epsilon) or classical "
        "(sqrt(2 ln(1.25/delta))/epsilon, refused for epsilon >= 1)",
    )
    dp.add_argument(
        "--noise-seed",
        type=int,
        default=None,
        help="seed of the DP noise, for reproducible experiments only: a run with a known noise seed is "
        'NOT private (its result says "private": false); default: fresh randomness',
    )
    dp.add_argument(
        "--row-norm",
        choices=ROW_NORM_CHOICES,
        default=None,
        help="enforce row norm <= 1: clip (per row, default), error, or scale (centre and divide by the "
        "pooled max row norm, as the papers do; NOT private)",
    )
    add_row_bound_argument(dp)


def _clipped(parts: list[np.ndarray]) -> list[np.ndarray]:
    """The rows as the protocol bounded them, for the harness's metric: the sites already warned of clipping."""
    return [clip_rows(part)[0] for part in parts]


def second_moment_energy_ratio(model: Any, parts: list[np.ndarray]) -> float:
    """q/q_o of the fitted components on the pooled second-moment matrix of the bounded rows."""
    return captured_energy_ratio(second_moment(_clipped(parts)), model.components_)


def centred_energy_ratio(model: Any, parts: list[np.ndarray]) -> float:
    """q/q_o on the pooled covariance, for protocols that release the centred scatter's subspace."""
    rows = np.vstack(_clipped(parts))
    centred = rows - rows.mean(axis=0)
    return captured_energy_ratio(centred.T @ centred / rows.shape[0], model.components_)


def energy_ratio_of(protocol: str, components: np.ndarray, parts: list[np.ndarray]) -> float:
    """``captured_energy_ratio`` of released ``components``, as the in-process run of ``protocol`` reports it.

    For a run whose parties were processes: the harness that launched them holds every part.
    """
    return energy_ratio_for(protocol)(SimpleNamespace(components_=components), parts)


def energy_ratio_for(protocol: str) -> Callable[[Any, list[np.ndarray]], float]:
    """The matrix whose captured energy ``protocol``'s JSON reports: the centred scatter for DPDPCA,
    which releases that subspace, the second-moment matrix for the others."""
    return centred_energy_ratio if protocol == "dpdpca" else second_moment_energy_ratio


def summarize_variance(value: Any) -> str:
    """Format one explained variance for the summary (``None``: not released)."""
    return "not released" if value is None else f"{value:.6g}"
