"""Entry points the launcher tests run as fork-server children (``PythonEntry``)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path


def describe(argv: list[str]) -> int:
    """Write this child's parent pid, which preloaded modules it found and one variable, then exit 0."""
    path, *modules = argv
    report = {
        "ppid": os.getppid(),
        "loaded": {m: m in sys.modules for m in modules},
        "mark": os.environ.get("MPC_PCA_TEST_MARK"),
    }
    Path(path).write_text(json.dumps(report))
    return 0


def fail(argv: list[str]) -> int:
    """Fail the way the command line does: one error line on stderr, exit code 4."""
    print(f"mpc-pca: error: protocol failure: {argv[0]}", file=sys.stderr)
    return 4


def hang(argv: list[str]) -> int:
    """Never end by itself (the launcher must kill it)."""
    time.sleep(float(argv[0]))
    return 0
