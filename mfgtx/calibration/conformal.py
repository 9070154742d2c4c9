"""Conformal calibration of prediction intervals, exchangeable by lot.

Shape legend: ``N`` windows (calibration or scored), ``S`` the calibrated shape: ``(T,)``
targets for the sensor regressor (remaining life), ``(H, C)`` horizon steps by channels for
the forecaster. ``L`` calibration lots.

A model's 10 %-90 % band is trained by pinball loss and promises 80 %; nothing checks the
promise. Conformal calibration checks it on the validation lots (never the test lots) and
widens, or narrows, the band by one number per cell of ``S``, the *margin*:

* **split conformal** (a point model): score ``|y - point|``; interval ``point -/+ margin``;
* **CQR**, conformalized quantile regression (Romano, Patterson & Candes, 2019; a model with
  quantile heads): score ``max(low - y, y - high)``; interval ``[low - margin, high + margin]``.

**Lots, not windows, are the exchangeable units.** The overlapping windows of one lot share
their readings and their lot's condition; they are not independent draws, and counting them as
such shrinks the margin as if the validation set held thousands of lots when it holds six.
:func:`lot_quantile` therefore weights every lot 1 in total (each of its ``n_i`` windows
``1 / n_i``: the "pooled CDF" of Dunn, Wasserman & Ramdas, 2022) and takes the finite-sample
level over the number of LOTS: the smallest score where the pooled CDF of the ``L``
calibration lots and a new lot at infinity reaches ``coverage``, i.e. ``F(s) >= (L + 1) *
coverage / L``. With one window per lot the pooled CDF moves in steps of ``1 / L``, so this is
:func:`conformal_level` ``= ceil((L + 1) * coverage) / L`` and exactly split conformal
prediction (the MAPIE quantile).

What is guaranteed, and what is not:

* **Guaranteed**: for a new lot exchangeable with the calibration lots (same plant, same
  process, same model), a window drawn from it at random lies inside the calibrated interval
  *marginally*: on average over lots and windows, not for every lot, every step of the
  horizon or every operating regime. With one window per lot that is exact split conformal:
  coverage in ``[coverage, coverage + 1 / (L + 1))``. With many windows per lot the pooled
  CDF's proven worst case is ``1 - 2 * (1 - coverage)`` (0.6 at 80 %; Dunn et al.); the
  simulations in ``tests/calibration/test_conformal.py`` (lots of 5-60 windows, within-lot
  correlation 0.6) find it at nominal plus the finite-sample allowance ``1 / (L + 1)``.
* **Not guaranteed**: under drift (the process, sensors or product mix change after the
  validation lots), for lots that are not exchangeable with the calibration lots (another
  line, another plant, a selected subset such as "lots that failed early"), or conditional on
  a lot's features. The watch (``mfgtx watch``) reports realized coverage when the history has
  truth; a band that stops holding is a drift signal, not a calibration bug.
* With fewer than ``ceil(coverage / (1 - coverage))`` lots (4 at 80 %) the level caps at 1:
  the margin is the largest validation score and the guarantee does not hold (a
  :class:`CalibrationWarning` says so).

The result, :class:`IntervalCalibration`, is plain numbers that travel in the model bundle and
are applied wherever intervals come out, then clipped to the target's physical range
(remaining life >= 0).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from mfgtx.calibration._common import CalibrationWarning, _as_float_array

__all__ = [
    "BUNDLE_KEY",
    "METHODS",
    "IntervalCalibration",
    "bins_for",
    "conformal_level",
    "fit_cqr",
    "fit_split",
    "horizon_block_for",
    "lot_quantile",
    "min_lots",
]

METHODS = ("conformal", "cqr")
#: Where a bundle keeps its :class:`IntervalCalibration` (``manifest.json``, ``extra``).
BUNDLE_KEY = "interval_calibration"
Method = Literal["conformal", "cqr"]

Bound = float | None


def _check_coverage(coverage: object) -> float:
    if isinstance(coverage, bool) or not isinstance(coverage, int | float):
        raise ValueError(f"coverage must be a number in (0, 1), found {coverage!r}")
    c = float(coverage)
    if not 0.0 < c < 1.0:
        raise ValueError(f"coverage must lie strictly between 0 and 1 (e.g. 0.8), found {c!r}")
    return c


def _rank(n: int, coverage: float) -> int:
    """``ceil((n + 1) * coverage)``, robust to float error (0.7 * 10 is 7.000000000000001)."""
    return math.ceil(round((n + 1) * coverage, 9))


def conformal_level(n: int, coverage: float) -> float:
    """The finite-sample quantile level ``ceil((n + 1) * coverage) / n``, capped at 1.

    Args:
        n: the number of exchangeable units: calibration LOTS, not windows.
        coverage: the nominal coverage, e.g. 0.8.

    Example:
        >>> conformal_level(9, 0.8)
        0.8888888888888888
        >>> conformal_level(3, 0.8)  # too few lots: capped (no guarantee)
        1.0
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"the number of calibration lots must be a positive integer, found {n!r}")
    c = _check_coverage(coverage)
    return min(1.0, _rank(int(n), c) / int(n))


def min_lots(coverage: float) -> int:
    """The fewest lots for which the level stays below 1 (the guarantee holds): 4 at 80 %.

    Example:
        >>> min_lots(0.8), min_lots(0.9)
        (4, 9)
    """
    c = _check_coverage(coverage)
    n = 1
    while _rank(n, c) > n:
        n += 1
    return n


def lot_quantile(scores: np.ndarray, lots: np.ndarray, coverage: float) -> float:
    """The conformal quantile of window scores, exchangeable by lot.

    Every lot weighs 1 in total, each of its ``n_i`` windows ``1 / n_i`` (the lot's own score
    distribution, pooled over lots), and the level counts lots ``L``: the result is the smallest
    score ``s`` with ``sum_i F_i(s) / (L + 1) >= coverage`` (the new lot's own score counted
    as infinite) where ``F_i`` is lot ``i``'s empirical distribution. One window per lot gives
    the ``ceil((L + 1) * coverage)``-th smallest score (level :func:`conformal_level`), the
    split-conformal quantile; a lot with a thousand windows counts as one lot, not a
    thousand. Scores that are NaN (no truth for that window) are left out, and a lot whose
    scores are all NaN does not count.

    Args:
        scores: ``(N,)`` nonconformity scores, one per window.
        lots: ``(N,)`` the lot of each window (any labels).
        coverage: nominal coverage in (0, 1).

    Returns:
        The quantile (the largest score when the level caps at 1, with a warning).

    Example:
        >>> s = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
        >>> lot_quantile(s, np.arange(10), 0.8)  # 10 lots: the 9th smallest
        9.0
        >>> lot_quantile(s, np.repeat([0, 1], 5), 0.8)  # 2 lots of 5 windows: no guarantee
        10.0
    """
    c = _check_coverage(coverage)
    s = _as_float_array(scores)
    g = np.asarray(lots)
    if s.ndim != 1 or g.shape != s.shape:
        raise ValueError(
            f"lot_quantile: scores and lots must be (N,) arrays of one length, found "
            f"{s.shape} and {g.shape}"
        )
    keep = np.isfinite(s)
    if np.isinf(s[~np.isnan(s)]).any():
        raise ValueError("lot_quantile: a nonconformity score is infinite (a prediction is inf)")
    s, g = s[keep], g[keep]
    if s.size == 0:
        raise ValueError("lot_quantile: no calibration window with a finite score (no truth)")
    _, lot_index, per_lot = np.unique(g, return_inverse=True, return_counts=True)
    n_lots = per_lot.size
    level = min(1.0, (n_lots + 1) * c / n_lots)  # conformal_level without its ceil (pooled)
    if _rank(n_lots, c) > n_lots:
        warnings.warn(
            f"conformal calibration on {n_lots} lot(s): {min_lots(c)} are needed for a "
            f"{c:.0%} guarantee; the margin is the largest validation score and the interval "
            "is not guaranteed (use more validation lots or a larger split.val_size)",
            CalibrationWarning,
            stacklevel=2,
        )
    weight = 1.0 / (n_lots * per_lot[lot_index])  # (N,) each lot sums to 1 / L
    order = np.argsort(s, kind="stable")
    cdf = np.cumsum(weight[order])
    # ties: the CDF at a score counts all windows with that score
    i = int(np.searchsorted(cdf, level - 1e-9, side="left"))
    return float(s[order][min(i, s.size - 1)])


def _bin_of(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The Mondrian bin of each value: how many of its edges it exceeds. ``values`` ``(n,)``
    with ``edges`` ``(B - 1,)``, or ``(n, P)`` with ``(B - 1, P)`` (one set per cell); the one
    rule for fitting (:func:`bins_for`, :func:`_mondrian`) and applying
    (:meth:`IntervalCalibration.margin_for`)."""
    return (values[:, None, ...] > edges[None]).sum(axis=1)


def bins_for(point: np.ndarray, lots: np.ndarray, coverage: float, most: int = 4) -> int:
    """The default Mondrian ``bins`` of a regressor: the most (up to ``most``) equal shares of
    its validation predictions ``point`` (``(N,)`` or ``(N, T)``) in which every bin of every
    target still holds :func:`min_lots` lots (4 at 80 %), so each bin's margin keeps the
    guarantee; 1 where even two bins would not.

    A lot whose windows span the whole range (a machine run from new to failure) counts in
    every bin; lots that each sit in one range split the lots between the bins.

    Example:
        >>> spanning = np.tile(np.arange(10.0), 10); machines = np.repeat(np.arange(10), 10)
        >>> bins_for(spanning, machines, 0.8), bins_for(np.arange(8.0), np.arange(8), 0.8)
        (4, 2)
        >>> bins_for(np.arange(5.0), np.zeros(5), 0.8)  # one lot: one margin
        1
    """
    g = np.asarray(lots)
    p = np.asarray(point, dtype=np.float64).reshape(len(g), -1)
    need = min_lots(coverage)
    for b in range(most, 1, -1):
        fits = True
        for k in range(p.shape[1]):
            edges = np.quantile(p[:, k], np.arange(1, b) / b)
            which = _bin_of(p[:, k], edges)
            if any(np.unique(g[which == j]).size < need for j in range(b)):
                fits = False
                break
        if fits:
            return b
    return 1


def horizon_block_for(steps: int, lots: int) -> int:
    """The default ``horizon_block`` of a ``steps``-step forecaster calibrated on ``lots``
    validation lots: the horizon cut into as many blocks as there are lots
    (``ceil(steps / lots)`` steps each), so a margin is shared by more steps where lots are
    few, and every step has its own once there are as many lots as steps.

    Example:
        >>> horizon_block_for(96, 10), horizon_block_for(96, 200), horizon_block_for(8, 0)
        (10, 1, 8)
    """
    if steps < 1:
        raise ValueError(f"horizon_block_for: steps must be positive, found {steps}")
    return max(1, -(-steps // max(lots, 1)))


def _lot_quantiles(
    scores: np.ndarray, lots: np.ndarray, coverage: float, horizon_block: int
) -> np.ndarray:
    """Per-cell :func:`lot_quantile` of ``(N, *S)`` scores, ``S`` flattened: ``(prod(S),)``.

    ``horizon_block > 1`` (forecaster, ``S = (H, C)``) pools the scores of ``horizon_block``
    consecutive steps of one channel into one quantile, shared by those steps: each lot still
    weighs 1, so pooling adds windows per lot (a steadier quantile), never lots.
    """
    n = scores.shape[0]
    shape = scores.shape[1:]
    if horizon_block == 1 or len(shape) != 2:
        flat = scores.reshape(n, -1)  # (N, prod(S))
        return np.array([lot_quantile(flat[:, k], lots, coverage) for k in range(flat.shape[1])])
    steps, channels = shape
    margin = np.empty(shape)
    for start in range(0, steps, horizon_block):
        block = scores[:, start : start + horizon_block, :]  # (N, b, C)
        b = block.shape[1]
        for ch in range(channels):
            pooled = block[:, :, ch].reshape(-1)  # (N * b,) window-major
            margin[start : start + b, ch] = lot_quantile(pooled, np.repeat(lots, b), coverage)
    return margin.reshape(-1)


# -------------------------------------------------------------------- the record


def _bounds(value: Iterable[object] | None, n: int, name: str) -> tuple[Bound, ...]:
    if value is None:
        return ()
    seq = tuple(value)
    if len(seq) not in (0, n):
        raise ValueError(
            f"{name}: one physical bound per target/channel ({n}) or none, found {len(seq)}"
        )
    out: list[Bound] = []
    for b in seq:
        if b is None:
            out.append(None)
        elif isinstance(b, bool) or not isinstance(b, int | float) or math.isnan(b):
            raise ValueError(f"{name}: a bound must be a number or None, found {b!r}")
        else:
            out.append(float(b))
    return tuple(out)


@dataclass(frozen=True)
class IntervalCalibration:
    """A conformal interval calibration: one margin per cell, fitted on validation lots.

    Args:
        method: ``"conformal"`` (split conformal around the point prediction) or ``"cqr"``
            (widen the model's own quantile band).
        coverage: the nominal coverage the margin was fitted for, e.g. 0.8.
        margin: ``prod(shape)`` margins, flattened in C order; negative for CQR when the
            model's band was too wide (the band narrows).
        shape: the calibrated shape ``S``: ``(T,)`` targets, or ``(H, C)`` for a forecaster.
        lots: how many calibration lots the margin rests on.
        lower, upper: the physical range per target (or per channel, the last axis of
            ``shape``), ``None`` for unbounded; an empty tuple for no bound at all.
        edges: Mondrian bins of the point prediction (``(B - 1) * prod(shape)`` numbers,
            ``(B - 1, *S)`` in C order; empty: one bin): a window's margin is that of the bin
            its point prediction falls in (``point > edge`` counts the edges passed), and
            ``margin`` then holds ``B * prod(shape)`` numbers, ``(B, *S)``.

    Example:
        >>> cal = IntervalCalibration("conformal", 0.8, (2.0,), (1,), 12, lower=(0.0,))
        >>> low, high = cal.apply(np.array([[1.0], [10.0]]))
        >>> low.ravel().tolist(), high.ravel().tolist()
        ([0.0, 8.0], [3.0, 12.0])
        >>> IntervalCalibration.from_dict(cal.to_dict()) == cal
        True
    """

    method: Method
    coverage: float
    margin: tuple[float, ...]
    shape: tuple[int, ...]
    lots: int
    lower: tuple[Bound, ...] = ()
    upper: tuple[Bound, ...] = ()
    edges: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, found {self.method!r}")
        _check_coverage(self.coverage)
        shape = tuple(int(d) for d in self.shape)
        if not shape or any(d < 1 for d in shape):
            raise ValueError(f"shape must be positive dimensions, found {self.shape!r}")
        margin = tuple(float(m) for m in self.margin)
        edges = tuple(float(e) for e in self.edges)
        cells = math.prod(shape)
        if len(edges) % cells or not all(math.isfinite(e) for e in edges):
            raise ValueError(
                f"edges must be finite, (bins - 1) per cell of the shape {shape}, found "
                f"{len(edges)}"
            )
        bins = len(edges) // cells + 1
        if len(margin) != bins * cells:
            raise ValueError(
                f"margin holds {len(margin)} numbers, the shape {shape} with {bins} bin(s) "
                f"needs {bins * cells}"
            )
        if bins > 1 and (np.diff(np.reshape(edges, (bins - 1, cells)), axis=0) < 0).any():
            raise ValueError("edges must not decrease from one bin to the next")
        if not all(math.isfinite(m) for m in margin):
            raise ValueError("every margin must be a finite number")
        if self.method == "conformal" and any(m < 0 for m in margin):
            raise ValueError("a split-conformal margin is a quantile of |y - point|: never < 0")
        if isinstance(self.lots, bool) or int(self.lots) < 1:
            raise ValueError(f"lots must be a positive count, found {self.lots!r}")
        lower = _bounds(self.lower, shape[-1], "lower")
        upper = _bounds(self.upper, shape[-1], "upper")
        n = shape[-1]
        for lo, hi in zip(lower or (None,) * n, upper or (None,) * n, strict=True):
            if lo is not None and hi is not None and lo > hi:
                raise ValueError(f"physical range [{lo}, {hi}] is empty (lower > upper)")
        object.__setattr__(self, "shape", shape)
        object.__setattr__(self, "margin", margin)
        object.__setattr__(self, "edges", edges)
        object.__setattr__(self, "lots", int(self.lots))
        object.__setattr__(self, "coverage", float(self.coverage))
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def bins(self) -> int:
        """How many Mondrian bins of the point prediction the margins are per (1: none)."""
        return len(self.edges) // math.prod(self.shape) + 1

    @property
    def margins(self) -> np.ndarray:
        """The margins as an array of ``shape`` (``(bins, *shape)`` with bins)."""
        m = np.asarray(self.margin, dtype=np.float64)
        return m.reshape(self.shape if self.bins == 1 else (self.bins, *self.shape))

    def margin_for(self, point: np.ndarray | None) -> np.ndarray:
        """The margin of each window, ``(..., *S)`` (or ``S`` without bins): the margin of the
        bin each cell's point prediction falls in.

        Raises:
            ValueError: binned margins without the point prediction.
        """
        if self.bins == 1:
            return self.margins
        if point is None:
            raise ValueError("a calibration by bins of the prediction needs the point prediction")
        p = self._check(point, "point")
        cells = math.prod(self.shape)
        flat = p.reshape(-1, cells)  # (n, P)
        edges = np.reshape(self.edges, (self.bins - 1, cells))  # (B - 1, P)
        which = _bin_of(flat, edges)  # (n, P) the bin of each cell
        m = self.margins.reshape(self.bins, cells)[which, np.arange(cells)]
        return m.reshape(p.shape)

    def clip(self, values: np.ndarray) -> np.ndarray:
        """``values`` (``(..., *S)``) clipped to the physical range (e.g. remaining life >= 0)."""
        v = np.asarray(values, dtype=np.float64)
        if not self.lower and not self.upper:
            return v
        n = self.shape[-1]
        lo = np.array([-np.inf if b is None else b for b in (self.lower or (None,) * n)])
        hi = np.array([np.inf if b is None else b for b in (self.upper or (None,) * n)])
        return np.clip(v, lo, hi)  # (C,) broadcasts over the last axis

    def apply(
        self,
        point: np.ndarray | None,
        low: np.ndarray | None = None,
        high: np.ndarray | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The calibrated interval ``(low, high)``, each ``(..., *S)``, clipped to the range.

        ``conformal`` needs ``point`` (``point -/+ margin``); ``cqr`` needs the model's ``low``
        and ``high`` (``low - margin``, ``high + margin``; where a negative margin crosses the
        two edges they are swapped, which only widens an empty band). With Mondrian
        :attr:`bins` both need ``point`` to choose each window's margin. Arrays may carry any
        leading axes (windows, lots) before ``S``.
        """
        if self.method == "conformal" and point is None:
            raise ValueError("a split-conformal calibration needs the point prediction")
        m = self.margin_for(point)
        if self.method == "conformal":
            assert point is not None  # refused above
            p = self._check(point, "point")
            lo, hi = p - m, p + m
        else:
            if low is None or high is None:
                raise ValueError("a CQR calibration needs the model's low and high quantiles")
            lo, hi = self._check(low, "low") - m, self._check(high, "high") + m
            lo, hi = np.minimum(lo, hi), np.maximum(lo, hi)
        return self.clip(lo), self.clip(hi)

    def _check(self, a: np.ndarray, name: str) -> np.ndarray:
        x = _as_float_array(a)
        if x.shape[x.ndim - len(self.shape) :] != self.shape:
            raise ValueError(
                f"{name}: the calibration was fitted for shape {self.shape} (trailing axes), "
                f"found {x.shape}; was the bundle's calibration fitted for another model?"
            )
        return x

    def to_dict(self) -> dict[str, Any]:
        """Plain numbers for the bundle's JSON."""
        return {
            "method": self.method,
            "coverage": self.coverage,
            "margin": list(self.margin),
            "shape": list(self.shape),
            "lots": self.lots,
            "lower": list(self.lower),
            "upper": list(self.upper),
            **({"edges": list(self.edges)} if self.edges else {}),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> IntervalCalibration:
        """The record :meth:`to_dict` wrote (errors name the missing key)."""
        missing = [k for k in ("method", "coverage", "margin", "shape", "lots") if k not in d]
        if missing:
            raise ValueError(f"interval calibration record lacks {missing} (found {sorted(d)})")
        return cls(
            method=d["method"],
            coverage=d["coverage"],
            margin=tuple(d["margin"]),
            shape=tuple(d["shape"]),
            lots=d["lots"],
            lower=tuple(d.get("lower", ())),
            upper=tuple(d.get("upper", ())),
            edges=tuple(d.get("edges", ())),
        )


# -------------------------------------------------------------------- fitting


def _check_fit(y: object, pred: dict[str, object], lots: object) -> tuple[np.ndarray, ...]:
    yy = _as_float_array(y)
    if yy.ndim == 1:
        yy = yy[:, None]  # (N,) -> (N, 1): one target
    out = [yy]
    for name, p in pred.items():
        pp = _as_float_array(p)
        if pp.ndim == 1:
            pp = pp[:, None]
        if pp.shape != yy.shape:
            raise ValueError(f"{name} has shape {pp.shape}, the truth y has {yy.shape}")
        if not np.isfinite(pp).all():
            raise ValueError(f"{name}: a prediction is NaN or infinite; cannot calibrate")
        out.append(pp)
    g = np.asarray(lots)
    if g.shape != (yy.shape[0],):
        raise ValueError(f"lots must be ({yy.shape[0]},), one lot per window, found {g.shape}")
    return (*out, g)


def fit_split(
    y: np.ndarray,
    point: np.ndarray,
    lots: np.ndarray,
    coverage: float,
    *,
    lower: tuple[Bound, ...] | None = None,
    upper: tuple[Bound, ...] | None = None,
    horizon_block: int = 1,
    bins: int = 1,
) -> IntervalCalibration:
    """Split conformal around a point prediction: margin = lot quantile of ``|y - point|``.

    Args:
        y, point: ``(N, *S)`` (or ``(N,)`` for one target) truth and prediction on the
            validation windows; NaN truth is left out.
        lots: ``(N,)`` the lot of each window.
        coverage: nominal coverage, e.g. 0.8.
        lower, upper: physical range per target/channel (``None`` entries unbounded).
        horizon_block: forecaster ``S = (H, C)`` only: pool this many consecutive horizon
            steps per quantile (steadier where lots are few).
        bins: Mondrian calibration (Vovk et al., 2005): cut each cell's validation point
            predictions into this many bins of equal share, one margin per bin, each the lot
            quantile of the windows predicted in it, so the band holds ``coverage`` within
            each range of the prediction (a remaining life of 20 cycles is judged among
            windows predicted near 20, not mostly among easy young machines); 1: one margin.

    Example:
        >>> rng = np.random.default_rng(0)
        >>> y = rng.normal(size=200); lots = np.repeat(np.arange(20), 10)
        >>> cal = fit_split(y, np.zeros(200), lots, 0.8)
        >>> cal.method, cal.shape, cal.lots
        ('conformal', (1,), 20)
    """
    yy, pp, g = _check_fit(y, {"point": point}, lots)
    scores = np.abs(yy - pp)  # (N, *S)
    return _record("conformal", scores, g, coverage, lower, upper, horizon_block, pp, bins)


def fit_cqr(
    y: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    lots: np.ndarray,
    coverage: float,
    *,
    lower: tuple[Bound, ...] | None = None,
    upper: tuple[Bound, ...] | None = None,
    horizon_block: int = 1,
    bins: int = 1,
    point: np.ndarray | None = None,
) -> IntervalCalibration:
    """Conformalized quantile regression: margin = lot quantile of ``max(low - y, y - high)``.

    Arguments as :func:`fit_split`, with the model's ``low`` and ``high`` quantiles
    (e.g. q10 and q90) in place of the point prediction; ``bins > 1`` bins by ``point``.

    Example:
        >>> y = np.arange(10.0); lots = np.arange(10)
        >>> fit_cqr(y, y - 1, y + 1, lots, 0.8).margin  # a band too wide narrows
        (-1.0,)
    """
    if bins != 1 and point is None:
        raise ValueError("fit_cqr: bins of the prediction need the point prediction")
    given: dict[str, object] = {"low": low, "high": high}
    if point is not None:
        given["point"] = point
    yy, lo, hi, *pp, g = _check_fit(y, given, lots)
    scores = np.maximum(lo - yy, yy - hi)  # (N, *S), NaN where y is NaN
    return _record(
        "cqr", scores, g, coverage, lower, upper, horizon_block, pp[0] if pp else None, bins
    )


def _record(
    method: Method,
    scores: np.ndarray,
    lots: np.ndarray,
    coverage: float,
    lower: tuple[Bound, ...] | None,
    upper: tuple[Bound, ...] | None,
    horizon_block: int,
    point: np.ndarray | None = None,
    bins: int = 1,
) -> IntervalCalibration:
    if isinstance(horizon_block, bool) or not isinstance(horizon_block, int) or horizon_block < 1:
        raise ValueError(f"horizon_block must be a positive integer, found {horizon_block!r}")
    if isinstance(bins, bool) or not isinstance(bins, int) or bins < 1:
        raise ValueError(f"bins must be a positive integer, found {bins!r}")
    if bins > 1 and horizon_block != 1:
        raise ValueError("bins and horizon_block > 1 cannot be combined")
    c = _check_coverage(coverage)
    n = len(lots)
    n_lots = int(np.unique(lots[np.isfinite(scores.reshape(n, -1)).any(axis=1)]).size)
    edges: tuple[float, ...] = ()
    if bins == 1:
        margin = _lot_quantiles(scores, lots, c, horizon_block)
    else:
        assert point is not None
        edge, margin = _mondrian(scores.reshape(n, -1), point.reshape(n, -1), lots, c, bins)
        edges = tuple(edge.ravel().tolist())
    return IntervalCalibration(
        method=method,
        coverage=c,
        margin=tuple(np.ravel(margin).tolist()),
        shape=tuple(scores.shape[1:]),
        lots=n_lots,
        lower=lower or (),
        upper=upper or (),
        edges=edges,
    )


def _mondrian(
    scores: np.ndarray, point: np.ndarray, lots: np.ndarray, coverage: float, bins: int
) -> tuple[np.ndarray, np.ndarray]:
    """Edges ``(bins - 1, P)`` (each cell's validation predictions cut in ``bins`` equal
    shares) and margins ``(bins, P)``: each the :func:`lot_quantile` of the windows predicted
    in that bin (a bin left empty by ties takes the cell's margin over every window)."""
    cells = scores.shape[1]
    edges = np.empty((bins - 1, cells))
    margin = np.empty((bins, cells))
    for k in range(cells):
        seen = np.isfinite(scores[:, k])
        edges[:, k] = np.quantile(point[seen, k], np.arange(1, bins) / bins)
        which = _bin_of(point[:, k], edges[:, k])
        everything = None
        for b in range(bins):
            here = (which == b) & seen
            if here.any():
                margin[b, k] = lot_quantile(scores[here, k], lots[here], coverage)
            else:
                if everything is None:
                    everything = lot_quantile(scores[seen, k], lots[seen], coverage)
                margin[b, k] = everything
    return edges, margin
