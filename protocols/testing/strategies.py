"""Hypothesis strategies for secure-sum and protocol tests.

Every strategy here respects the fixed-point budget of a codec
(:meth:`protocols.encoding.FixedPointCodec.max_abs`): ``M`` summands whose
entries all lie strictly below ``2^(63-f) / M`` in magnitude cannot wrap
around ``Z_2^64``, and the strategies deliberately produce values at that edge
(the largest representable magnitude below the limit, of both signs), at zero
and at the codec's resolution, besides values spread over the whole range.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from protocols.backends import SecureSumBackend, make_backend
from protocols.encoding import FixedPointCodec

#: Backends that run in-process (CrypTen needs processes over torch.distributed).
IN_PROCESS_BACKENDS = ("additive", "additive-masks", "paillier")
_NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789_-"


def budget(codec: FixedPointCodec, n_summands: int) -> float:
    """The largest float each of ``n_summands`` summands may have: just below ``codec.max_abs``."""
    return float(np.nextafter(codec.max_abs(n_summands), 0.0))


def ring_elements(codec: FixedPointCodec, n_summands: int) -> st.SearchStrategy[float]:
    """One real within ``codec``'s budget for ``n_summands`` summands, extremes included.

    Draws from the whole range ``(-L, L)`` (``L = codec.max_abs(n_summands)``),
    from ``[-1, 1]`` (where rounding to ``2^-f`` matters most) and from the
    edge cases ``0, +-2^-f, +-2^-(f+1)`` and ``+-nextafter(L, 0)``.
    """
    edge = budget(codec, n_summands)
    res = codec.resolution
    extremes = st.sampled_from([0.0, res, -res, res / 2, -res / 2, edge, -edge])
    wide = st.floats(-edge, edge, allow_nan=False, allow_infinity=False)
    small = st.floats(-1.0, 1.0, allow_nan=False, allow_infinity=False)
    return st.one_of(extremes, wide, small)


def summands(
    codec: FixedPointCodec,
    n_summands: int,
    shape: tuple[int, ...] | st.SearchStrategy[tuple[int, ...]] | None = None,
) -> st.SearchStrategy[list[np.ndarray]]:
    """``n_summands`` float64 arrays of one shape, each within the budget for ``n_summands``.

    Parameters
    ----------
    codec : FixedPointCodec
    n_summands : int
        ``M``, the number of arrays (and of summands the budget is computed for).
    shape : tuple or strategy of tuples, optional
        Default: any shape of up to 2 dimensions and 5 entries per side,
        including 0-d and empty arrays.
    """
    shapes = (
        hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=5)
        if shape is None
        else (shape if isinstance(shape, st.SearchStrategy) else st.just(tuple(shape)))
    )
    elements = ring_elements(codec, n_summands)
    return shapes.flatmap(
        lambda s: st.lists(
            hnp.arrays(np.float64, s, elements=elements), min_size=n_summands, max_size=n_summands
        )
    )


def party_names(min_size: int = 1, max_size: int = 6) -> st.SearchStrategy[list[str]]:
    """Distinct party names (short ASCII strings, as a transport carries them)."""
    name = st.text(_NAME_ALPHABET, min_size=1, max_size=8)
    return st.lists(name, min_size=min_size, max_size=max_size, unique=True)


def party_counts(min_value: int = 1, max_value: int = 8) -> st.SearchStrategy[int]:
    """Numbers of contributing parties."""
    return st.integers(min_value, max_value)


def row_splits(n_rows: int, n_parties: int | st.SearchStrategy[int]) -> st.SearchStrategy[list[int]]:
    """Uneven splits of ``n_rows`` rows into parties' row counts, each at least 1.

    Any composition is possible, including one party holding all rows but
    ``n_parties - 1`` and several holding a single row.
    """
    counts = n_parties if isinstance(n_parties, st.SearchStrategy) else st.just(n_parties)

    def split(k: int) -> st.SearchStrategy[list[int]]:
        if not 1 <= k <= n_rows:
            raise ValueError(f"cannot split {n_rows} rows among {k} parties with at least one row each")
        if k == 1:
            return st.just([n_rows])
        cuts = st.lists(st.integers(1, n_rows - 1), min_size=k - 1, max_size=k - 1, unique=True)
        return cuts.map(lambda c: np.diff([0, *sorted(c), n_rows]).astype(int).tolist())

    return counts.flatmap(split)


def frac_bits(min_value: int = 8, max_value: int = 40) -> st.SearchStrategy[int]:
    """Fractional-bit counts of a :class:`FixedPointCodec`."""
    return st.integers(min_value, max_value)


def backends(
    names: tuple[str, ...] = IN_PROCESS_BACKENDS,
    frac_bits: st.SearchStrategy[int] | None = None,
    **options: Any,
) -> st.SearchStrategy[SecureSumBackend]:
    """Backends built with :func:`protocols.backends.make_backend` over a range of codecs.

    Paillier gets a 512-bit test key (``allow_insecure_key_size=True``) so that
    examples stay fast; pass ``options`` to override.
    """
    bits = frac_bits if frac_bits is not None else st.sampled_from([12, 20, 32])

    def build(name: str, f: int) -> SecureSumBackend:
        extra = dict(options)
        if name == "paillier":
            extra.setdefault("key_bits", 512)
            extra.setdefault("allow_insecure_key_size", True)
        return make_backend(name, frac_bits=f, **extra)

    return st.builds(build, st.sampled_from(names), bits)
