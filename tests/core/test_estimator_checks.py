"""scikit-learn's ``check_estimator`` for every exported estimator (issue 23).

Every instance of :func:`tests.helpers.estimators.fast_instances` passes every
check: ``fit(X)`` is one party's rows, DP estimators are seeded.

No expected failures. Every estimator with DP noise, ``PPPCADP`` included,
has a ``random_state`` (its noise seed), which scikit-learn's checks set
before they compare two fits; unseeded fits differ by design
(``tests/dp/test_deployments.py::test_pppca_dp_noise_is_reproducible_only_with_a_seed``).

``CapeAGN(model="stm")`` is not checked: a single topic model takes word
counts (non-negative integers, at least three words a row), and the checks'
data are real numbers; the ``model="mog"`` instance runs every check.
``check_array_api_input`` is skipped by scikit-learn itself unless
``SCIPY_ARRAY_API`` is set.
"""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from mpc_pca import PPPCADP
from tests.helpers.estimators import TIMEOUT, fast_instances


def _noisy_pppcadp(random_state: int | None) -> PPPCADP:
    return PPPCADP(n_components=2, epsilon=1.0, timeout=TIMEOUT, random_state=random_state)


@parametrize_with_checks([*fast_instances(), _noisy_pppcadp(0)])
def test_sklearn_compatible_estimator(estimator, check):
    check(estimator)
