"""Package exports imported on first use (PEP 562), shared by the package ``__init__`` modules.

Importing one submodule (a party process's transport, say) then does not
import every estimator, and scikit-learn with them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``exports`` (public name -> defining module).

    ``namespace`` is the package's ``globals()``: a name is stored there once
    imported, so later lookups do not come back here.

    Examples
    --------
    >>> namespace = {"__name__": "pkg"}
    >>> getattr_, dir_ = lazy_exports(namespace, {"sqrt": "math"})
    >>> getattr_("sqrt")(9.0), "sqrt" in namespace, dir_()
    (3.0, True, ['__name__', 'sqrt'])
    >>> getattr_("cbrt")
    Traceback (most recent call last):
    ...
    AttributeError: module 'pkg' has no attribute 'cbrt'
    """

    def module_getattr(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {namespace['__name__']!r} has no attribute {name!r}")
        module = importlib.import_module(exports[name])
        # Store every export of that module now: importing it set the package's attribute of
        # the same name to the submodule (e.g. a module named like one of its exports), which must not shadow the export.
        for other, source in exports.items():
            if source == exports[name]:
                namespace[other] = getattr(module, other)
        return namespace[name]

    def module_dir() -> list[str]:
        return sorted({*namespace, *exports})

    return module_getattr, module_dir
