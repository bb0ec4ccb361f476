"""Command-line runners of the differentially private protocols (``mpc-pca run --protocol NAME``).

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
import math
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import numpy as np

from mpc_pca.dp.metrics import captured_energy_ratio, second_moment
from mpc_pca.dp.preprocessing import center_and_scale_non_private
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


def _prepared(args: argparse.Namespace, parts: list[np.ndarray]) -> tuple[list[np.ndarray], str]:
    """Apply ``--row-norm``; ``scale`` is done here on the pooled rows (the papers' non-private step)."""
    mode = getattr(args, "row_norm", "clip")
    if mode == "scale":
        sizes = np.cumsum([p.shape[0] for p in parts])[:-1]
        scaled = center_and_scale_non_private(np.vstack(parts))
        return [np.ascontiguousarray(p) for p in np.split(scaled, sizes)], "error"
    return parts, mode


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


def _result(
    model: Any,
    args: argparse.Namespace,
    parts: list[np.ndarray],
    energy: Callable[[Any, list[np.ndarray]], float] = second_moment_energy_ratio,
    private: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    """The JSON of a DP subspace protocol; a non-private one (pooled) has no epsilon, delta or neighbour."""
    variance = [None if math.isnan(v) else float(v) for v in model.explained_variance_]
    out: dict[str, Any] = {
        "components": model.components_.tolist(),
        "explained_variance": variance,
        "mean": model.mean_.tolist(),
        "n_samples": int(model.n_samples_),
        "report": model.report_,
        "epsilon": float(args.epsilon) if private else None,
        "delta": float(args.delta) if private else None,
        "neighbour": args.neighbour if private else None,
        "row_norm": args.row_norm,
        "captured_energy_ratio": energy(model, parts),
    }
    out.update(extra)
    return out


def _runner(
    build: Callable[[argparse.Namespace, str], Any],
    energy: Callable[[Any, list[np.ndarray]], float] = second_moment_energy_ratio,
    private: bool = True,
    **extra: Any,
) -> Callable[..., dict[str, Any]]:
    def run(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
        # Every protocol records epsilon and delta in its JSON, so every protocol checks both
        # (sn and ppca do not use delta, but an invalid one must not be written as if meaningful).
        from mpc_pca.dp.mechanisms import check_delta, check_epsilon  # SciPy: imported when used

        check_epsilon(args.epsilon)
        check_delta(args.delta)
        prepared, mode = _prepared(args, parts)
        model = build(args, mode)
        model.fit(prepared)
        extras = {key: (value(model) if callable(value) else value) for key, value in extra.items()}
        return _result(model, args, prepared, energy, private, **extras)

    return run


def _common(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    return {
        "n_components": args.n_components,
        "row_norm": mode,
        "random_state": args.noise_seed,
        "timeout": getattr(args, "timeout", 120.0),
    }


def _privacy(args: argparse.Namespace) -> dict[str, Any]:
    return {"epsilon": args.epsilon, "delta": args.delta, "neighbour": args.neighbour}


def run_capeagn_cli(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """``run --protocol capeagn``: fit :class:`~mpc_pca.dp.capeagn_estimator.CapeAGN` and report its JSON fields."""
    from mpc_pca.dp.capeagn_estimator import CapeAGN
    from protocols.errors import InputValidationError

    if args.row_norm == "scale":
        raise InputValidationError("--row-norm scale does not apply to capeagn; use clip or error")
    model_name = args.model or "stm"
    split = 0.5 if args.budget_split is None else args.budget_split
    model = CapeAGN(
        args.n_components,
        model=model_name,
        sigma=args.sigma,
        budget_split=split,
        calibration=getattr(args, "cape_calibration", "joint"),
        **_gaussian(args),
        row_norm=args.row_norm,
        random_state=args.noise_seed,
        timeout=getattr(args, "timeout", 120.0),
    ).fit(parts)
    return {
        "components": model.components_.tolist(),
        "weights": model.weights_.tolist(),
        "whitening": model.whitening_.tolist(),
        "tensor_eigenvalues": model.tensor_eigenvalues_.tolist(),
        "n_samples": model.n_samples_,
        "report": model.report_,
        "epsilon": float(args.epsilon),
        "delta": float(args.delta),
        "neighbour": args.neighbour,
        "row_norm": args.row_norm,
        "model": model_name,
        "sigma": args.sigma,
        "budget_split": split,
        "calibration": model.calibration,
        "noise_calibration": model.noise_calibration,
        "effective_epsilon": model.effective_epsilon_,
        "m2_noise_scale": model.m2_noise_scale_,
        "m3_noise_scale": model.m3_noise_scale_,
    }


def _gaussian(args: argparse.Namespace) -> dict[str, Any]:
    """``_privacy`` plus the Gaussian calibration, for the Analyze-Gauss-based protocols."""
    return {**_privacy(args), "noise_calibration": getattr(args, "noise_calibration", "analytic")}


# The in-process runners the registry (mpc_pca.registry) names, ``run_<name>(args, parts)``.
# ``dp.X`` is looked up when a protocol runs: the package's lazy exports
# (mpc_pca.lazy) import the estimator, and scikit-learn with it, only then.


def _dp() -> Any:
    from mpc_pca import dp

    return dp


def run_ag(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """Analyze Gauss on the pooled data (trusted curator)."""
    return _runner(lambda a, m: _dp().AnalyzeGaussPCA(**_gaussian(a), **_common(a, m)))(args, parts)


def run_sn(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """SN Wishart noise: retracted, not DP (comparison only)."""
    return _runner(
        lambda a, m: _dp().RetractedSNPCA(epsilon=a.epsilon, neighbour=a.neighbour, **_common(a, m)),
        privacy_warning="retracted mechanism: not differentially private",
    )(args, parts)


def run_ppm(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """Private power method (trusted curator)."""
    return _runner(
        lambda a, m: _dp().PrivatePowerMethodPCA(**_privacy(a), **_common(a, m)), n_iter=lambda e: e.n_iter_
    )(args, parts)


def run_ppca(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """Exponential mechanism by Gibbs sampling (trusted curator)."""
    return _runner(lambda a, m: _dp().ExponentialMechanismPCA(epsilon=a.epsilon, **_common(a, m)))(
        args, parts
    )


def run_pooled(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """Non-private PCA of the pooled second-moment matrix."""

    def build(a: argparse.Namespace, mode: str) -> Any:
        common = _common(a, mode)
        return _dp().PooledPCA(common["n_components"], row_norm=mode, timeout=common["timeout"])

    return _runner(build, private=False)(args, parts)


def run_local(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """Analyze Gauss on the first party's rows only."""
    return _runner(lambda a, m: _dp().LocalPCA(**_gaussian(a), **_common(a, m)))(args, parts)


def _dispca(full: bool) -> Callable[[argparse.Namespace, str], Any]:
    return lambda a, m: _dp().DPdisPCA(
        intermediate_dim=a.intermediate_dim, full=full, **_gaussian(a), **_common(a, m)
    )


def run_dispca(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """DPdisPCA: sites send P_s = U_R S_R^1/2."""
    return _runner(_dispca(False), intermediate_dim=lambda e: e.intermediate_dim_)(args, parts)


def run_dispca_full(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """DPdisPCA sending the full noisy A_s."""
    return _runner(_dispca(True))(args, parts)


def run_dpdpca(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """DPDPCA with Paillier and a proxy."""

    def build(a: argparse.Namespace, mode: str) -> Any:
        key_bits = 2048 if getattr(a, "key_bits", None) is None else a.key_bits
        return _dp().DPDPCA(key_bits=key_bits, **_gaussian(a), **_common(a, mode))

    return _runner(
        build,
        energy_ratio_for("dpdpca"),
        noise_sigma=lambda e: e.noise_sigma_,
        effective_epsilon=lambda e: e.effective_epsilon_,
    )(args, parts)


def run_capepca(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """capePCA with CAPE correlated noise."""
    return _runner(
        lambda a, m: _dp().CapePCA(
            calibration=getattr(a, "cape_calibration", "joint"), **_gaussian(a), **_common(a, m)
        ),
        weights=lambda e: e.weights_.tolist(),
        calibration=lambda e: e.calibration,
        effective_epsilon=lambda e: e.effective_epsilon_,
        noise_scale=lambda e: e.noise_scale_,
    )(args, parts)


def summarize_variance(value: Any) -> str:
    """Format one explained variance for the summary (``None``: not released)."""
    return "not released" if value is None else f"{value:.6g}"
