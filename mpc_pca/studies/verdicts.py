"""Verdicts from repeated measurements: every claim is a test at a stated significance level.

A verdict is three-valued. ``True``: the data support the paper's claim at
level ``alpha``; ``False``: they support the opposite at the same level;
``None``: neither (the repeats cannot tell at this size). A verdict therefore
only changes between two runs of the same size when a test statistic sits on
its critical value, and the accuracy studies draw data and noise from seeds
fixed by the point's key, so they give identical numbers on every run.

Tests
-----
:func:`sign_test`
    Paired exact sign test (binomial on the non-zero differences).
:func:`trend`
    Kendall's tau between a swept parameter and every repeated value.
:func:`bootstrap_ci`
    Percentile bootstrap confidence interval of a statistic, seeded.
:func:`equivalent`
    Two one-sided checks of a ratio against a stated margin, by bootstrap CI.
:func:`grows_at_least`, :func:`flat_within`
    Growth per step of a swept parameter (timings measured in interleaved
    rounds) against a practical margin: a minimum-effect test and an
    equivalence test, so that noise around a negligible effect cannot flip
    the verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from protocols.errors import InputValidationError

#: The default significance level of every claim (stated in each claim's evidence).
ALPHA = 0.05


@dataclass(frozen=True)
class Verdict:
    """A three-valued verdict and the numbers it rests on."""

    holds: bool | None
    evidence: str


def _check_alpha(alpha: float) -> None:
    if not 0.0 < alpha < 0.5:
        raise InputValidationError(f"alpha must be in (0, 0.5), got {alpha}")


def sign_test(
    a: Sequence[float], b: Sequence[float], *, alpha: float = ALPHA, margin: float = 0.0
) -> Verdict:
    """Paired exact sign test of ``a > b + margin`` (one-sided, both directions at ``alpha``).

    Parameters
    ----------
    a, b : sequence of float
        Paired repeated measurements (same data and seed index), NaN pairs dropped.
    alpha : float
        Significance level of each one-sided test.
    margin : float
        ``a`` must exceed ``b`` by more than ``margin`` for a pair to count as
        a win; a pair with ``a < b - margin`` counts as a loss; ties in between
        are dropped (the usual sign-test treatment of zeros).

    Returns
    -------
    Verdict
        ``True`` if wins are significantly more than losses, ``False`` if
        losses are significantly more, else ``None``.
    """
    from scipy import stats

    _check_alpha(alpha)
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise InputValidationError(f"paired samples differ in length: {x.shape} vs {y.shape}")
    ok = np.isfinite(x) & np.isfinite(y)
    d = x[ok] - y[ok]
    wins, losses = int(np.sum(d > margin)), int(np.sum(d < -margin))
    n = wins + losses
    if n == 0:
        return Verdict(None, f"sign test: no informative pair of {int(ok.sum())} (alpha {alpha:g})")
    p_more = float(stats.binomtest(wins, n, 0.5, alternative="greater").pvalue)
    p_less = float(stats.binomtest(wins, n, 0.5, alternative="less").pvalue)
    holds = True if p_more < alpha else (False if p_less < alpha else None)
    return Verdict(
        holds,
        f"sign test over {n} informative pairs: {wins} wins, {losses} losses"
        f"{f' (margin {margin:g})' if margin else ''}; one-sided p = {p_more:.2g} (for), {p_less:.2g} "
        f"(against), alpha {alpha:g}",
    )


def trend(xs: Sequence[float], values: Sequence[Sequence[float]], *, alpha: float = ALPHA) -> Verdict:
    """Kendall's tau between the swept parameter and every repeat: ``True`` if it grows.

    Parameters
    ----------
    xs : sequence of float
        The swept parameter, one per point.
    values : sequence of sequences of float
        The repeated measurements at each point.
    """
    from scipy import stats

    _check_alpha(alpha)
    if len(xs) != len(values):
        raise InputValidationError("one list of repeats per swept value is needed")
    pairs = [(float(x), float(v)) for x, vs in zip(xs, values, strict=True) for v in vs if np.isfinite(v)]
    if len({p[0] for p in pairs}) < 2:
        return Verdict(None, "fewer than 2 swept values measured")
    x, y = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    up = stats.kendalltau(x, y, alternative="greater")
    down = stats.kendalltau(x, y, alternative="less")
    holds = True if up.pvalue < alpha else (False if down.pvalue < alpha else None)
    order = np.argsort(xs)
    lo, hi = order[0], order[-1]
    return Verdict(
        holds,
        f"mean {np.nanmean(values[lo]):.3f} at {xs[lo]:g} -> {np.nanmean(values[hi]):.3f} at {xs[hi]:g}; "
        f"Kendall tau {up.statistic:.2f} over {len(pairs)} repeats, one-sided p = {up.pvalue:.2g} (grows), "
        f"{down.pvalue:.2g} (falls), alpha {alpha:g}",
    )


def bootstrap_ci(
    samples: Sequence[np.ndarray],
    statistic: Callable[..., float],
    *,
    level: float = 1 - 2 * ALPHA,
    n_boot: int = 2000,
    seed: int = 0,
    paired: bool = False,
) -> tuple[float, float, float]:
    """Point estimate and percentile bootstrap CI of ``statistic(*samples)``, resampled with a fixed seed.

    ``paired=True`` resamples the same indices in every sample (they must be
    of one length); otherwise each sample is resampled on its own.
    """
    if not 0.5 < level < 1.0:
        raise InputValidationError(f"level must be in (0.5, 1), got {level}")
    arrays = [np.asarray(s, dtype=float) for s in samples]
    if paired:
        if len({a.size for a in arrays}) != 1:
            raise InputValidationError("paired bootstrap samples must be of one length")
        both = np.logical_and.reduce([np.isfinite(a) for a in arrays])  # a failed run drops its whole pair
        arrays = [a[both] for a in arrays]
    else:
        arrays = [a[np.isfinite(a)] for a in arrays]
    if any(a.size == 0 for a in arrays):
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng(seed)
    stats_ = np.empty(n_boot)
    for i in range(n_boot):
        if paired:
            idx = rng.integers(0, arrays[0].size, arrays[0].size)
            stats_[i] = statistic(*(a[idx] for a in arrays))
        else:
            stats_[i] = statistic(*(a[rng.integers(0, a.size, a.size)] for a in arrays))
    tail = (1 - level) / 2
    lo, hi = np.quantile(stats_, [tail, 1 - tail])
    return float(statistic(*arrays)), float(lo), float(hi)


def ratio_of_means(a: np.ndarray, b: np.ndarray) -> float:
    """``mean(a) / mean(b)`` (the statistic of the ratio claims)."""
    return float(np.mean(a) / np.mean(b))


def ratio_above(
    a: Sequence[float], b: Sequence[float], *, threshold: float, alpha: float = ALPHA, seed: int = 0
) -> Verdict:
    """``mean(a) / mean(b) > threshold`` by a two-sided ``1 - 2 alpha`` bootstrap CI (each bound one-sided ``alpha``)."""
    est, lo, hi = bootstrap_ci([np.asarray(a), np.asarray(b)], ratio_of_means, level=1 - 2 * alpha, seed=seed)
    if not np.isfinite(est):
        return Verdict(None, "no measurements")
    holds = True if lo > threshold else (False if hi < threshold else None)
    return Verdict(
        holds,
        f"ratio of means {est:.3f}, {100 * (1 - 2 * alpha):g}% bootstrap CI [{lo:.3f}, {hi:.3f}] "
        f"(seed {seed}) against threshold {threshold:g}",
    )


def equivalent(
    a: Sequence[float],
    b: Sequence[float],
    *,
    margin: float,
    alpha: float = ALPHA,
    seed: int = 0,
    paired: bool = False,
) -> Verdict:
    """``mean(a) / mean(b)`` within ``[1 - margin, 1 / (1 - margin)]`` (two one-sided tests by bootstrap CI).

    ``True`` when the ``1 - 2 alpha`` CI lies inside the margin, ``False``
    when it lies wholly outside, else ``None``.
    """
    if not 0.0 < margin < 1.0:
        raise InputValidationError(f"margin must be in (0, 1), got {margin}")
    est, lo, hi = bootstrap_ci(
        [np.asarray(a), np.asarray(b)], ratio_of_means, level=1 - 2 * alpha, seed=seed, paired=paired
    )
    low, high = 1 - margin, 1 / (1 - margin)
    if not np.isfinite(est):
        return Verdict(None, "no measurements")
    holds = True if (lo >= low and hi <= high) else (False if (hi < low or lo > high) else None)
    return Verdict(
        holds,
        f"ratio of means {est:.3f}, {100 * (1 - 2 * alpha):g}% bootstrap CI [{lo:.3f}, {hi:.3f}] (seed {seed}); "
        f"equivalence margin [{low:.3f}, {high:.3f}]",
    )


def growth_per_step(xs: Sequence[float], rounds: Sequence[Sequence[float]]) -> np.ndarray:
    """Per round, the relative growth of a positive quantity per unit step of ``xs``.

    Each round holds one measurement at every ``x`` (measured in one
    interleaved sweep, so slow load drift hits all of them alike); its growth
    is ``exp(b) - 1``, ``b`` the least-squares slope of ``log(value)`` on ``x``
    (0.05 = 5 % more per step). Rounds with a non-positive or missing value
    are dropped.
    """
    x = np.asarray(xs, dtype=float)
    if x.ndim != 1 or x.size < 2 or np.ptp(x) == 0:
        raise InputValidationError(f"need at least 2 distinct swept values, got {list(xs)}")
    out = []
    for values in rounds:
        v = np.asarray(values, dtype=float)
        if v.shape != x.shape:
            raise InputValidationError(f"a round has {v.size} values for {x.size} swept values")
        if np.all(np.isfinite(v)) and np.all(v > 0):
            out.append(np.expm1(np.polyfit(x, np.log(v), 1)[0]))
    return np.asarray(out, dtype=float)


def _growth_ci(
    xs: Sequence[float], rounds: Sequence[Sequence[float]], alpha: float, seed: int
) -> tuple[int, float, float, float]:
    _check_alpha(alpha)
    g = growth_per_step(xs, rounds)
    if g.size < 2:
        return int(g.size), float("nan"), float("nan"), float("nan")
    est, lo, hi = bootstrap_ci([g], lambda a: float(np.median(a)), level=1 - 2 * alpha, seed=seed)
    return int(g.size), est, lo, hi


def grows_at_least(
    xs: Sequence[float],
    rounds: Sequence[Sequence[float]],
    *,
    margin: float,
    alpha: float = ALPHA,
    seed: int = 0,
    resolution: float | None = None,
) -> Verdict:
    """Minimum-effect test: does the quantity grow by at least ``margin`` per step of ``xs``?

    The statistic is the median over rounds of :func:`growth_per_step`, with
    a ``1 - 2 alpha`` percentile bootstrap CI over rounds (each bound
    one-sided at ``alpha``). ``True`` when the CI lies above ``margin``
    (growth of at least that size), ``False`` when it lies below (growth of
    that size excluded: "no growth beyond ``margin``"), ``None`` when it
    straddles ``margin`` or is too wide to resolve it (half-width above
    ``resolution``, which defaults to ``margin``: timing noise from shared
    cores, see :func:`_too_noisy`). A ``margin`` well below the expected
    effect with a separate ``resolution`` keeps the verdict away from the
    margin, where a true effect close to it would decide by chance.
    Unlike a test against zero growth, a tiny effect that noise makes
    significant in one run and not in the next cannot flip the verdict: it is
    decided by which side of a practical margin a narrow enough interval lies
    on.
    """
    resolution = _resolution(margin, resolution)
    n, est, lo, hi = _growth_ci(xs, rounds, alpha, seed)
    if not np.isfinite(est):
        return Verdict(None, f"{n} usable round(s); at least 2 are needed")
    holds = (
        None
        if _too_noisy(lo, hi, resolution)
        else (True if lo > margin else (False if hi < margin else None))
    )
    return Verdict(
        holds,
        f"growth per step {100 * est:+.1f} % (median of {n} rounds), {100 * (1 - 2 * alpha):g}% bootstrap "
        f"CI [{100 * lo:+.1f}, {100 * hi:+.1f}] % (seed {seed}) against a minimum effect of {100 * margin:+.1f} %"
        f"{_noise_note(lo, hi, resolution)}",
    )


def flat_within(
    xs: Sequence[float],
    rounds: Sequence[Sequence[float]],
    *,
    margin: float,
    alpha: float = ALPHA,
    seed: int = 0,
    resolution: float | None = None,
) -> Verdict:
    """Equivalence test: does the quantity change by less than ``margin`` per step of ``xs``?

    ``True`` when the ``1 - 2 alpha`` bootstrap CI of the median per-step
    growth (:func:`growth_per_step`) lies inside ``(-margin, margin)`` (two
    one-sided tests), ``False`` when it lies wholly outside and is no wider
    than the band, or than ``2 resolution`` if given (:func:`_too_noisy`),
    ``None`` otherwise.
    """
    resolution = _resolution(margin, resolution)
    n, est, lo, hi = _growth_ci(xs, rounds, alpha, seed)
    if not np.isfinite(est):
        return Verdict(None, f"{n} usable round(s); at least 2 are needed")
    outside = (hi < -margin or lo > margin) and not _too_noisy(lo, hi, resolution)
    holds = True if (lo > -margin and hi < margin) else (False if outside else None)
    return Verdict(
        holds,
        f"growth per step {100 * est:+.1f} % (median of {n} rounds), {100 * (1 - 2 * alpha):g}% bootstrap "
        f"CI [{100 * lo:+.1f}, {100 * hi:+.1f}] % (seed {seed}) against the equivalence band "
        f"±{100 * margin:.1f} %{_noise_note(lo, hi, resolution)}",
    )


def _resolution(margin: float, resolution: float | None) -> float:
    """The half-width above which a growth CI is too noisy to decide (``margin`` unless given)."""
    if not 0.0 < margin < 1.0:
        raise InputValidationError(f"margin must be in (0, 1), got {margin}")
    if resolution is None:
        return margin
    if not 0.0 < resolution < 1.0:
        raise InputValidationError(f"resolution must be in (0, 1), got {resolution}")
    return resolution


def _too_noisy(lo: float, hi: float, margin: float) -> bool:
    """A CI whose half-width exceeds the margin cannot resolve growth of the margin's size from none.

    Timings on shared cores spread by tens of percent from round to round;
    their interval then lands on either side of the margin by chance from one
    run to the next. Deciding only when the interval is at most ``2 margin``
    wide makes the verdict a property of the effect, not of the load.
    """
    return (hi - lo) / 2 > margin


def _noise_note(lo: float, hi: float, resolution: float) -> str:
    if not _too_noisy(lo, hi, resolution):
        return ""
    return (
        f"; too noisy to decide: CI half-width {100 * (hi - lo) / 2:.1f} % exceeds {100 * resolution:.1f} % "
        "(more rounds, or unshared cores, are needed)"
    )
