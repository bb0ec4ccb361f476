"""Doctest collection of ``protocols/`` and ``mpc_pca/`` without the optional torch install.

``--doctest-modules`` imports every module of the packages. The few that import
torch at module level (the torch.distributed transport and runtime) cannot be
imported by a base + ``test`` install, so their doctests are left out when torch
is missing, exactly as the torch tests skip; with torch installed (CI) they are
collected as before. The Flower integration (``mpc_pca/integrations/flower``,
the ``flower`` extra) is left out in the same way when ``flwr`` is missing.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent
#: A module-level (column 0) import of an optional package.
_OPTIONAL_IMPORT = re.compile(r"^(?:import|from)\s+(torch|crypten)\b", re.M)


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):  # ValueError: sys.modules[name] is None (import blocked)
        return False


def modules_needing_missing_packages(root: Path = ROOT) -> list[str]:
    """Paths (relative to ``root``) of package modules that import a missing optional package at load."""
    missing = {name for name in ("torch", "crypten") if not _installed(name)}
    if not missing:
        return []
    found = []
    for package in ("protocols", "mpc_pca"):
        for path in sorted((root / package).rglob("*.py")):
            if missing & set(_OPTIONAL_IMPORT.findall(path.read_text(encoding="utf-8"))):
                found.append(path.relative_to(root).as_posix())
    return found


#: Packages all of whose modules need an optional package (their ``__init__`` refuses to load without it).
_PACKAGES_NEEDING = {"flwr": "mpc_pca/integrations/flower"}

collect_ignore = modules_needing_missing_packages() + [
    path for name, path in _PACKAGES_NEEDING.items() if not _installed(name)
]
