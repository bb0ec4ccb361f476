"""Property-based verification of secure-sum backends and of protocols built on them.

A public kit (it needs ``hypothesis``, imported only by this package; the rest
of :mod:`protocols` never imports it):

:func:`check_secure_sum_backend`
    Conformance suite for any :class:`~protocols.backends.SecureSumBackend`:
    raises ``AssertionError`` naming the property that failed
    (:mod:`protocols.testing.conformance`).
:func:`check_view_independence`
    Statistical test that every party's view has one distribution for two
    input sets with the same outputs, for any role functions
    (:mod:`protocols.testing.views`).
:class:`Recorder`, :func:`run_recorded`
    Record (and corrupt, for fault tests) every message of an in-process run
    (:mod:`protocols.testing.recording`).
:class:`SumSpec`, :func:`sum_roles`
    Secure sums as role functions, the runs the conformance suite checks
    (:mod:`protocols.testing.sum_runs`).
:mod:`protocols.testing.strategies`
    Hypothesis strategies: fixed-point arrays within a codec's ring budget,
    party names and counts, uneven row splits, backends.
:mod:`protocols.testing.plugin`
    A pytest plugin with a ``check_secure_sum_backend`` fixture.
:mod:`protocols.testing.link_model`
    A network model for in-process runs: each message delayed by RTT/2 and
    paced at its sender's uplink bandwidth
    (:class:`~protocols.testing.link_model.LinkProfile`,
    :class:`~protocols.testing.link_model.ModelledLinks`).
:mod:`protocols.testing.wan_emulator`
    A WAN emulated in user space where the kernel has no ``netem``: TCP
    forwarders that delay each direction by RTT/2 and pace it at a bandwidth
    (:class:`~protocols.testing.wan_emulator.DelayForwarder`), one in front
    of every party of a local run
    (:class:`~protocols.testing.wan_emulator.ForwardingIntroducer`).

Examples
--------
In a test file::

    from protocols.testing import check_secure_sum_backend

    def test_my_backend():
        check_secure_sum_backend(MyBackend())
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from protocols.testing.conformance import (
        PROPERTIES,
        ConformanceError,
        ConformanceReport,
        check_secure_sum_backend,
    )
    from protocols.testing.recording import (
        Delivery,
        RecordedRun,
        Recorder,
        garbage,
        mangle,
        only_nth,
        run_recorded,
    )
    from protocols.testing.sum_runs import SumSpec, sum_roles
    from protocols.testing.views import StatTest, ViewReport, check_view_independence

#: Public name -> its module, imported on first use: the link model and the WAN emulator
#: (``protocols.testing.link_model``, ``protocols.testing.wan_emulator``) import without hypothesis.
_EXPORTS = {
    **dict.fromkeys(
        ("PROPERTIES", "ConformanceError", "ConformanceReport", "check_secure_sum_backend"),
        "protocols.testing.conformance",
    ),
    **dict.fromkeys(
        ("Delivery", "RecordedRun", "Recorder", "garbage", "mangle", "only_nth", "run_recorded"),
        "protocols.testing.recording",
    ),
    **dict.fromkeys(("SumSpec", "sum_roles"), "protocols.testing.sum_runs"),
    **dict.fromkeys(("StatTest", "ViewReport", "check_view_independence"), "protocols.testing.views"),
}


def __getattr__(name: str) -> Any:
    """Import a public name's module when the name is first used (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "PROPERTIES",
    "ConformanceError",
    "ConformanceReport",
    "Delivery",
    "RecordedRun",
    "Recorder",
    "StatTest",
    "SumSpec",
    "ViewReport",
    "check_secure_sum_backend",
    "check_view_independence",
    "garbage",
    "mangle",
    "only_nth",
    "run_recorded",
    "sum_roles",
]
