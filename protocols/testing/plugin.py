"""pytest plugin: a ``check_secure_sum_backend`` fixture and its command-line options.

Enable it in a ``conftest.py`` with ``pytest_plugins = ["protocols.testing.plugin"]``,
then write one test per backend::

    def test_my_backend(check_secure_sum_backend):
        check_secure_sum_backend(MyBackend())

Options: ``--conformance-examples N`` (hypothesis examples of the correctness
property, default 25) and ``--conformance-alpha A`` (family-wise level of the
view tests, default 1e-6). Keyword arguments given in the test win over them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("secure-sum conformance")
    group.addoption(
        "--conformance-examples",
        type=int,
        default=None,
        help="hypothesis examples of the correctness property of check_secure_sum_backend",
    )
    group.addoption(
        "--conformance-alpha",
        type=float,
        default=None,
        help="family-wise significance level of the view-independence tests",
    )


@pytest.fixture
def check_secure_sum_backend(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """:func:`protocols.testing.check_secure_sum_backend` with the command-line options applied."""
    from protocols.testing.conformance import check_secure_sum_backend as check

    defaults: dict[str, Any] = {}
    examples = request.config.getoption("--conformance-examples")
    if examples is not None:
        defaults["max_examples"] = examples
    alpha = request.config.getoption("--conformance-alpha")
    if alpha is not None:
        defaults["alpha"] = alpha

    def run(backend: Any, **options: Any) -> Any:
        return check(backend, **{**defaults, **options})

    return run
