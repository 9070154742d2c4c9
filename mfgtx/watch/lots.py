"""Lot by lot: how far a few whole training lots lie from the other training lots.

Shape legend: ``L`` training lots kept, ``Q`` quantiles per lot, ``B`` groups drawn, ``k``
lots per group, ``M`` points of all lots together.

A plant's readings come in lots, and lots differ (line, grade, material) more than readings
within one lot do. A few recent lots therefore lie further from the pooled training
distribution than as many independent readings would, even when nothing changed. To judge a
watch of ``k`` recent lots fairly, the training profile keeps each training lot's readings
in a few numbers (:class:`LotSummaries`: count, min, max and :data:`LOT_QUANTILES`
quantiles; at most :data:`MAX_LOTS` lots, an evenly spaced deterministic subsample of more),
and :func:`lot_limits` draws groups of ``k`` training lots, compares each group with the
*other* training lots the way the watch compares recent lots with training, and gives the
distance and the share outside the range that such groups exceed only in a given share of
draws (the false-alarm rate). The draws are seeded: the same bundle and recent lots always
give the same limits.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> level = rng.normal(0.0, 1.0, 30)  # (L,) each lot's own level
    >>> values = np.repeat(level, 50) + rng.normal(0.0, 0.3, 1500)  # (R,) 50 readings a lot
    >>> lots = LotSummaries.of(values, np.repeat(np.arange(30), 50))
    >>> lots.n_lots, len(lots.quantiles[0])
    (30, 10)
    >>> limit = lot_limits(lots, 3, 0.01)
    >>> limit.lots, limit.draws, round(float(limit.distance / values.std()), 1)  # spreads
    (3, 2000, 1.6)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import norm

__all__ = [
    "DRAWS",
    "LOT_QUANTILES",
    "MAX_LOTS",
    "MIN_LOTS",
    "LotLimits",
    "LotSummaries",
    "key_words",
    "lot_distance",
    "lot_limits",
]

#: Quantiles kept per training lot (at the levels ``(i + 0.5) / LOT_QUANTILES``).
LOT_QUANTILES = 10
#: Training lots kept per sensor (and regime); more are subsampled, evenly spaced.
MAX_LOTS = 100
#: Fewer training lots than this leave the watch judging readings as independent draws.
MIN_LOTS = 5
#: Groups of lots drawn to find the limits (all groups when there are fewer).
DRAWS = 2000
_SEED = 20260302


def _round(x: float) -> float:
    return float(f"{x:.6g}")


@dataclass(frozen=True)
class LotSummaries:
    """One sensor's training readings lot by lot (lots without a reading left out).

    Attributes:
        counts: ``(L,)`` readings of each lot.
        mins, maxs: ``(L,)`` each lot's lowest and highest reading.
        quantiles: ``(L, Q)`` each lot's readings at the levels ``(i + 0.5) / Q``.
        keys: ``(L,)`` each lot's values of the job's key columns (``data.columns.keys``:
            its line, press, machine), as text in the columns' order (``None``: a lot
            without them); ``None`` when training told no keys (or an older profile).
    """

    counts: tuple[int, ...]
    mins: tuple[float, ...]
    maxs: tuple[float, ...]
    quantiles: tuple[tuple[float, ...], ...]
    keys: tuple[tuple[str, ...] | None, ...] | None = None

    @property
    def n_lots(self) -> int:
        return len(self.counts)

    def subset(self, idx: Sequence[int]) -> LotSummaries:
        """The summaries of the lots ``idx`` only."""
        keys = None if self.keys is None else tuple(self.keys[i] for i in idx)
        return LotSummaries(
            tuple(self.counts[i] for i in idx),
            tuple(self.mins[i] for i in idx),
            tuple(self.maxs[i] for i in idx),
            tuple(self.quantiles[i] for i in idx),
            keys,
        )

    def of_key(self, key: tuple[str, ...]) -> LotSummaries:
        """The summaries of the lots whose key values are ``key`` (none: no lot)."""
        keys = self.keys or ()
        return self.subset([i for i, k in enumerate(keys) if k == key])

    @property
    def grouped(self) -> bool:
        """Whether the lots' key values group them: known, and repeating (fewer distinct
        values than half the lots; a key that names each lot apart, an order number, does
        not group)."""
        if self.keys is None:
            return False
        told = [k for k in self.keys if k is not None]
        return bool(told) and len(set(told)) <= len(told) / 2

    @classmethod
    def of(
        cls,
        values: np.ndarray,
        lot: np.ndarray,
        keys: Sequence[tuple[str, ...] | None] | None = None,
    ) -> LotSummaries:
        """The summaries of readings ``values`` ``(R,)`` (NaN: missing) whose lot index is
        ``lot`` ``(R,)`` (``-1``: a row of no lot, left out); lots in index order.
        ``keys``: each lot index's key values (``None``: no keys told)."""
        values = np.asarray(values, dtype=np.float64)
        lot = np.asarray(lot)
        keep = np.isfinite(values) & (lot >= 0)
        values, lot = values[keep], lot[keep]
        ids = np.unique(lot)  # (L_all,) sorted: the order the lots were numbered in
        if len(ids) > MAX_LOTS:
            ids = ids[np.linspace(0, len(ids) - 1, MAX_LOTS).round().astype(int)]
        levels = (np.arange(LOT_QUANTILES) + 0.5) / LOT_QUANTILES  # (Q,)
        counts, mins, maxs, qs = [], [], [], []
        for i in ids:
            own = values[lot == i]
            counts.append(int(own.size))
            mins.append(_round(own.min()))
            maxs.append(_round(own.max()))
            qs.append(tuple(_round(q) for q in np.quantile(own, levels)))
        told = None if keys is None else tuple(keys[int(i)] for i in ids)
        return cls(tuple(counts), tuple(mins), tuple(maxs), tuple(qs), told)

    def to_dict(self) -> dict[str, Any]:
        keys = {}
        if self.keys is not None:
            keys = {"keys": [None if k is None else list(k) for k in self.keys]}
        return {
            "counts": list(self.counts),
            "mins": list(self.mins),
            "maxs": list(self.maxs),
            "quantiles": [list(q) for q in self.quantiles],
            **keys,
        }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> LotSummaries:
        out = cls(
            tuple(int(c) for c in state["counts"]),
            tuple(float(x) for x in state["mins"]),
            tuple(float(x) for x in state["maxs"]),
            tuple(tuple(float(x) for x in q) for q in state["quantiles"]),
            None
            if state.get("keys") is None
            else tuple(None if k is None else tuple(str(v) for v in k) for k in state["keys"]),
        )
        n = out.n_lots
        if len(out.mins) != n or len(out.maxs) != n or len(out.quantiles) != n:
            raise ValueError(f"lot summaries of {n} lots with {len(out.quantiles)} quantile rows")
        if out.keys is not None and len(out.keys) != n:
            raise ValueError(f"lot summaries of {n} lots with key values of {len(out.keys)}")
        if len({len(q) for q in out.quantiles}) > 1:
            raise ValueError("lot summaries whose lots hold different numbers of quantiles")
        return out


def key_words(columns: Sequence[str], key: tuple[str, ...]) -> str:
    """A key in plant words: ``line L3``, ``line L3, press P2``."""
    return ", ".join(f"{c} {v}" for c, v in zip(columns, key, strict=False))


@dataclass(frozen=True)
class LotLimits:
    """What groups of ``lots`` training lots exceed in only ``rate`` of draws.

    Attributes:
        lots: the lots per group (the recent lots, at most half the training lots).
        draws: the groups drawn (all possible groups when fewer than :data:`DRAWS`).
        distance: the Wasserstein distance (in the sensor's unit) of a group from the other
            training lots.
        outside: the share of a group's readings outside the other training lots' range.
    """

    lots: int
    draws: int
    distance: float
    outside: float


def _groups(n_lots: int, k: int) -> np.ndarray:
    """``(B, k)`` lot indices: every group of ``k`` when there are at most :data:`DRAWS`,
    else :data:`DRAWS` seeded draws without replacement."""
    if math.comb(n_lots, k) <= DRAWS:
        return np.array(list(combinations(range(n_lots), k)), dtype=np.int64)
    rng = np.random.default_rng(_SEED)
    return np.argsort(rng.random((DRAWS, n_lots)), axis=1)[:, :k]


def _share_below(xs: np.ndarray, ys: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Each lot's share of readings below ``at`` by linear interpolation of its knots
    ``xs`` ``(..., Q + 2)`` (min, quantiles, max) at ``ys`` ``(Q + 2,)``; ``at`` ``(...)``."""
    at = at[..., None]  # (..., 1)
    idx = np.clip((xs < at).sum(axis=-1), 1, xs.shape[-1] - 1)[..., None]  # (..., 1)
    x0 = np.take_along_axis(xs, idx - 1, axis=-1)[..., 0]
    x1 = np.take_along_axis(xs, idx, axis=-1)[..., 0]
    y0, y1 = ys[idx[..., 0] - 1], ys[idx[..., 0]]
    width = np.where(x1 > x0, x1 - x0, 1.0)
    t = np.clip((at[..., 0] - x0) / width, 0.0, 1.0)
    share = y0 + t * (y1 - y0)
    return np.where(at[..., 0] <= xs[..., 0], 0.0, np.where(at[..., 0] > xs[..., -1], 1.0, share))


def _mixture_distance(qa: np.ndarray, wa: np.ndarray, qb: np.ndarray, wb: np.ndarray) -> np.ndarray:
    """Wasserstein distances between mixtures of lots: lots' quantiles ``qa`` ``(La, Q)``
    weighted ``wa`` ``(B, La)`` against ``qb`` ``(Lb, Q)`` weighted ``wb`` ``(B, Lb)``
    (weights summing to 1 per row); ``(B,)``."""
    points = np.sort(np.concatenate([qa.ravel(), qb.ravel()]))  # (M,)
    cdf_a = (qa[:, :, None] <= points[None, None, :]).mean(axis=1)  # (La, M) each lot's CDF
    cdf_b = (qb[:, :, None] <= points[None, None, :]).mean(axis=1)  # (Lb, M)
    gap = wa @ cdf_a[:, :-1] - wb @ cdf_b[:, :-1]  # (B, M - 1): F_a - F_b between points
    return np.abs(gap) @ np.diff(points)


def lot_distance(summaries: LotSummaries, values: np.ndarray, lot: np.ndarray) -> float:
    """The Wasserstein distance (the sensor's unit) of recent readings ``values`` ``(R,)``
    from the training lots, both summarized lot by lot as :func:`lot_limits` draws them
    (so that the distance and its limit are measured alike); ``lot`` ``(R,)`` each
    reading's lot."""
    recent = LotSummaries.of(values, pd.factorize(pd.Series(lot))[0])
    qa = np.asarray(recent.quantiles, dtype=np.float64)
    qb = np.asarray(summaries.quantiles, dtype=np.float64)
    wa = np.asarray(recent.counts, dtype=np.float64)[None, :]
    wb = np.asarray(summaries.counts, dtype=np.float64)[None, :]
    return float(_mixture_distance(qa, wa / wa.sum(), qb, wb / wb.sum())[0])


@lru_cache(maxsize=256)  # a watch asks once per sensor and regime; a test or a demo, often
def lot_limits(
    summaries: LotSummaries, lots: int, rate: float, *, tail: bool = False
) -> LotLimits | None:
    """The distance and outside share that groups of ``lots`` training lots exceed, when
    each is compared with the other training lots, in no more than ``rate`` of draws
    (``None``: fewer than :data:`MIN_LOTS` training lots, or ``lots`` < 1).

    A group's readings and the other lots' readings are each the mixture of their lots'
    quantiles, every lot weighted by its readings, as the recent readings weigh them.

    ``tail``: where the groups are too few for the rate (fewer than ``10 / rate``: the few
    training lots of one line, whose largest distance is exceeded far more often than
    ``rate``), each limit is at least what a half-normal of the groups' root mean square
    exceeds in ``rate`` of draws (2.58 times it at 1 %)."""
    n = summaries.n_lots
    if n < MIN_LOTS or lots < 1:
        return None
    k = min(lots, n // 2)  # fewer lots per group: a wider limit, never a narrower one
    groups = _groups(n, k)  # (B, k)
    counts = np.asarray(summaries.counts, dtype=np.float64)  # (L,)
    in_group = np.zeros((len(groups), n), dtype=bool)  # (B, L)
    np.put_along_axis(in_group, groups, True, axis=1)
    a = np.where(in_group, counts, 0.0)
    b = np.where(in_group, 0.0, counts)
    weights = a / a.sum(axis=1, keepdims=True) - b / b.sum(axis=1, keepdims=True)  # (B, L)
    qs = np.asarray(summaries.quantiles, dtype=np.float64)  # (L, Q)
    distances = _mixture_distance(qs, weights, qs, np.zeros_like(weights))  # (B,)
    mins = np.asarray(summaries.mins, dtype=np.float64)
    maxs = np.asarray(summaries.maxs, dtype=np.float64)
    low = np.where(in_group, np.inf, mins).min(axis=1)  # (B,) the other lots' range
    high = np.where(in_group, -np.inf, maxs).max(axis=1)
    knots = np.concatenate([mins[:, None], qs, maxs[:, None]], axis=1)[groups]  # (B, k, Q+2)
    q = qs.shape[1]
    ys = np.concatenate([[0.0], (np.arange(q) + 0.5) / q, [1.0]])  # (Q + 2,)
    below = _share_below(knots, ys, np.repeat(low[:, None], k, axis=1))  # (B, k)
    above = 1.0 - _share_below(knots, ys, np.repeat(high[:, None], k, axis=1))
    w = counts[groups] / counts[groups].sum(axis=1, keepdims=True)  # (B, k)
    outside = ((below + above) * w).sum(axis=1)  # (B,)
    level = 1.0 - rate
    distance = float(np.quantile(distances, level, method="higher"))
    beyond = float(np.quantile(outside, level, method="higher"))
    if tail and len(groups) * rate < 10:
        z = float(norm.ppf(1.0 - rate / 2))  # a half-normal's quantile at 1 - rate
        distance = max(distance, z * float(np.sqrt(np.mean(distances**2))))
        beyond = max(beyond, z * float(np.sqrt(np.mean(outside**2))))
    return LotLimits(k, len(groups), distance, min(beyond, 1.0))
