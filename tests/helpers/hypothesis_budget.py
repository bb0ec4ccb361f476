"""How many hypothesis examples a property test draws: all of them in CI, a quarter locally.

The ``dev`` profile (tests/conftest.py, every run outside CI) derandomizes
hypothesis: each local run draws the same examples, so hundreds of them
repeat the same check on every run of the contributors' fast lane. The
``ci`` profile draws fresh examples each run; there the full count applies.
"""

from __future__ import annotations

from hypothesis import settings

#: Fewest examples a property test draws locally.
LOCAL_FLOOR = 20


def examples(n: int) -> int:
    """``n`` under the ``ci`` profile; ``max(LOCAL_FLOOR, n // 4)`` (at most ``n``) under any other.

    Examples
    --------
    >>> examples(400) in (400, 100)
    True
    """
    if settings.get_current_profile_name() == "ci":
        return n
    return min(n, max(LOCAL_FLOOR, n // 4))
