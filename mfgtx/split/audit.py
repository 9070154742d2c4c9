"""Prove a split free of the usual plant leaks: :func:`audit` and its :class:`AuditReport`.

Shape legend: ``N`` windows, ``R`` table rows.

The audit works on any split, ours (:class:`~mfgtx.split.SplitSets`) or one made by hand (a
mapping of ``"train"``, ``"test"`` and optional ``"val"`` window positions), and checks:

1. ``index_disjoint``: no window is in two sets.
2. ``lot_disjoint``: no lot is in two sets.
3. ``no_overlap``: no window's ``[start, end]`` interval intersects one of a later set
   (intervals that only touch at one instant do not overlap, as ``gap=0`` allows).
4. ``time_order_gap``: validation windows start ``>= max(train end) + gap``; test windows
   start ``>= max(train end) + gap`` and ``>= max(val end) + gap``.
5. ``label_availability``: training labels are known by the next set's first start,
   validation labels by the first test start.
6. ``scaler_train_only`` (with ``scaler``): the scaler saw training rows only.
7. ``coverage`` (for :class:`~mfgtx.split.SplitSets`): every window is in exactly one of
   train, val, test, purged, unused.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import pandas as pd

from mfgtx.split._times import WindowTimes, iso, parse_gap, window_times
from mfgtx.split.report import AuditReport, Check, LeakageError
from mfgtx.split.splitter import SplitSets

__all__ = ["audit"]

logger = logging.getLogger(__name__)

_SETS = ("train", "val", "test")
_MAX_EXAMPLES = 5


class _FittedOnRows(Protocol):
    def fitted_rows(self) -> np.ndarray: ...


@dataclass(frozen=True, eq=False)
class _Split:
    times: WindowTimes
    sets: dict[str, np.ndarray]  # train, val, test (val may be empty)
    others: dict[str, np.ndarray]  # purged and unused (SplitSets) or unassigned (hand-made)
    gap: pd.Timedelta

    def pairs(self) -> Iterable[tuple[str, str]]:
        """``(earlier, later)`` pairs of non-empty sets."""
        names = [n for n in _SETS if self.sets[n].size]
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def audit(
    X: Any,
    sets: SplitSets | Mapping[str, Any],
    *,
    gap: Any = None,
    scaler: _FittedOnRows | None = None,
    strict: bool = True,
) -> AuditReport:
    """Check a split for leakage between its sets.

    Args:
        X: the windows that were split: a :class:`mfgtx.data.Windows` or a DataFrame with
            columns ``lot``, ``start``, ``end`` and optionally ``label_time`` (taken as
            ``end`` when absent).
        sets: a :class:`~mfgtx.split.SplitSets`, or a mapping with ``"train"``, ``"test"`` and
            optionally ``"val"`` window positions.
        gap: the embargo to check (see :class:`~mfgtx.split.LotTimeSplit`); defaults to
            ``sets.gap`` for a :class:`~mfgtx.split.SplitSets`, required otherwise.
        scaler: a fitted scaler with ``fitted_rows()`` (e.g.
            :class:`mfgtx.data.SensorScaler`); needs ``X`` to be a ``Windows``.
        strict: raise :class:`LeakageError` if any check fails.

    Returns:
        The :class:`AuditReport`.

    Raises:
        LeakageError: a check failed and ``strict`` is true.
        ValueError: bad input (unknown set name, index out of range, no gap, ...).

    Example:
        >>> import pandas as pd
        >>> from mfgtx.split import LotTimeSplit
        >>> start = pd.date_range("2024-01-01", periods=6, freq="2h")
        >>> windows = pd.DataFrame({"lot": list("AABBCC"), "start": start,
        ...                         "end": start + pd.Timedelta("1h")})
        >>> sets = next(LotTimeSplit(test_size=1, gap="1h").split_sets(windows))
        >>> audit(windows, sets).failed
        ()
        >>> leaky = audit(windows, {"train": [0, 1, 2, 4], "test": [3, 5]}, gap="1h",
        ...               strict=False)
        >>> leaky.failed
        ('lot_disjoint', 'time_order_gap', 'label_availability')
    """
    times = window_times(X)
    split = _as_split(times, sets, gap)
    checks = [
        _index_disjoint(split),
        _lot_disjoint(split),
        _no_overlap(split),
        _time_order_gap(split),
        _label_availability(split),
    ]
    if scaler is not None:
        checks.append(_scaler_train_only(split, scaler))
    if isinstance(sets, SplitSets):
        checks.append(_coverage(split))
    report = AuditReport(checks=tuple(checks), summary=_summary(split, sets))
    if report.passed:
        logger.info("split audit passed %d checks", len(checks))
    else:
        logger.warning("split audit failed: %s", ", ".join(report.failed))
        if strict:
            raise LeakageError(report)
    return report


def _as_split(times: WindowTimes, sets: SplitSets | Mapping[str, Any], gap: Any) -> _Split:
    n = len(times)
    if isinstance(sets, SplitSets):
        given = {name: getattr(sets, name) for name in (*_SETS, "purged", "unused")}
        gap_value = sets.gap if gap is None else parse_gap(gap)
    elif isinstance(sets, Mapping):
        unknown = sorted(set(sets) - set(_SETS))
        if unknown or not {"train", "test"} <= set(sets):
            raise ValueError(
                f"sets must have keys 'train', 'test' and optionally 'val', found {sorted(sets)}"
            )
        if gap is None:
            raise ValueError("gap is required to audit a hand-made split, e.g. gap='2h'")
        given = {name: sets.get(name, []) for name in _SETS}
        gap_value = parse_gap(gap)
    else:
        raise ValueError(
            f"sets must be a SplitSets or a mapping of 'train'/'val'/'test' window positions, "
            f"found {type(sets).__name__}"
        )
    idx = {name: _positions(name, values, n) for name, values in given.items()}
    for name in ("train", "test"):
        if idx[name].size == 0:
            raise ValueError(f"the {name} set is empty: there is nothing to audit")
    others = {k: v for k, v in idx.items() if k not in _SETS}
    if not others:
        assigned = np.zeros(n, dtype=bool)
        for name in _SETS:
            assigned[idx[name]] = True
        others = {"unassigned": np.flatnonzero(~assigned)}
    return _Split(times, {k: idx[k] for k in _SETS}, others, gap_value)


def _positions(name: str, values: Any, n: int) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size == 0:
        return np.empty(0, dtype=np.int64)
    if arr.dtype == bool:
        raise ValueError(
            f"the {name} set is a boolean mask; pass window positions (numpy.flatnonzero(mask))"
        )
    if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(
            f"the {name} set must be a 1-D array of integer window positions, found dtype "
            f"{arr.dtype} and shape {arr.shape}"
        )
    if (bad := arr[(arr < 0) | (arr >= n)]).size:
        raise ValueError(
            f"the {name} set holds window position {bad[0]}, outside 0..{n - 1} "
            f"({bad.size} such positions)"
        )
    return arr.astype(np.int64)


def _preview(items: list[Any], k: int = _MAX_EXAMPLES) -> str:
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in items[:k])
    return shown + (f" and {len(items) - k} more" if len(items) > k else "")


def _windows(n: int | np.integer) -> str:
    return f"{n} window" if n == 1 else f"{n} windows"


def _index_disjoint(s: _Split) -> Check:
    clashes, examples = [], []
    for a, b in s.pairs():
        common = np.intersect1d(s.sets[a], s.sets[b])
        if common.size:
            clashes.append(f"{_windows(common.size)} in both {a} and {b} ({_preview(common)})")
            examples += [s.times.example(i, sets=[a, b]) for i in common[:_MAX_EXAMPLES]]
    if clashes:
        return Check("index_disjoint", False, "; ".join(clashes), tuple(examples[:_MAX_EXAMPLES]))
    n = sum(v.size for v in s.sets.values())
    return Check("index_disjoint", True, f"each of the {n} windows is in one set only")


def _lot_disjoint(s: _Split) -> Check:
    t, clashes, examples = s.times, [], []
    lots = {name: pd.unique(t.lot[idx]) for name, idx in s.sets.items()}
    n_clashes = 0
    for a, b in s.pairs():
        earlier = set(lots[a])
        shared = [v for v in lots[b] if v in earlier]
        n_clashes += len(shared)
        for lot in shared[: _MAX_EXAMPLES - len(clashes)]:  # describe the first few only
            in_a, in_b = s.sets[a][t.lot[s.sets[a]] == lot], s.sets[b][t.lot[s.sets[b]] == lot]
            clashes.append(
                f"lot {lot!r} in {a} ({_windows(in_a.size)}) and {b} ({_windows(in_b.size)})"
            )
            examples.append(
                t.example(in_b[0], set=b, same_lot_in=a, window_in_other_set=int(in_a[0]))
            )
    if n_clashes:
        more = f"; and {n_clashes - len(clashes)} more" if n_clashes > len(clashes) else ""
        return Check("lot_disjoint", False, "; ".join(clashes) + more, tuple(examples))
    n = sum(len(v) for v in lots.values())
    return Check("lot_disjoint", True, f"each of the {n} lots is in one set only")


def _overlapping(
    t: WindowTimes, earlier: np.ndarray, later: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Windows of ``later`` whose interval overlaps one of ``earlier``, and one such partner.

    Two windows overlap iff each starts before the other ends. Sorting ``earlier`` by start,
    the windows starting before a ``later`` window's end are a prefix; it holds an overlap iff
    its latest end is after that window's start. ``O(N log N)``.
    """
    order = earlier[np.argsort(t.start[earlier], kind="stable")]
    ends = t.end[order]
    latest = np.maximum.accumulate(ends)  # latest end among the first i + 1 starts
    at = np.maximum.accumulate(np.where(ends == latest, np.arange(ends.size), 0))  # its position
    k = np.searchsorted(t.start[order], t.end[later], side="left")  # starts before each end
    hit = (k > 0) & (latest[np.maximum(k - 1, 0)] > t.start[later])
    return later[hit], order[at[k[hit] - 1]]


def _no_overlap(s: _Split) -> Check:
    t, clashes, examples = s.times, [], []
    for a, b in s.pairs():
        windows, partners = _overlapping(t, s.sets[a], s.sets[b])
        if windows.size:
            clashes.append(
                f"{_windows(windows.size)} of {b} overlapping a {a} window in time, e.g. {b} "
                f"{t.describe(windows[0])} overlaps {a} {t.describe(partners[0])}"
            )
            examples += [
                t.example(w, set=b, overlaps_set=a, overlaps_window=int(p))
                for w, p in zip(windows[:_MAX_EXAMPLES], partners[:_MAX_EXAMPLES], strict=True)
            ]
    if clashes:
        return Check("no_overlap", False, "; ".join(clashes), tuple(examples[:_MAX_EXAMPLES]))
    return Check("no_overlap", True, "no window overlaps a window of a later set in time")


def _time_order_gap(s: _Split) -> Check:
    t, clashes, examples = s.times, [], []
    for a, b in s.pairs():
        last = s.sets[a][np.argmax(t.end[s.sets[a]])]
        bound = int(t.end[last]) + s.gap.value
        early = s.sets[b][t.start[s.sets[b]] < bound]
        if early.size:
            first = early[np.argmin(t.start[early])]
            clashes.append(
                f"{_windows(early.size)} of {b} starting before {iso(bound)} = the last {a} end "
                f"({t.describe(last)}) + gap {s.gap}, the earliest {t.describe(first)}"
            )
            examples += [
                t.example(i, set=b, must_start_at_or_after=iso(bound), after_window=int(last))
                for i in early[:_MAX_EXAMPLES]
            ]
    if clashes:
        return Check("time_order_gap", False, "; ".join(clashes), tuple(examples[:_MAX_EXAMPLES]))
    return Check(
        "time_order_gap", True, f"every later set starts at least gap={s.gap} after earlier ends"
    )


def _label_availability(s: _Split) -> Check:
    t, clashes, examples = s.times, [], []
    names = [n for n in _SETS if s.sets[n].size]
    for a, b in itertools.pairwise(names):  # each set against the next one
        first_use = int(t.start[s.sets[b]].min())
        late = s.sets[a][t.label_time[s.sets[a]] > first_use]
        if late.size:
            clashes.append(
                f"{_windows(late.size)} of {a} with the label known only after the {b} set "
                f"starts at {iso(first_use)}, e.g. {t.describe(late[0])} with label at "
                f"{iso(t.label_time[late[0]])}"
            )
            examples += [
                t.example(i, set=a, label_needed_by=iso(first_use)) for i in late[:_MAX_EXAMPLES]
            ]
    source = "" if t.has_label_time else " (no label_time given: labels taken as known at end)"
    if clashes:
        detail = "; ".join(clashes) + source
        return Check("label_availability", False, detail, tuple(examples[:_MAX_EXAMPLES]))
    return Check(
        "label_availability", True, f"every label is known before the next set starts{source}"
    )


def _scaler_train_only(s: _Split, scaler: _FittedOnRows) -> Check:
    windows = s.times.windows
    if windows is None:
        raise ValueError("the scaler check needs X to be a mfgtx.data.Windows (it has rows)")
    fitted = np.unique(np.asarray(scaler.fitted_rows(), dtype=np.int64))
    extra = np.setdiff1d(fitted, windows.rows(s.sets["train"]))
    if not extra.size:
        detail = f"the scaler was fitted on {fitted.size} rows, all of them training rows"
        return Check("scaler_train_only", True, detail)
    parts, examples = [], []
    covered = np.zeros(extra.size, dtype=bool)
    for name, idx in {**s.sets, **s.others}.items():
        if name == "train" or not idx.size:
            continue
        starts = windows.row_start[idx]
        ends = starts + windows.lengths[idx]
        hits = np.searchsorted(extra, ends) - np.searchsorted(extra, starts)
        users = idx[hits > 0]
        if users.size:
            rows = np.isin(extra, windows.rows(users))
            covered |= rows
            lots = list(pd.unique(s.times.lot[users]))
            parts.append(f"{rows.sum()} covered by {name} windows of lots {_preview(lots)}")
            examples += [s.times.example(i, set=name) for i in users[:2]]
    if (~covered).any():
        parts.append(
            f"{int((~covered).sum())} covered by no window (e.g. row {extra[~covered][0]})"
        )
    detail = (
        f"the scaler was fitted on {fitted.size} rows, {extra.size} of them not training rows: "
        + "; ".join(parts)
        + ". Refit it with SensorScaler.fit(windows, train)"
    )
    return Check("scaler_train_only", False, detail, tuple(examples[:_MAX_EXAMPLES]))


def _coverage(s: _Split) -> Check:
    n = len(s.times)
    everything = np.concatenate([*s.sets.values(), *s.others.values()])
    counts = np.bincount(everything, minlength=n)
    missing, repeated = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
    names = ", ".join([*s.sets, *s.others])
    if not (missing.size or repeated.size):
        return Check("coverage", True, f"each of the {n} windows is in exactly one of {names}")
    parts = []
    if missing.size:
        parts.append(f"{_windows(missing.size)} in none of {names} ({_preview(missing)})")
    if repeated.size:
        parts.append(f"{_windows(repeated.size)} in more than one ({_preview(repeated)})")
    examples = [s.times.example(i, problem="in no set") for i in missing[:_MAX_EXAMPLES]]
    examples += [s.times.example(i, problem="in several sets") for i in repeated[:_MAX_EXAMPLES]]
    return Check("coverage", False, "; ".join(parts), tuple(examples[:_MAX_EXAMPLES]))


def _summary(s: _Split, sets: SplitSets | Mapping[str, Any]) -> dict[str, Any]:
    t = s.times
    per_set = {}
    for name, idx in {**s.sets, **s.others}.items():
        in_time_order = idx[np.argsort(t.start[idx], kind="stable")]
        lots = [
            v.item() if isinstance(v, np.generic) else v for v in pd.unique(t.lot[in_time_order])
        ]
        per_set[name] = {
            "n_windows": int(idx.size),
            "n_lots": len(lots),
            "lots": lots,
            "first_start": iso(t.start[idx].min()) if idx.size else None,
            "last_end": iso(t.end[idx].max()) if idx.size else None,
        }
    split_sets = isinstance(sets, SplitSets)
    return {
        "n_windows": len(t),
        "sets": per_set,
        "gap": s.gap.isoformat(),
        "gap_seconds": s.gap.total_seconds(),
        "fold": sets.fold if split_sets else None,
        "n_purged": int(sets.purged.size) if split_sets else None,
        "purge_reasons": dict(sets.purge_reasons) if split_sets else None,
        "label_time_given": t.has_label_time,
    }
