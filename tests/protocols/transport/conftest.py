"""Fixtures shared by the transport tests."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    """Run the test under umask 000, so every file mode it checks was set explicitly by the code."""
    previous = os.umask(0)
    try:
        yield
    finally:
        os.umask(previous)
