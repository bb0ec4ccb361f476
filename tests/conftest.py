"""Fixtures and the hypothesis profiles shared by every test package.

Hypothesis profiles: ``ci`` (selected when the ``CI`` environment variable is
set) draws fresh examples every run from a seed printed in the pytest header
(rerun a failure with ``--hypothesis-seed=<seed>``); ``dev`` (the default
locally) is derandomized, so a local run tests the same examples every time.

Every test under ``tests/multiprocess/`` is marked ``processes``
(:func:`pytest_collection_modifyitems`): the contributors' fast lane,
``pytest -m "not slow and not processes"``, leaves them out (CONTRIBUTING.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

pytest_plugins = ["protocols.testing.plugin"]

_COMMON = {"max_examples": 40, "deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=False, database=None, print_blob=True, **_COMMON)
settings.register_profile("dev", derandomize=True, **_COMMON)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
_SEED_KEY = pytest.StashKey[int]()


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Under the ``ci`` profile, draw one hypothesis seed for the session (unless given)."""
    if settings.get_current_profile_name() != "ci" or config.getoption("--hypothesis-seed") is not None:
        return
    from hypothesis import core

    seed = secrets.randbits(32)
    core.global_force_seed = seed
    config.stash[_SEED_KEY] = seed


def pytest_report_header(config: pytest.Config) -> str | None:
    seed = config.stash.get(_SEED_KEY, None)
    if seed is None:
        return None
    return f"hypothesis seed: {seed} (reproduce with --hypothesis-seed={seed})"


@pytest.fixture
def wine() -> np.ndarray:
    from sklearn.datasets import load_wine

    return load_wine().data


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Repeat the seed after the results, where ``pytest -q`` (no header) shows it too."""
    line = pytest_report_header(terminalreporter.config)
    if line is not None:
        terminalreporter.write_line(line)


MULTIPROCESS = Path(__file__).resolve().parent / "multiprocess"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test under ``tests/multiprocess/`` as ``processes`` (it starts parties as processes)."""
    for item in items:
        if Path(str(item.path)).resolve().is_relative_to(MULTIPROCESS):
            item.add_marker(pytest.mark.processes)
