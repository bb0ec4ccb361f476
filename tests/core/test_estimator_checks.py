"""scikit-learn's ``check_estimator`` for every exported estimator (issue 23).

Every instance of :func:`tests.helpers.estimators.fast_instances` passes every
check: ``fit(X)`` is one party's rows, DP estimators are seeded.

No expected failures. Every estimator with DP noise, ``PPPCADP`` included,
has a ``random_state`` (its noise seed), which scikit-learn's checks set
before they compare two fits; unseeded fits differ by design
(``tests/dp/test_deployments.py::test_pppca_dp_noise_is_reproducible_only_with_a_seed``).

``DPDPCA()`` and ``CapeAGN()`` with their defaults (issue 38) pass every
check too, with no expected failure. ``DPDPCA`` clips a row of norm > 1 at
its owner by default (``row_norm="clip"``, with a ``RowsClippedWarning``
naming the count, as every DP estimator here); ``row_norm="error"`` still
refuses such a row. ``CapeAGN(model="stm")`` takes word counts, non-negative
integers, and says so through scikit-learn's tags (``positive_only`` and
``categorical``, as ``CategoricalNB`` does for its codes), so the checks hand
it shifted, rounded rows; a non-integer or negative entry is refused, never
rounded. A document of fewer than three words counts in ``N`` and
contributes nothing (``mpc_pca.dp.moments``); a one-word vocabulary is
refused in scikit-learn's wording (``n_features = 1``).
:func:`test_the_defaults_input_restrictions_hold_with_clear_errors` checks
that these restrictions still hold.
``check_array_api_input`` is skipped by scikit-learn itself unless
``SCIPY_ARRAY_API`` is set.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import parametrize_with_checks

from mpc_pca import DPDPCA, PPPCADP, CapeAGN
from mpc_pca.validation import RowsClippedWarning
from protocols.errors import InputValidationError
from tests.helpers.estimators import TIMEOUT, fast_instances


def _noisy_pppcadp(random_state: int | None) -> PPPCADP:
    return PPPCADP(n_components=2, epsilon=1.0, timeout=TIMEOUT, random_state=random_state)


@parametrize_with_checks([*fast_instances(), _noisy_pppcadp(0), DPDPCA(), CapeAGN()])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)


def test_the_defaults_input_restrictions_hold_with_clear_errors():
    """What the defaults accept: DPDPCA clips (or, asked, refuses) long rows; CapeAGN refuses what is not a count."""
    rows = np.random.default_rng(0).normal(size=(30, 4))
    assert DPDPCA().row_norm == "clip"
    with pytest.raises(InputValidationError, match=r"norm .* > 1"):
        DPDPCA(row_norm="error").fit(rows)
    with pytest.raises(InputValidationError, match=r"holds .*non-negative integer word counts"):
        CapeAGN().fit(np.abs(rows))
    with pytest.raises(InputValidationError, match=r"Negative values in data"):
        CapeAGN().fit(rows)
    with pytest.raises(InputValidationError, match=r"n_features = 1"):
        CapeAGN(1).fit(np.full((10, 1), 3.0))
    stm, mog = get_tags(CapeAGN()).input_tags, get_tags(CapeAGN(model="mog")).input_tags
    assert stm.positive_only and stm.categorical
    assert not mog.positive_only and not mog.categorical


@pytest.mark.filterwarnings("ignore::mpc_pca.validation.PrivacyLeakWarning")
def test_default_dpdpca_clips_long_rows_and_names_the_count():
    """The default bounds rows as every DP estimator here: clipped at the owner, with the count in the warning."""
    rows = np.random.default_rng(1).normal(size=(12, 3)) * 0.2
    rows[[2, 7]] *= 40.0  # norms far above 1
    fast = {
        "key_bits": 256,
        "allow_insecure_key_size": True,
        "frac_bits": 8,
        "mask_bits": 40,
        "timeout": TIMEOUT,
    }
    with pytest.warns(RowsClippedWarning, match=r"2 of 12 rows had norm > 1"):
        clipped = DPDPCA(epsilon=math.inf, **fast).fit(rows)
    bounded = rows / np.maximum(1.0, np.linalg.norm(rows, axis=1, keepdims=True))
    given = DPDPCA(epsilon=math.inf, row_norm="error", **fast).fit(bounded)
    np.testing.assert_allclose(clipped.noisy_scatter_, given.noisy_scatter_, atol=1e-6)
