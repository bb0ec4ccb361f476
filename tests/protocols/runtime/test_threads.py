"""Worker counts from the CPU affinity mask; small local work runs inline."""

import os
import threading

import pytest

from protocols.runtime import INLINE_WORK, map_parties, usable_cpus


def _thread_ids(items, **kwargs):
    return map_parties(lambda _: threading.get_ident(), items, **kwargs)


def test_usable_cpus_follows_the_affinity_mask(monkeypatch):
    if not hasattr(os, "sched_getaffinity"):
        pytest.skip("no CPU affinity on this platform")
    assert usable_cpus() == len(os.sched_getaffinity(0))
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 1
    assert set(_thread_ids(range(4))) == {threading.get_ident()}  # one usable CPU: no pool


def test_small_work_runs_inline_and_large_work_side_by_side(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    me = threading.get_ident()
    assert set(_thread_ids(range(4), work=INLINE_WORK / 2)) == {me}
    assert me not in set(_thread_ids(range(4), work=INLINE_WORK * 2))
    assert map_parties(lambda x: x * x, [1, 2, 3], work=INLINE_WORK * 2) == [1, 4, 9]
