"""Command-line runners of the differentially private protocols (``mpc-pca run --protocol NAME``).

Names: ``ag``, ``sn`` (retracted, not DP), ``ppm``, ``ppca``, ``pooled``,
``local``, ``dispca``, ``dispca-full``, ``capepca``. Options added to
``run``: ``--epsilon``, ``--delta``, ``--intermediate-dim``, ``--neighbour``,
``--row-norm``, ``--cape-calibration``. The JSON result has the keys of
``pppca-ss`` (``components``, ``explained_variance``, ``mean``, ``report``) plus
``epsilon``, ``delta``, ``neighbour``, ``row_norm`` and
``captured_energy_ratio``: ``q(V) / q_o`` on the pooled rows, computed by this
simulation harness (which holds every part), not by any party. ``capepca``
adds ``calibration`` and ``effective_epsilon`` (the guarantee against the
aggregator's joint view; see :mod:`mpc_pca.dp.cape`).

``--seed`` seeds every party's DP noise: for reproducible experiments only; a
run with a known seed is not private. Leave it unset for a private run.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from mpc_pca.dp.metrics import captured_energy_ratio, second_moment
from mpc_pca.dp.preprocessing import bound_rows, center_and_scale_non_private

ROW_NORM_CHOICES = ("clip", "error", "scale")


def add_dp_arguments(run: argparse.ArgumentParser) -> None:
    """Add the differential-privacy options to the ``run`` sub-command."""
    dp = run.add_argument_group("differential privacy (ag, sn, ppm, ppca, local, dispca, capepca, dpdpca)")
    dp.add_argument(
        "--epsilon", type=float, default=None, help="privacy parameter epsilon > 0 (default 1; inf = no noise)"
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


def second_moment_energy_ratio(model: Any, parts: list[np.ndarray]) -> float:
    """q/q_o of the fitted components on the pooled second-moment matrix of the bounded rows."""
    return captured_energy_ratio(second_moment(bound_rows(parts, "clip")), model.components_)


def centred_energy_ratio(model: Any, parts: list[np.ndarray]) -> float:
    """q/q_o on the pooled covariance, for protocols that release the centred scatter's subspace."""
    rows = np.vstack(bound_rows(parts, "clip"))
    centred = rows - rows.mean(axis=0)
    return captured_energy_ratio(centred.T @ centred / rows.shape[0], model.components_)


def _result(
    model: Any,
    args: argparse.Namespace,
    parts: list[np.ndarray],
    energy: Callable[[Any, list[np.ndarray]], float] = second_moment_energy_ratio,
    **extra: Any,
) -> dict[str, Any]:
    variance = [None if math.isnan(v) else float(v) for v in model.explained_variance_]
    out: dict[str, Any] = {
        "components": model.components_.tolist(),
        "explained_variance": variance,
        "mean": model.mean_.tolist(),
        "n_samples": int(model.n_samples_),
        "report": model.report_,
        "epsilon": float(args.epsilon),
        "delta": float(args.delta),
        "neighbour": args.neighbour,
        "row_norm": args.row_norm,
        "captured_energy_ratio": energy(model, parts),
    }
    out.update(extra)
    return out


def _runner(
    build: Callable[[argparse.Namespace, str], Any],
    energy: Callable[[Any, list[np.ndarray]], float] = second_moment_energy_ratio,
    **extra: Any,
) -> Callable[..., dict[str, Any]]:
    def run(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
        prepared, mode = _prepared(args, parts)
        model = build(args, mode)
        model.fit(prepared)
        extras = {key: (value(model) if callable(value) else value) for key, value in extra.items()}
        return _result(model, args, prepared, energy, **extras)

    return run


def _common(args: argparse.Namespace, mode: str) -> dict[str, Any]:
    return {
        "n_components": args.n_components,
        "row_norm": mode,
        "random_state": args.seed,
        "timeout": getattr(args, "timeout", 120.0),
    }


def _privacy(args: argparse.Namespace) -> dict[str, Any]:
    return {"epsilon": args.epsilon, "delta": args.delta, "neighbour": args.neighbour}


def dp_protocol_specs(spec_type: Callable[..., Any]) -> list[Any]:
    """The DP protocols as ``spec_type(name, summary, runner[, options])`` entries for ``protocol_table()``.

    ``options`` names the protocol-specific ``run`` options a protocol uses
    (only ``dpdpca`` takes one, ``--key-bits``); the others reject them.
    """
    from mpc_pca.dp.baselines import (
        AnalyzeGaussPCA,
        ExponentialMechanismPCA,
        LocalPCA,
        PooledPCA,
        PrivatePowerMethodPCA,
        RetractedSNPCA,
    )
    from mpc_pca.dp.cape import CapePCA
    from mpc_pca.dp.dispca import DPdisPCA
    from mpc_pca.dp.dpdpca import DPDPCA

    def sn(args: argparse.Namespace, mode: str) -> Any:
        return RetractedSNPCA(epsilon=args.epsilon, neighbour=args.neighbour, **_common(args, mode))

    def pooled(args: argparse.Namespace, mode: str) -> Any:
        common = _common(args, mode)
        return PooledPCA(common["n_components"], row_norm=mode, timeout=common["timeout"])

    def dpdpca(args: argparse.Namespace, mode: str) -> Any:
        key_bits = 2048 if getattr(args, "key_bits", None) is None else args.key_bits
        return DPDPCA(key_bits=key_bits, **_privacy(args), **_common(args, mode))

    def dispca(full: bool) -> Callable[[argparse.Namespace, str], Any]:
        return lambda args, mode: DPdisPCA(
            intermediate_dim=args.intermediate_dim, full=full, **_privacy(args), **_common(args, mode)
        )

    return [
        spec_type(
            "ag",
            "Analyze Gauss on the pooled data, trusted curator (Dwork et al. 2014)",
            _runner(lambda a, m: AnalyzeGaussPCA(**_privacy(a), **_common(a, m))),
        ),
        spec_type(
            "sn",
            "SN Wishart noise (Imtiaz & Sarwate 2016): RETRACTED, NOT DP, comparison only",
            _runner(sn, privacy_warning="retracted mechanism: not differentially private"),
        ),
        spec_type(
            "ppm",
            "private power method, trusted curator (Hardt & Price 2014)",
            _runner(
                lambda a, m: PrivatePowerMethodPCA(**_privacy(a), **_common(a, m)), n_iter=lambda e: e.n_iter_
            ),
        ),
        spec_type(
            "ppca",
            "exponential mechanism by Gibbs sampling, trusted curator (Chaudhuri et al. 2013)",
            _runner(lambda a, m: ExponentialMechanismPCA(epsilon=a.epsilon, **_common(a, m))),
        ),
        spec_type("pooled", "non-private PCA of the pooled second-moment matrix", _runner(pooled)),
        spec_type(
            "local",
            "Analyze Gauss on the first party's rows only (ICASSP 2018 q_local)",
            _runner(lambda a, m: LocalPCA(**_privacy(a), **_common(a, m))),
        ),
        spec_type(
            "dispca",
            "DPdisPCA (Imtiaz & Sarwate ICASSP 2018, Alg. 1): sites send P_s = U_R S_R^1/2",
            _runner(dispca(False), intermediate_dim=lambda e: e.intermediate_dim_),
        ),
        spec_type(
            "dispca-full",
            "DPdisPCA sending the full noisy A_s (ICASSP 2018 q_full)",
            _runner(dispca(True)),
        ),
        spec_type(
            "dpdpca",
            "DPDPCA with Paillier and a proxy (Wang & Chang 2018, Alg. 1-2); centred scatter",
            _runner(dpdpca, centred_energy_ratio, noise_sigma=lambda e: e.noise_sigma_),
            frozenset({"key_bits"}),
        ),
        spec_type(
            "capepca",
            "capePCA with CAPE correlated noise (Imtiaz & Sarwate JSTSP 2018, Alg. 1)",
            _runner(
                lambda a, m: CapePCA(
                    calibration=getattr(a, "cape_calibration", "joint"), **_privacy(a), **_common(a, m)
                ),
                weights=lambda e: e.weights_.tolist(),
                calibration=lambda e: e.calibration,
                effective_epsilon=lambda e: e.effective_epsilon_,
                noise_scale=lambda e: e.noise_scale_,
            ),
        ),
    ]


def summarize_variance(value: Any) -> str:
    """Format one explained variance for the summary (``None``: not released)."""
    return "not released" if value is None else f"{value:.6g}"
