"""``mpc-pca run``'s runners of the PPPCA family, and of every deployable protocol as processes.

The registry (:mod:`mpc_pca.registry`) names each protocol's in-process
runner ``runner(args, parts) -> dict``; the DP protocols' runners are in
:mod:`mpc_pca.cli.dp`. :func:`run_processes` runs any deployable protocol with
every party its own process (``--transport processes``) through the deploy
floor, from the same parsed arguments.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from mpc_pca.registry import IN_PROCESS_ONLY, entry
from mpc_pca.validation import warn_privacy_leaks
from protocols.errors import InputValidationError


def run_pppca(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """``run --protocol pppca-ss|pppca-he`` in-process: fit :class:`~mpc_pca.pppca.PPPCA`."""
    from mpc_pca.cli.options import paillier_backend_options
    from mpc_pca.pppca import PPPCA
    from mpc_pca.pppca.components import components_settings
    from protocols.backends import make_backend

    backend_name = args.backend
    backend = make_backend(
        backend_name,
        frac_bits=args.frac_bits,
        key_bits=getattr(args, "key_bits", None),
        **paillier_backend_options(args, backend_name),
    )
    reveal = args.reveal or "covariance"
    secure = {
        name: getattr(args, name)
        for name in ("eigengap", "min_ratio")
        if getattr(args, name, None) is not None
    }
    components_settings(secure, reveal)  # the deployments' check: same rule, same limits
    model = PPPCA(
        args.n_components,
        backend=backend,
        timeout=args.timeout,
        reveal=reveal,
        standardize=args.standardize,
        dropout_threshold=getattr(args, "dropout_threshold", None),
        **secure,
    )
    projection = model.fit_transform(parts)
    return {
        "backend": backend_name,
        "standardize": bool(args.standardize),
        **model.model_.result_fields(),
        "report": model.report_,
        "_projection": projection,
    }


def run_pppca_dp(args: argparse.Namespace, parts: list[np.ndarray]) -> dict[str, Any]:
    """``run --protocol pppca-dp`` in-process: fit :class:`~mpc_pca.pppca.dp_estimator.PPPCADP`."""
    from mpc_pca.pppca.dp_estimator import DEFAULT_FRAC_BITS, PPPCADP
    from protocols.backends import make_backend
    from protocols.dp.calibration import check_delta_value, check_epsilon_value

    check_epsilon_value(args.epsilon)
    check_delta_value(args.delta)
    backend_name = args.backend
    frac_bits = DEFAULT_FRAC_BITS if args.frac_bits is None else args.frac_bits
    backend = make_backend(backend_name, frac_bits=frac_bits, key_bits=getattr(args, "key_bits", None))
    model = PPPCADP(
        args.n_components,
        epsilon=args.epsilon,
        delta=args.delta,
        min_honest=getattr(args, "min_honest", None),
        noise_calibration=getattr(args, "noise_calibration", "analytic"),
        backend=backend,
        timeout=args.timeout,
        random_state=getattr(args, "noise_seed", None),
    )
    model.fit(parts)
    return {
        "backend": backend_name,
        "components": model.components_.tolist(),
        "explained_variance": model.explained_variance_.tolist(),
        "explained_variance_ratio": model.explained_variance_ratio_.tolist(),
        "mean": model.mean_.tolist(),
        "n_samples": int(model.n_samples_),
        "epsilon": float(args.epsilon),
        "delta": float(args.delta),
        "min_honest": model.plan_.min_honest,
        "noise_std": model.noise_std_,
        "epsilon_by_colluders": model.epsilon_by_colluders_,
        "report": model.report_,
    }


def settings_of(args: argparse.Namespace) -> dict[str, Any]:
    """The protocol's deploy settings from the parsed ``run``/``party`` arguments (registry defaults filled)."""
    protocol = entry(args.protocol)
    given = {"n_components": args.n_components}
    for option in protocol.options:
        if option not in IN_PROCESS_ONLY:
            given[option] = getattr(args, option, None)
    return protocol.settings(given)


def run_processes(
    args: argparse.Namespace, parts: list[np.ndarray], names: tuple[str, ...]
) -> dict[str, Any]:
    """``run --transport processes``: every party its own process on this host (:func:`mpc_pca.deploy.launch_local`)."""
    from mpc_pca.deploy import launch_local

    protocol = entry(args.protocol)
    if not protocol.deployable:
        from mpc_pca.registry import deployable_names

        raise InputValidationError(
            f"protocol {args.protocol!r} does not run with --transport processes yet; "
            f"choose one of {deployable_names()} or --transport inprocess"
        )
    result = launch_local(
        args.protocol,
        parts,
        settings_of(args),
        noise_seed=args.noise_seed,
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        insecure=args.insecure,
        verbosity=args.verbose - args.quiet,
        feature_names=names,
    )
    if "epsilon" in protocol.options:  # the parties warn in their own processes: say it here too
        warn_privacy_leaks(
            epsilon=args.epsilon,
            delta=args.delta if "delta" in protocol.options else None,
            n_samples=sum(part.shape[0] for part in parts),
            random_state=args.noise_seed,
        )
    if "captured_energy_ratio" in protocol.result_fields:
        # Computed by this harness, which holds every part, exactly as the in-process run does;
        # no party of the run could compute it.
        from mpc_pca.cli.dp import energy_ratio_of

        result["captured_energy_ratio"] = energy_ratio_of(
            args.protocol, np.asarray(result["components"]), parts
        )
    return result
