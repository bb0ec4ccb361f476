"""Secure-sum backends behind one interface (:class:`SecureSumBackend`).

Backends are plain objects the caller constructs and passes in; nothing is
looked up from a global registry. :func:`make_backend` builds one from a name
for command-line use.
"""

from protocols.backends.additive import AdditiveBackend
from protocols.backends.base import SecureSumBackend, make_backend

__all__ = ["AdditiveBackend", "SecureSumBackend", "make_backend"]
