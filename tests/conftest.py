"""Fixtures and the hypothesis profile shared by every test package."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True
)
settings.load_profile("ci")


@pytest.fixture
def wine() -> np.ndarray:
    from sklearn.datasets import load_wine

    return load_wine().data
