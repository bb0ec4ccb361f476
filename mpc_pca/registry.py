"""One entry per protocol: what the command line, the studies and the deploy floor know of it.

Each :class:`ProtocolEntry` names a protocol, summarises it, and points by
dotted path (``"module:attribute"``, imported only when used, so that a
``pppca-ss`` party never imports scikit-learn) to

* its estimator class,
* its :class:`~mpc_pca.deployment.Deployment` (the roles, settings and
  results the deploy floor runs between organisations), and
* the in-process runner of ``mpc-pca run`` (``runner(args, parts) -> dict``).

It also lists the protocol-specific options it uses with their defaults (any
other option given is refused), and the fields of its JSON result. A protocol
is deployable (runs as processes and with ``mpc-pca party``) when its
deployment's module can be found: the check is made when asked, never by a
flag, so a protocol becomes deployable as soon as its deployment module
exists.

Adding a protocol is one entry here, its role functions, and its Deployment.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from protocols.errors import InputValidationError

if TYPE_CHECKING:
    from mpc_pca.deployment import Deployment

#: The command-line flag of every protocol-specific option.
FLAGS: Mapping[str, str] = MappingProxyType(
    {
        "backend": "--backend",
        "frac_bits": "--frac-bits",
        "key_bits": "--key-bits",
        "paillier_randomness": "--paillier-randomness",
        "paillier_workers": "--paillier-workers",
        "standardize": "--standardize",
        "transform_output": "--transform-output",
        "epsilon": "--epsilon",
        "delta": "--delta",
        "intermediate_dim": "--intermediate-dim",
        "neighbour": "--neighbour",
        "cape_calibration": "--cape-calibration",
        "row_norm": "--row-norm",
        "noise_calibration": "--noise-calibration",
        "min_honest": "--min-honest",
        "model": "--model",
        "sigma": "--sigma",
        "budget_split": "--budget-split",
        "reveal": "--reveal",
        "eigengap": "--eigengap",
        "min_ratio": "--min-ratio",
        "dropout_threshold": "--dropout-threshold",
    }
)
#: Options of the in-process command line only: never part of a deployment's settings.
IN_PROCESS_ONLY = frozenset({"transform_output"})
#: Privacy options every DP result records; protocols that do not use one record its default.
PRIVACY_DEFAULTS: Mapping[str, Any] = MappingProxyType(
    {
        "epsilon": 1.0,
        "delta": 1e-5,
        "neighbour": "replace-one",
        "cape_calibration": "joint",
        "row_norm": "clip",
        "intermediate_dim": None,
        "noise_calibration": "analytic",
    }
)
_GAUSS = {k: PRIVACY_DEFAULTS[k] for k in ("epsilon", "delta", "neighbour", "row_norm", "noise_calibration")}
_PPPCA = {
    "frac_bits": None,
    "key_bits": None,
    "paillier_randomness": None,
    "paillier_workers": None,
    "standardize": False,
    "transform_output": None,
    "reveal": "covariance",
    "eigengap": None,
    "min_ratio": None,
}
_MODEL = ("components", "explained_variance", "mean", "n_samples", "report")
_DP = (*_MODEL, "epsilon", "delta", "neighbour", "row_norm", "captured_energy_ratio")


def _split(path: str) -> tuple[str, str]:
    module, _, attribute = path.partition(":")
    if not module or not attribute:
        raise InputValidationError(f"{path!r} is not a 'module:attribute' path")
    return module, attribute


def load(path: str) -> Any:
    """The object at ``"module:attribute"`` (imports the module)."""
    module, attribute = _split(path)
    return getattr(importlib.import_module(module), attribute)


@dataclass(frozen=True)
class ProtocolEntry:
    """What the package knows of one protocol.

    Attributes
    ----------
    name : str
        Registry and command-line name, e.g. ``"capepca"``.
    summary : str
        One line for ``--help`` and reports.
    runner : str
        ``"module:function"`` of the in-process ``mpc-pca run`` runner,
        ``runner(args, parts) -> dict``.
    estimator : str or None
        ``"module:Class"`` of the estimator.
    deployment : str or None
        ``"module:Class"`` of its :class:`~mpc_pca.deployment.Deployment`,
        constructed as ``Class(name)``; ``None``: in-process only.
    options : mapping of str to object
        The protocol-specific options it uses (keys of :data:`FLAGS`) and their defaults.
    result_fields : tuple of str
        Fields of its JSON result (beyond the ones every run writes).
    fixed : mapping of str to object
        Options whose value is part of the protocol (e.g. ``pppca-he``'s
        ``backend="paillier"``): any other value is refused.
    """

    name: str
    summary: str
    runner: str
    estimator: str | None = None
    deployment: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    result_fields: tuple[str, ...] = _MODEL
    fixed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def deployable(self) -> bool:
        """Whether it runs as processes and with ``mpc-pca party`` (its deployment module exists)."""
        if self.deployment is None:
            return False
        module = _split(self.deployment)[0]
        try:
            return importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a missing parent package
            return False

    def make_deployment(self) -> Deployment:
        """A fresh :class:`~mpc_pca.deployment.Deployment` of this protocol.

        Raises
        ------
        InputValidationError
            If the protocol cannot run between organisations (yet).
        """
        if not self.deployable or self.deployment is None:
            raise InputValidationError(
                f"protocol {self.name!r} cannot run as separate parties yet; choose one of {deployable_names()}"
            )
        return load(self.deployment)(self.name)

    def estimator_class(self) -> Any:
        """The estimator class (imported now)."""
        if self.estimator is None:
            raise InputValidationError(f"protocol {self.name!r} has no estimator")
        return load(self.estimator)

    def run_in_process(self, args: Any, parts: list[Any]) -> dict[str, Any]:
        """Run ``mpc-pca run``'s in-process runner of this protocol."""
        return load(self.runner)(args, parts)

    def settings(self, given: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The deploy settings: ``n_components`` and every option it uses, defaults filled in.

        Raises
        ------
        InputValidationError
            For a setting the protocol does not use, naming it and the ones it does.
        """
        known = {"n_components": 2, **{k: v for k, v in self.options.items() if k not in IN_PROCESS_ONLY}}
        given = dict(given or {})
        unknown = sorted(set(given) - set(known))
        if unknown:
            raise InputValidationError(
                f"protocol {self.name!r} takes no setting {unknown}; its settings are {sorted(known)}"
            )
        return {key: given[key] if given.get(key) is not None else default for key, default in known.items()}


def _pppca(
    name: str, summary: str, backend: str, fixed: Mapping[str, Any], extra: Mapping[str, Any] | None = None
) -> ProtocolEntry:
    return ProtocolEntry(
        name,
        summary,
        runner="mpc_pca.cli.runners:run_pppca",
        estimator="mpc_pca.pppca.estimator:PPPCA",
        deployment="mpc_pca.pppca.deployment:PPPCADeployment",
        options={"backend": backend, **_PPPCA, **(extra or {})},
        result_fields=("backend", "standardize", *_MODEL, "explained_variance_ratio"),
        fixed=fixed,
    )


def _dp(
    name: str,
    summary: str,
    estimator: str,
    deployment: str | None,
    options: Mapping[str, Any],
    extra: tuple[str, ...] = (),
) -> ProtocolEntry:
    return ProtocolEntry(
        name,
        summary,
        runner=f"mpc_pca.cli.dp:run_{name.replace('-', '_')}",
        estimator=f"mpc_pca.dp:{estimator}",
        deployment=deployment,
        options=dict(options),
        result_fields=(*_DP, *extra),
    )


def entries() -> dict[str, ProtocolEntry]:
    """Every protocol, by name (built on each call: no state at import time)."""
    cape = "mpc_pca.dp.cape_deploy:CapeDeployment"
    dispca = "mpc_pca.dp.dispca_deploy:DisPCADeployment"
    curator = "mpc_pca.dp.curator_deploy:CuratorDeployment"
    table = [
        _pppca(
            "pppca-ss",
            "PPPCA with secret sharing (Liu et al. 2020, Alg. 2)",
            "additive",
            {},
            {"dropout_threshold": None},
        ),
        _pppca(
            "pppca-he",
            "PPPCA with Paillier homomorphic encryption (Liu et al. 2020, Alg. 1)",
            "paillier",
            {"backend": "paillier"},
        ),
        ProtocolEntry(
            "pppca-dp",
            "PPPCA with discrete-Gaussian DP noise added by the providers inside the secure sum",
            runner="mpc_pca.cli.runners:run_pppca_dp",
            estimator="mpc_pca.pppca.dp_estimator:PPPCADP",
            deployment="mpc_pca.pppca.dp_deploy:PPPCADPDeployment",
            options={
                "backend": "additive",
                "frac_bits": None,
                "key_bits": None,
                "epsilon": 1.0,
                "delta": 1e-5,
                "noise_calibration": "analytic",
                "min_honest": None,
            },
            result_fields=(
                *_MODEL,
                "backend",
                "explained_variance_ratio",
                "epsilon",
                "delta",
                "min_honest",
                "noise_std",
                "epsilon_by_colluders",
            ),
        ),
        _dp(
            "ag",
            "Analyze Gauss on the pooled data, trusted curator (Dwork et al. 2014)",
            "AnalyzeGaussPCA",
            curator,
            _GAUSS,
        ),
        _dp(
            "sn",
            "SN Wishart noise (Imtiaz & Sarwate 2016): RETRACTED, NOT DP, comparison only",
            "RetractedSNPCA",
            None,
            {k: _GAUSS[k] for k in ("epsilon", "neighbour", "row_norm")},
            ("privacy_warning",),
        ),
        _dp(
            "ppm",
            "private power method, trusted curator (Hardt & Price 2014)",
            "PrivatePowerMethodPCA",
            None,
            {k: v for k, v in _GAUSS.items() if k != "noise_calibration"},
            ("n_iter",),
        ),
        _dp(
            "ppca",
            "exponential mechanism by Gibbs sampling, trusted curator (Chaudhuri et al. 2013)",
            "ExponentialMechanismPCA",
            None,
            {k: _GAUSS[k] for k in ("epsilon", "row_norm")},
        ),
        _dp(
            "pooled",
            "non-private PCA of the pooled second-moment matrix",
            "PooledPCA",
            curator,
            {"row_norm": "clip"},
        ),
        _dp(
            "local",
            "Analyze Gauss on the first party's rows only (ICASSP 2018 q_local)",
            "LocalPCA",
            None,
            _GAUSS,
        ),
        _dp(
            "dispca",
            "DPdisPCA (Imtiaz & Sarwate ICASSP 2018, Alg. 1): sites send P_s = U_R S_R^1/2",
            "DPdisPCA",
            dispca,
            {**_GAUSS, "intermediate_dim": None},
            ("intermediate_dim",),
        ),
        _dp(
            "dispca-full",
            "DPdisPCA sending the full noisy A_s (ICASSP 2018 q_full)",
            "DPdisPCA",
            dispca,
            _GAUSS,
        ),
        _dp(
            "dpdpca",
            "DPDPCA with Paillier and a proxy (Wang & Chang 2018, Alg. 1-2); centred scatter",
            "DPDPCA",
            "mpc_pca.dp.dpdpca_deploy:DPDPCADeployment",
            {**_GAUSS, "key_bits": 2048},
            ("noise_sigma", "effective_epsilon"),
        ),
        _dp(
            "capepca",
            "capePCA with CAPE correlated noise (Imtiaz & Sarwate JSTSP 2018, Alg. 1)",
            "CapePCA",
            cape,
            {**_GAUSS, "cape_calibration": "joint"},
            ("weights", "calibration", "effective_epsilon", "noise_scale"),
        ),
        ProtocolEntry(
            "capeagn",
            "capeAGN: DP topic model / Gaussian mixture by tensor decomposition with CAPE (JSTSP 2018, sec. 5)",
            runner="mpc_pca.cli.dp:run_capeagn_cli",
            estimator="mpc_pca.dp:CapeAGN",
            deployment="mpc_pca.dp.capeagn_deploy:CapeAGNDeployment",
            options={
                **_GAUSS,
                "cape_calibration": "joint",
                "model": "stm",
                "sigma": None,
                "budget_split": 0.5,
            },
            result_fields=(
                "components",
                "weights",
                "whitening",
                "tensor_eigenvalues",
                "n_samples",
                "report",
                "epsilon",
                "delta",
                "neighbour",
                "row_norm",
                "model",
                "sigma",
                "budget_split",
                "calibration",
                "noise_calibration",
                "effective_epsilon",
                "m2_noise_scale",
                "m3_noise_scale",
            ),
        ),
    ]
    return {entry.name: entry for entry in table}


def names() -> list[str]:
    """Every protocol's name, in registry order."""
    return list(entries())


def deployable_names() -> list[str]:
    """The protocols that run as processes and with ``mpc-pca party`` now."""
    return [name for name, entry in entries().items() if entry.deployable]


def entry(name: str) -> ProtocolEntry:
    """The entry of protocol ``name``, matched without regard to case (``PPPCA-SS`` is ``pppca-ss``).

    This is the one place a protocol name given by a user is resolved: callers
    use the returned entry's :attr:`~ProtocolEntry.name` (the registry's
    spelling) from then on.

    Parameters
    ----------
    name : str
        The name as given, e.g. on the command line.

    Returns
    -------
    ProtocolEntry
        The protocol's entry.

    Raises
    ------
    InputValidationError
        For an unknown name: names it, suggests the closest known name when
        one is close ("did you mean"), and lists the known ones.
    """
    table = entries()
    key = str(name).strip().lower()
    if key in table:
        return table[key]
    close = difflib.get_close_matches(key, list(table), n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ";"
    raise InputValidationError(f"unknown protocol {name!r}{hint} choose one of {list(table)}")


def deployment(name: str) -> Deployment:
    """A :class:`~mpc_pca.deployment.Deployment` of protocol ``name`` (see :meth:`ProtocolEntry.make_deployment`)."""
    return entry(name).make_deployment()


__all__ = [
    "FLAGS",
    "IN_PROCESS_ONLY",
    "PRIVACY_DEFAULTS",
    "ProtocolEntry",
    "deployable_names",
    "deployment",
    "entries",
    "entry",
    "load",
    "names",
]
