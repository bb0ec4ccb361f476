"""``mpc-pca run``'s runners: every protocol object as threads of this process, or as local processes.

:func:`run_inprocess` runs the protocol object of :mod:`mpc_pca.registry`
with :func:`mpc_pca.threads.run_protocol` (the runner behind the estimators),
:func:`run_processes` runs the same object with every party its own process on
this host (:func:`mpc_pca.deploy.launch_local`). Both add what only this
simulation harness, which holds every part, can compute (:func:`harness_fields`).
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from mpc_pca.deployment import Deployment
from mpc_pca.registry import entry
from mpc_pca.validation import warn_privacy_leaks
from protocols.errors import InputValidationError


def run_inprocess(
    args: argparse.Namespace, parts: list[np.ndarray], names: tuple[str, ...] | None
) -> dict[str, Any]:
    """``run --transport inprocess``: every party a thread (:func:`mpc_pca.threads.run_protocol`).

    The consumer's projected rows, if the protocol has one, are returned under
    the private key ``_projection``.
    """
    from mpc_pca.threads import run_protocol

    protocol = entry(args.protocol)
    prepared, settings = harness_rows(args, parts, protocol)
    run = run_protocol(
        protocol, prepared, settings, random_state=args.noise_seed, timeout=args.timeout, feature_names=names
    )
    result = run.result(names)
    projection = protocol.projection(run.layout, run.run.outputs)
    if projection is not None:
        result["_projection"] = projection
    return harness_fields(args, protocol, result, prepared)


def harness_rows(
    args: argparse.Namespace, parts: list[np.ndarray], protocol: Deployment
) -> tuple[list[np.ndarray], dict[str, Any]]:
    """The parts and settings of an in-process run: ``--row-norm scale`` is applied here, to the pooled rows.

    Scaling by the pooled maximum row norm is the papers' non-private step, which
    no party of a deployed run could take; the protocol then checks the norms (``error``).
    """
    settings = settings_of(args, protocol)
    if settings.get("row_norm") != "scale":
        return parts, settings
    if not protocol.accepts_pooled_scaling:
        raise InputValidationError(f"--row-norm scale does not apply to {args.protocol}; use clip or error")
    from mpc_pca.dp.preprocessing import center_and_scale_non_private

    sizes = np.cumsum([p.shape[0] for p in parts])[:-1]
    scaled = center_and_scale_non_private(np.vstack(parts))
    return [np.ascontiguousarray(p) for p in np.split(scaled, sizes)], {**settings, "row_norm": "error"}


def harness_fields(
    args: argparse.Namespace, protocol: Deployment, result: dict[str, Any], parts: list[np.ndarray]
) -> dict[str, Any]:
    """What only this harness can add: the privacy warnings, the settings as given, ``captured_energy_ratio``."""
    if "epsilon" in protocol.options:
        warn_privacy_leaks(
            epsilon=args.epsilon,
            delta=args.delta if "delta" in protocol.options else None,
            n_samples=sum(part.shape[0] for part in parts),
            random_state=args.noise_seed,
        )
        # a DP result records its privacy settings, those the protocol does not use at their defaults
        given = {"epsilon": float(args.epsilon), "delta": float(args.delta), "neighbour": args.neighbour}
        result.update({key: value for key, value in given.items() if key in result})
    if "row_norm" in result:
        result["row_norm"] = args.row_norm
    if getattr(args, "row_bound", None) is not None:  # each site divided its rows by this public bound
        result["row_bound"] = float(args.row_bound)
    if "captured_energy_ratio" in protocol.result_fields:
        # Computed by this harness, which holds every part; no party of the run could compute it.
        from mpc_pca.cli.dp import energy_ratio_of

        result["captured_energy_ratio"] = energy_ratio_of(
            args.protocol, np.asarray(result["components"]), parts
        )
    return result


def settings_of(args: argparse.Namespace, protocol: Deployment | None = None) -> dict[str, Any]:
    """The protocol's settings from the parsed ``run``/``party`` arguments (its defaults filled in).

    ``protocol`` is the object already resolved from ``args.protocol`` (resolved here when not given).
    """
    protocol = entry(args.protocol) if protocol is None else protocol
    given = {"n_components": args.n_components}
    for option in protocol.options:
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
        settings_of(args, protocol),
        noise_seed=args.noise_seed,
        timeout=args.timeout,
        connect_timeout=args.connect_timeout,
        insecure=args.insecure,
        verbosity=args.verbose - args.quiet,
        feature_names=names,
    )
    return harness_fields(args, protocol, result, parts)
