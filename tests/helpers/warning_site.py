"""Check where a warning points (its ``stacklevel``), also under mutation testing."""

from __future__ import annotations

import os
import warnings
from pathlib import Path


def assert_points_at_caller(caught: warnings.WarningMessage, caller_file: str, library_file: str) -> None:
    """The warning names the caller's file, not the library's.

    Under mutmut (``MUTANT_UNDER_TEST`` set) every library function runs through
    mutmut's trampoline, one more frame between the caller and the library, so
    there only "not the library" can be checked.
    """
    if "MUTANT_UNDER_TEST" in os.environ:
        assert Path(caught.filename).name != Path(library_file).name, caught.filename
    else:
        assert caught.filename == caller_file, caught.filename
