"""Input checks shared by every estimator and protocol.

All checks run before any party sends anything; each error names the
offending value and the limit it broke.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from numbers import Integral, Real
from typing import Any, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

from mpc_pca.sparse_rows import as_csr, is_sparse
from protocols.encoding import check_finite
from protocols.errors import InputValidationError, RingOverflowError


def check_parts(
    parts: Sequence[ArrayLike],
    *,
    min_total_rows: int = 2,
    check_values: bool = True,
    accept_sparse: bool = False,
) -> list[NDArray[np.float64]]:
    """Validate the per-party data blocks of a horizontally partitioned data set.

    Parameters
    ----------
    parts : sequence of array_like
        One 2-D array per party, rows are samples, columns the shared features.
    min_total_rows : int, default=2
        Fewest rows the union must hold.
    check_values : bool, default=True
        Scan every entry for NaN/inf. Callers that derive statistics in which
        any non-finite entry shows up anyway (column sums, Gram diagonal) may
        skip the scan and call :func:`check_statistics_finite` instead.
    accept_sparse : bool, default=False
        Keep scipy.sparse parts sparse (canonical CSR, float64 or float32,
        :func:`mpc_pca.sparse_rows.as_csr`; their stored entries are always
        scanned for NaN/inf) instead of refusing them.

    Returns
    -------
    list of ndarray
        The parts as C-contiguous float64 arrays (sparse parts as CSR with
        ``accept_sparse``).

    Raises
    ------
    InputValidationError
        If there are no parts, a part is not 2-D or empty, holds NaN/inf, the
        feature counts differ, or there are too few rows in total.
    TypeError
        If a part is sparse and ``accept_sparse`` is False.
    """
    if isinstance(parts, np.ndarray) or not isinstance(parts, Sequence) or isinstance(parts, str):
        raise InputValidationError(
            f"parts must be a list with one 2-D array per party, got {type(parts).__name__}"
        )
    if len(parts) == 0:
        raise InputValidationError("parts is empty; at least one party must hold data")
    arrays = []
    for i, part in enumerate(parts):
        sparse = is_sparse(part)
        if sparse and not accept_sparse:
            raise TypeError(
                f"part {i} is a scipy.sparse matrix, which this protocol does not accept; convert it "
                "with .toarray() first"
            )
        if np.iscomplexobj(part):
            raise InputValidationError(f"part {i} has complex values; PCA here takes real numbers only")
        if sparse:
            _check_block_shape(cast(Any, part).shape, f"part {i}")
            arrays.append(as_csr(part, f"part {i}"))
            continue
        try:
            arr = np.ascontiguousarray(part, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InputValidationError(f"part {i} is not numeric: {exc}") from exc
        _check_block_shape(arr.shape, f"part {i}")
        if check_values:
            check_finite(arr, f"part {i}")
        arrays.append(arr)
    n_features = arrays[0].shape[1]
    for i, arr in enumerate(arrays):
        if arr.shape[1] != n_features:
            raise InputValidationError(
                f"part {i} has {arr.shape[1]} features but part 0 has {n_features}; "
                "horizontally partitioned parts must share the same feature columns"
            )
    total = sum(arr.shape[0] for arr in arrays)
    if total < min_total_rows:
        raise InputValidationError(
            f"the parts hold {total} row(s) in total; at least {min_total_rows} are needed"
        )
    return arrays


def _check_block_shape(shape: tuple[int, ...], name: str) -> None:
    """One party's block of rows, dense or sparse, is 2-D with at least one row and one column."""
    if len(shape) != 2:
        raise InputValidationError(
            f"{name} has {len(shape)} dimension(s) (shape {shape}); each part must be 2-D "
            "(rows = samples, columns = features)"
        )
    if shape[0] == 0:
        raise InputValidationError(f"{name} has 0 rows; every party needs at least 1 row")
    if shape[1] == 0:
        raise InputValidationError(f"{name} has 0 features; at least 1 is needed")


def check_statistics_finite(
    part: NDArray[np.float64], statistics: Sequence[NDArray[np.float64]], index: int
) -> None:
    """Reject a part whose derived statistics are not finite, naming the culprit entry.

    A NaN or infinite entry makes its column sum and its column's sum of
    squares non-finite, so checking the (small) statistics is as strict as
    scanning every entry; the rows are scanned only to build the message.
    """
    if all(np.all(np.isfinite(s)) for s in statistics):
        return
    values: NDArray[np.float64] = np.asarray(part.data) if is_sparse(part) else part  # sparse: stored entries
    check_finite(values, f"part {index}")  # raises with the location of a NaN/inf entry
    raise RingOverflowError(
        f"part {index} holds values so large (max |x| = {np.max(np.abs(values)):.3g}) that its sums "
        "overflow float64; rescale the data"
    )


def check_n_components(n_components: object, n_features: int, n_samples: int | None = None) -> int:
    """Validate ``n_components``; ``None`` means ``min(n_samples, n_features)``.

    The error contains scikit-learn's ``PCA`` wording ("must be between 1 and
    min(n_samples, n_features)=2") and both values.

    Examples
    --------
    >>> check_n_components(3, n_features=3, n_samples=2)
    Traceback (most recent call last):
    ...
    protocols.errors.InputValidationError: n_components=3 is out of range; it must be between 1 and min(n_samples, n_features)=2 (n_samples=2, n_features=3)
    """
    limit = n_features if n_samples is None else min(n_features, n_samples)
    if n_components is None:
        return limit
    if isinstance(n_components, bool) or not isinstance(n_components, Integral):
        raise InputValidationError(f"n_components must be an integer, got {n_components!r}")
    if not 1 <= int(n_components) <= limit:  # scikit-learn's PCA wording, with both values
        bound = "n_features" if n_samples is None else "min(n_samples, n_features)"
        detail = (
            f"n_features={n_features}"
            if n_samples is None
            else f"n_samples={n_samples}, n_features={n_features}"
        )
        raise InputValidationError(
            f"n_components={n_components} is out of range; it must be between 1 and {bound}={limit} ({detail})"
        )
    return int(n_components)


def check_positive(
    value: object,
    name: str,
    *,
    upper: float | None = None,
    upper_inclusive: bool = True,
    allow_inf: bool = False,
) -> float:
    """Validate a positive real such as epsilon, optionally bounded above (delta < 1).

    Parameters
    ----------
    value : object
        The value to check.
    name : str
        Its name in error messages.
    upper : float, optional
        Upper limit.
    upper_inclusive : bool, default=True
        Whether ``value == upper`` is allowed.
    allow_inf : bool, default=False
        Whether ``+inf`` is allowed (e.g. epsilon = inf switches noise off).
    """
    if isinstance(value, bool) or not isinstance(value, Real):
        raise InputValidationError(f"{name} must be a real number, got {value!r}")
    v = float(value)
    if np.isnan(v) or v <= 0:
        raise InputValidationError(f"{name}={value!r} is invalid; it must be > 0")
    if np.isinf(v) and not allow_inf:
        raise InputValidationError(f"{name}={value!r} is invalid; it must be finite")
    if upper is not None and (v > upper or (v == upper and not upper_inclusive)):
        op = "<=" if upper_inclusive else "<"
        raise InputValidationError(f"{name}={value!r} is invalid; it must be {op} {upper:g}")
    return v


def check_features_match(X: ArrayLike, n_features: int, what: str = "X") -> NDArray[np.float64]:
    """Validate data passed to ``transform`` against the fitted feature count."""
    arr = np.asarray(X, dtype=np.float64)
    if arr.ndim != 2:
        raise InputValidationError(f"{what} must be 2-D, got shape {arr.shape}")
    if arr.shape[1] != n_features:
        raise InputValidationError(
            f"{what} has {arr.shape[1]} features but the model was fitted with {n_features}"
        )
    check_finite(arr, what)
    return arr


class RowsClippedWarning(UserWarning):
    """Rows were clipped to the norm bound a DP mechanism assumes (a privacy-relevant data change).

    Emitted by the party that holds the rows, with the count; the count is
    local information and is never sent to another party.
    """


class PrivacyLeakWarning(UserWarning):
    """A differentially private release is not private as it was run (the name diffprivlib uses).

    Emitted by the library, once per cause: data-dependent row norms
    (``row_norm="scale"``), a fixed noise seed, ``epsilon=inf``, ``delta >=
    1/n``, a retracted mechanism. The release itself is computed as asked;
    only the guarantee is void. :func:`privacy_leaks` lists the causes that
    depend on the parameters.
    """


def privacy_leaks(
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    n_samples: int | None = None,
    random_state: object = None,
) -> list[str]:
    """Why a DP release with these parameters is not private (an empty list if it is).

    Parameters
    ----------
    epsilon : float, optional
        ``inf`` adds no noise.
    delta : float, optional
        ``delta >= 1 / n_samples`` allows releasing a whole row with probability delta.
    n_samples : int, optional
        The total number of rows the release is computed from.
    random_state : object, optional
        Any value but ``None`` fixes the noise: whoever knows it can remove the noise.

    Returns
    -------
    list of str
        One message per cause, naming the value and the limit.

    Examples
    --------
    >>> privacy_leaks(epsilon=1.0, delta=1e-5, n_samples=1000)
    []
    >>> privacy_leaks(delta=0.01, n_samples=150)[0][:38]
    'delta=0.01 >= 1/n = 1/150 (n the rows)'
    """
    reasons = []
    if epsilon is not None and math.isinf(float(epsilon)):
        reasons.append("epsilon=inf: no noise is added, the release is NOT private")
    if random_state is not None:
        seed = random_state if isinstance(random_state, Integral) else type(random_state).__name__
        reasons.append(
            f"a fixed noise seed ({seed}) makes the DP noise reproducible by whoever knows it: the release "
            "is NOT private (random_state / noise_seed are for experiments only; leave them unset)"
        )
    if delta is not None and n_samples is not None and n_samples > 0 and float(delta) >= 1.0 / n_samples:
        reasons.append(
            f"delta={float(delta):g} >= 1/n = 1/{n_samples} (n the rows): a mechanism may then publish a "
            f"whole row with probability delta, so the release is NOT private; choose delta < 1/n, e.g. "
            f"{10.0 ** math.floor(math.log10(1.0 / n_samples**2)):g}"
        )
    return reasons


def warn_privacy_leaks(
    *,
    epsilon: float | None = None,
    delta: float | None = None,
    n_samples: int | None = None,
    random_state: object = None,
    stacklevel: int = 2,
) -> list[str]:
    """Warn (:class:`PrivacyLeakWarning`) once for each cause :func:`privacy_leaks` finds; return them."""
    reasons = privacy_leaks(epsilon=epsilon, delta=delta, n_samples=n_samples, random_state=random_state)
    for reason in reasons:
        warnings.warn(reason, PrivacyLeakWarning, stacklevel=stacklevel + 1)
    return reasons


def align_columns(
    names: Sequence[Sequence[str]], owners: Sequence[str] | None = None
) -> tuple[tuple[str, ...], list[list[int] | None]]:
    """Agree on one ordered list of column names; find each part's permutation to it.

    The first part's order is the reference. A part whose names are a
    permutation of it gets the column indices that put its columns in that
    order (``None`` when already in order); any other difference is refused.

    Parameters
    ----------
    names : sequence of sequence of str
        Each part's ordered column names.
    owners : sequence of str, optional
        Each part's name in error messages (default ``part 0``, ``part 1``, ...).

    Returns
    -------
    reference : tuple of str
        The agreed ordered names.
    orders : list
        Per part, ``None`` or the column indices to take (``part[:, order]``).

    Raises
    ------
    InputValidationError
        If a part repeats a name or holds different names; the message lists both parts' names.

    Examples
    --------
    >>> align_columns([["a", "b", "c"], ["c", "a", "b"]])
    (('a', 'b', 'c'), [None, [1, 2, 0]])
    """
    owners = [f"part {i}" for i in range(len(names))] if owners is None else list(owners)
    lists = [[str(n) for n in part] for part in names]
    for owner, part in zip(owners, lists, strict=True):
        seen: set[str] = set()
        repeated = sorted({n for n in part if n in seen or seen.add(n)})  # type: ignore[func-returns-value]
        if repeated:
            raise InputValidationError(f"{owner} has repeated column names {repeated}: {part}")
    reference = tuple(lists[0])
    orders: list[list[int] | None] = []
    for owner, part in zip(owners, lists, strict=True):
        if tuple(part) == reference:
            orders.append(None)
        elif sorted(part) == sorted(reference):
            position = {name: i for i, name in enumerate(part)}
            orders.append([position[name] for name in reference])
        else:
            raise _different_columns(owner, part, owners[0], reference)
    return reference, orders


def _different_columns(
    owner: str, part: list[str], first: str, reference: tuple[str, ...]
) -> InputValidationError:
    """The refusal of ``owner``'s column names: both lists, what is missing and unexpected, the fix."""
    missing = [n for n in reference if n not in part]
    extra = [n for n in part if n not in reference]
    counts = f" ({len(part)} columns vs {len(reference)})" if len(part) != len(reference) else ""
    common = [n for n in reference if n in part]
    return InputValidationError(
        f"{owner} has different column names than {first}{counts}: {first} has "
        f"{list(reference)}, {owner} has {part} (missing {missing}, unexpected {extra}); if "
        f"those columns are not wanted, give every provider columns=NAMES with the {len(common)} "
        f"names they share, which leaves out {missing + extra}"
    )
