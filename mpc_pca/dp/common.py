"""Plumbing shared by the differentially private PCA protocols and estimators.

Role names, the pre-flight input checks every DP protocol runs before any
party sends anything, message checks, and the fitted-attribute layout of the
DP estimators.

Centring. The DP systems of Imtiaz & Sarwate (ICASSP 2016/2018, JSTSP 2018)
estimate the subspace of the **second-moment** matrix ``A = X^T X / N`` of
data assumed already mean-centred; they never centre inside the algorithm
(centring from the private data would itself need privacy budget). The
estimators here do the same: ``mean_`` is all zeros and ``transform(X)`` is
``X @ components_.T``. Centre the data beforehand if that is what you want.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from numbers import Integral
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.base import (
    ParamCheck,
    SubspaceMixin,
    instance_of,
    n_components_check,
    one_of,
    validated_by,
)
from mpc_pca.deployment import MODEL_FIELDS
from mpc_pca.deployment_kit import check_components_setting, check_own_rows, refuse_pooled_scaling
from mpc_pca.dp.mechanisms import (
    check_calibration,
    check_delta,
    check_epsilon,
    gaussian_noise_scale,
    parse_neighbour,
    spawn_generators,
)
from mpc_pca.dp.preprocessing import ROW_NORM_MODES, bound_rows
from mpc_pca.linalg import from_upper_triangle
from mpc_pca.roles import AGGREGATOR, CURATOR, NOISE_GENERATOR  # noqa: F401  (re-exported for the DP modules)
from mpc_pca.validation import RowsClippedWarning, check_n_components, check_parts, warn_privacy_leaks
from protocols.dp.accounting import PrivacyAccountant
from protocols.errors import InputValidationError, ProtocolError
from protocols.messages import expect_real_array
from protocols.runtime import RunResult, check_timeout


def check_random_state(random_state: object) -> None:
    """Validate a DP noise seed as :func:`~mpc_pca.dp.mechanisms.spawn_generators` would, without drawing from it."""
    if not isinstance(random_state, (np.random.Generator, np.random.SeedSequence)):
        spawn_generators(random_state, 0)  # type: ignore[arg-type]  # raises naming the value


#: Parameter checks the DP estimators share, declared once (each class's
#: ``_parameter_constraints`` picks its own with :func:`dp_constraints`).
DP_CONSTRAINTS: dict[str, ParamCheck] = {
    "n_components": n_components_check(),
    "epsilon": validated_by(check_epsilon),
    "delta": validated_by(check_delta),
    "neighbour": validated_by(parse_neighbour),
    "noise_calibration": validated_by(check_calibration),
    "row_norm": one_of(*ROW_NORM_MODES),
    "random_state": validated_by(check_random_state),
    "timeout": validated_by(check_timeout),
    "accountant": instance_of(PrivacyAccountant, None),
}


def dp_constraints(*shared: str, **own: ParamCheck) -> dict[str, ParamCheck]:
    """An estimator's ``_parameter_constraints``: the ``shared`` ones of :data:`DP_CONSTRAINTS` plus its ``own``."""
    return {name: DP_CONSTRAINTS[name] for name in shared} | own


def refuse_accountant(reason: str) -> ParamCheck:
    """The ``accountant`` constraint of an estimator that is not DP: only ``None`` is allowed."""

    def check(name: str, value: object) -> None:
        if value is not None:
            raise InputValidationError(
                f"{name}={value!r} is not allowed; it must be None: {reason}, so a privacy accountant "
                "has nothing it could honestly charge"
            )

    return check


def prepare_parts(
    parts: Sequence[ArrayLike], n_components: int | None, row_norm: str, *, min_total_rows: int = 1
) -> tuple[list[NDArray[np.float64]], int]:
    """Validate the parties' rows and apply the row-norm policy, before anything is sent.

    Returns
    -------
    arrays : list of ndarray
        The parts, rows bounded to norm <= 1 (clipped, or checked).
    k : int
        The number of components, ``1 <= k <= d``; ``None`` means ``d``.
    """
    arrays = check_parts(parts, min_total_rows=min_total_rows)
    k = check_n_components(n_components, arrays[0].shape[1])
    return bound_rows(arrays, row_norm), k


def prepare_own_rows(
    party: str, data: NDArray[np.float64] | None, settings: Any, protocol: str, *, clip: bool = True
) -> NDArray[np.float64]:
    """One data holder's rows, checked and bounded by ``settings["row_norm"]``, before anything is sent.

    The deployed counterpart of :func:`prepare_parts` for the one part a party
    holds: finite 2-D rows (:func:`mpc_pca.deployment_kit.check_own_rows`),
    ``row_norm="scale"`` refused (it needs the pooled rows), ``"clip"`` or
    ``"error"`` applied as in the in-process run. Errors name ``party``.
    ``clip=False`` only checks (a deployment's announcement step), so clipping
    is done, and warned about, once, by the role; the warning names the site
    ``provider{i}`` as ``site i``, as an in-process run over every part does.
    """
    arr = check_own_rows(party, data)
    mode = refuse_pooled_scaling(settings, protocol)
    if mode == "clip":
        if not clip:
            return arr
        index = party.removeprefix("provider")
        return bound_rows([arr], mode, first=int(index) if index.isdigit() else 0)[0]
    try:
        return bound_rows([arr], mode)[0]
    except InputValidationError as exc:
        raise InputValidationError(f"{party}: {exc}".replace("part 0", "its data")) from None


#: The settings of the Analyze-Gauss-based protocols and their defaults.
GAUSSIAN_OPTIONS: dict[str, Any] = {
    "epsilon": 1.0,
    "delta": 1e-5,
    "neighbour": "replace-one",
    "row_norm": "clip",
    "noise_calibration": "analytic",
}
#: The fields of a DP subspace protocol's JSON result (``captured_energy_ratio`` is the harness's).
DP_FIELDS = (*MODEL_FIELDS, "epsilon", "delta", "neighbour", "row_norm", "captured_energy_ratio")

#: The Gaussian-protocol settings every party of a deployed DP run announces and all must agree on.
GAUSSIAN_SHARED = (
    "protocol",
    "n_components",
    "epsilon",
    "delta",
    "neighbour",
    "noise_calibration",
    "row_norm",
)


def gaussian_view(protocol: str, settings: Any) -> dict[str, Any]:
    """A deployed party's checked :data:`GAUSSIAN_SHARED` settings, before any peer is involved.

    Raises
    ------
    InputValidationError
        For an invalid ``n_components``, ``epsilon``, ``delta``, neighbour
        relation or noise calibration (``"classical"`` with ``epsilon >= 1``),
        or ``row_norm="scale"``.
    """
    eps, dlt, _ = check_privacy(
        settings.get("epsilon"),
        settings.get("delta"),
        settings.get("neighbour"),
        settings.get("noise_calibration"),
    )
    return {
        "protocol": protocol,
        "n_components": check_components_setting(settings.get("n_components")),
        "epsilon": eps,
        "delta": dlt,
        "neighbour": str(settings.get("neighbour")),
        "noise_calibration": str(settings.get("noise_calibration")),
        "row_norm": refuse_pooled_scaling(settings, protocol),
    }


def preflight_parts(
    parts: Sequence[ArrayLike], n_components: int | None, row_norm: str, *, min_total_rows: int = 1
) -> tuple[list[NDArray[np.float64]], int]:
    """:func:`prepare_parts` without its clipping warning: the estimator's checks before an accountant is charged.

    The protocol driver validates (and warns) again when it runs; this only
    makes sure an accountant is not charged for input the driver would refuse.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RowsClippedWarning)
        return prepare_parts(parts, n_components, row_norm, min_total_rows=min_total_rows)


def check_privacy(
    epsilon: object, delta: object, neighbour: object, noise_calibration: object = "analytic"
) -> tuple[float, float, Any]:
    """Validate ``epsilon > 0`` (``inf`` allowed), ``0 < delta < 1``, the neighbour relation and calibration.

    ``noise_calibration="classical"`` is refused for ``epsilon >= 1``
    (:func:`protocols.dp.calibration.gaussian_sigma`), before any party starts.
    """
    eps, dlt = check_epsilon(epsilon), check_delta(delta)
    gaussian_noise_scale(1.0, eps, dlt, check_calibration(noise_calibration))
    return eps, dlt, parse_neighbour(neighbour)  # type: ignore[arg-type]


def check_intermediate_dim(intermediate_dim: object, k: int, d: int) -> int:
    """Validate ``K <= R <= D``; ``None`` gives ``min(2K, D)`` (ICASSP 2018 §4 uses ``R = 2K``)."""
    if intermediate_dim is None:
        return min(2 * k, d)
    if isinstance(intermediate_dim, bool) or not isinstance(intermediate_dim, Integral):
        raise InputValidationError(f"intermediate_dim must be an integer, got {intermediate_dim!r}")
    r = int(intermediate_dim)
    if r < k:
        raise InputValidationError(f"intermediate_dim R={r} is smaller than n_components K={k}; need R >= K")
    if r > d:
        raise InputValidationError(
            f"intermediate_dim R={r} exceeds the number of features D={d}; need R <= D"
        )
    return r


def expect_symmetric(message: Any, sender: str, d: int) -> NDArray[np.float64]:
    """Rebuild a symmetric ``d x d`` matrix sent as its packed upper triangle."""
    packed = expect_real_array(message, sender, (d * (d + 1) // 2,), "a packed symmetric matrix")
    return from_upper_triangle(packed, d)


def expect_count(message: Any, sender: str) -> int:
    """Check a received row count."""
    if isinstance(message, bool) or not isinstance(message, int) or message < 1:
        raise ProtocolError(f"expected a positive row count from {sender!r}, got {message!r}")
    return message


class DPSubspaceMixin(SubspaceMixin):
    """Fitted-attribute layout of the DP estimators (second-moment PCA, no centring)."""

    def _store_fit(
        self,
        components: NDArray[np.float64],
        explained_variance: NDArray[np.float64],
        n_samples: int,
        run: RunResult,
    ) -> None:
        k, d = components.shape
        self.components_ = components
        self.explained_variance_ = explained_variance
        self.mean_ = np.zeros(d)
        self.n_samples_ = n_samples
        self.n_components_ = k
        self.n_features_in_ = d
        self.report_ = run.report_dict()
        if hasattr(self, "epsilon"):  # every DP estimator; PooledPCA adds no noise and claims no privacy
            warn_privacy_leaks(
                epsilon=self.epsilon,
                delta=getattr(self, "delta", None),
                n_samples=n_samples,
                random_state=getattr(self, "random_state", None),
                stacklevel=4,  # user -> fit -> _store -> _store_fit
            )
