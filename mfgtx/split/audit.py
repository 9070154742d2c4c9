"""Prove a split free of the usual plant leaks: :func:`audit` and its :class:`AuditReport`.

Shape legend: ``N`` windows, ``R`` table rows, ``K`` folds.

The audit works on any split, ours or one made by hand: a :class:`~mfgtx.split.SplitSets`, a
mapping of ``"train"``, ``"test"`` and optional ``"val"`` window positions, a scikit-learn
style ``(train, test)`` or ``(train, val, test)`` tuple, or the folds of a cross-validation
(``list(cv.split(X))``, any iterable of such splits). It checks:

1. ``index_disjoint``: no window is in two sets.
2. ``lot_disjoint``: no lot is in two sets.
3. ``no_overlap``: no window's ``[start, end]`` interval intersects one of a later set
   (intervals that only touch at one instant do not overlap, as ``gap=0`` allows).
4. ``time_order_gap``: validation windows start ``>= max(train end) + gap``; test windows
   start ``>= max(train end) + gap`` and ``>= max(val end) + gap``.
5. ``label_availability``: training labels are known by the next set's first start,
   validation labels by the first test start. Without label times (a frame without a
   ``label_time`` column, or :class:`~mfgtx.data.Windows` whose label times were filled in
   with their rows' times, :attr:`~mfgtx.data.Windows.label_time_filled`) it fails only
   where a window ends after that start (its label cannot be known before it ends), and is
   otherwise reported as not checked.
6. ``scaler_train_only``: the scaler's centre and scale are recomputed from the training rows
   and must match (see :mod:`mfgtx.split._scaler`; its own record of rows is not trusted).
   Not checked without a scaler.
7. ``coverage`` (for :class:`~mfgtx.split.SplitSets`): every window is in exactly one of
   train, val, test, purged, unused.
8. ``regimes_train_only`` (with ``regimes=``): the operating regimes (regime values or
   k-means centroids, the settings' scaling) and the per-regime sensor statistics are
   recomputed from the training rows and must match (see :mod:`mfgtx.split._regimes`);
   the scaler is then checked on the windows as the regimes transform them.

A check that cannot be made is listed in :attr:`AuditReport.not_checked`, never as passed.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.split._regimes import regimes_check
from mfgtx.split._scaler import scaler_check
from mfgtx.split._times import WindowTimes, duration_text, iso, parse_gap, window_times
from mfgtx.split.report import AuditReport, Check, LeakageError, NotChecked
from mfgtx.split.splitter import SplitSets

__all__ = ["audit"]

logger = logging.getLogger(__name__)

_SETS = ("train", "val", "test")
_MAX_EXAMPLES = 5
_NO_SCALER = (
    "no fitted scaler was handed to the audit, so whether the scaling saw training rows only "
    "was not checked"
)


@dataclass(frozen=True, eq=False)
class _Split:
    times: WindowTimes
    sets: dict[str, np.ndarray]  # train, val, test (val may be empty)
    others: dict[str, np.ndarray]  # purged and unused (SplitSets) or unassigned (hand-made)
    gap: pd.Timedelta
    unit: str = "window"  # what one row of X is, in the messages: window, image, photo

    def n(self, count: int | np.integer) -> str:
        """``1 window``, ``3 windows`` (in the split's unit)."""
        return f"{count} {self.unit}" if count == 1 else f"{count} {self.unit}s"

    def pairs(self) -> Iterable[tuple[str, str]]:
        """``(earlier, later)`` pairs of non-empty sets."""
        names = [n for n in _SETS if self.sets[n].size]
        return [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]


def audit(
    X: Any,
    sets: Any,
    *,
    gap: Any = None,
    scaler: Any = None,
    regimes: Any = None,
    strict: bool = True,
    unit: str = "window",
) -> AuditReport:
    """Check a split for leakage between its sets.

    Args:
        X: the windows that were split: a :class:`mfgtx.data.Windows` or a DataFrame with
            columns ``lot``, ``start``, ``end`` and optionally ``label_time`` (without it the
            label check can only fail, see the module docstring).
        sets: a :class:`~mfgtx.split.SplitSets`; a mapping with ``"train"``, ``"test"`` and
            optionally ``"val"`` window positions; a ``(train, test)`` or ``(train, val,
            test)`` tuple of positions; or an iterable of any of these, one per fold (a
            scikit-learn cross-validation, ``list(cv.split(X))``).
        gap: the embargo to check (see :class:`~mfgtx.split.LotTimeSplit`); defaults to
            ``sets.gap`` for a :class:`~mfgtx.split.SplitSets`, required otherwise.
        scaler: the fitted scaler (:class:`mfgtx.data.SensorScaler`, scikit-learn
            ``StandardScaler`` or ``RobustScaler``, or any object with ``mean_``/``scale_``
            or ``center_``/``scale_``), or one per fold; needs ``X`` to be a ``Windows``.
        regimes: the fitted :class:`mfgtx.data.Regimes` of the raw windows ``X`` (the
            scaler then holds statistics of the regime-normalised windows).
        strict: raise :class:`LeakageError` if any check fails.
        unit: what one row of ``X`` is, in the report's sentences (``"window"``,
            ``"image"``, ``"photo"``).

    Returns:
        The :class:`AuditReport`; for several folds, one whose checks pass only if they pass
        in every fold, with each fold's report in ``folds``.

    Raises:
        LeakageError: a check failed and ``strict`` is true.
        ValueError: bad input (unknown set name, index out of range, no gap, a scaler of an
            unknown type, ...).

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
        >>> audit(windows, ([0, 1, 2, 3], [4, 5]), gap="1h").unchecked  # a (train, test) tuple
        ('label_availability', 'scaler_train_only')
    """
    times = window_times(X)
    folds = _folds(sets)
    if folds is None:
        report = _audit_split(times, sets, gap, scaler, regimes, unit)
    else:
        scalers = _scaler_per_fold(scaler, len(folds))
        report = _combined(
            [
                _audit_split(times, f, gap, sc, regimes, unit)
                for f, sc in zip(folds, scalers, strict=True)
            ]
        )
    if report.passed:
        logger.info(
            "split audit passed %d checks (%d not checked: %s)",
            len(report.checks),
            len(report.not_checked),
            ", ".join(report.unchecked) or "none",
        )
    else:
        logger.warning("split audit failed: %s", ", ".join(report.failed))
        if strict:
            raise LeakageError(report)
    return report


def _audit_split(
    times: WindowTimes,
    sets: Any,
    gap: Any,
    scaler: Any,
    regimes: Any = None,
    unit: str = "window",
) -> AuditReport:
    split = replace(_as_split(times, sets, gap), unit=unit)
    checks = [_index_disjoint(split), _lot_disjoint(split), _no_overlap(split)]
    checks.append(_time_order_gap(split))
    not_checked: list[NotChecked] = []
    scaled = split
    if regimes is not None:  # the scaler saw the windows as the regimes transform them
        if times.windows is None:
            raise ValueError("the regimes check needs X to be a mfgtx.data.Windows (it has rows)")
        passed, detail, examples = regimes_check(regimes, times.windows, {**split.sets})
        checks.append(Check("regimes_train_only", passed, detail, examples))
        applied = window_times(regimes.apply(times.windows))
        scaled = replace(split, times=applied)
    for result in (
        _label_availability(split),
        NotChecked("scaler_train_only", _NO_SCALER)
        if scaler is None
        else _scaler_train_only(scaled, scaler),
    ):
        if isinstance(result, Check):
            checks.append(result)
        else:
            not_checked.append(result)
    if isinstance(sets, SplitSets):
        checks.append(_coverage(split))
    return AuditReport(tuple(checks), _summary(split, sets), not_checked=tuple(not_checked))


def _is_positions(value: Any) -> bool:
    """Whether ``value`` reads as one 1-D array of window positions (or a boolean mask)."""
    if isinstance(value, SplitSets | Mapping | str | bytes):
        return False
    try:
        arr = np.asarray(value)
    except ValueError:  # ragged: a (train, test) pair of different lengths
        return False
    return arr.ndim == 1 and (arr.size == 0 or arr.dtype.kind in "iubf")


def _folds(sets: Any) -> list[Any] | None:
    """``None`` for one split, else the list of folds (each one split)."""
    if isinstance(sets, SplitSets | Mapping):
        return None
    if isinstance(sets, str | bytes) or not isinstance(sets, Iterable):
        raise ValueError(
            "sets must be a SplitSets, a mapping of 'train'/'val'/'test' window positions, a "
            "(train, test) or (train, val, test) tuple, or an iterable of those (one per fold), "
            f"found {type(sets).__name__}"
        )
    items = list(sets)
    if items and all(_is_positions(v) for v in items):
        return None  # one split given as a tuple of position arrays
    if not items:
        raise ValueError("sets holds no fold: there is nothing to audit")
    return items


def _scaler_per_fold(scaler: Any, n_folds: int) -> list[Any]:
    if not isinstance(scaler, Sequence) or isinstance(scaler, str):
        return [scaler] * n_folds
    if len(scaler) != n_folds:
        raise ValueError(f"{len(scaler)} scalers given for {n_folds} folds: give one per fold")
    return list(scaler)


def _combined(reports: list[AuditReport]) -> AuditReport:
    """One report over ``K`` folds: a check passes only if it passes in every fold."""
    names = list(dict.fromkeys(c.name for r in reports for c in r.checks))
    checks = []
    for name in names:
        found = [(k, c) for k, r in enumerate(reports) for c in r.checks if c.name == name]
        bad = [(k, c) for k, c in found if not c.passed]
        if not bad:
            detail = f"passed in all {len(found)} folds (fold {found[0][0]}: {found[0][1].detail})"
            checks.append(Check(name, True, detail))
            continue
        detail = f"failed in fold(s) {', '.join(str(k) for k, _ in bad)}: " + "; ".join(
            f"fold {k}: {c.detail}" for k, c in bad
        )
        examples = tuple({"fold": k, **e} for k, c in bad for e in c.examples)
        checks.append(Check(name, False, detail, examples[:_MAX_EXAMPLES]))
    not_checked: dict[str, NotChecked] = {}
    for r in reports:
        for c in r.not_checked:
            not_checked.setdefault(c.name, c)
    first = reports[0].summary
    summary = {
        "n_windows": first["n_windows"],
        "n_folds": len(reports),
        "gap": first["gap"],
        "gap_seconds": first["gap_seconds"],
        "label_time_given": first["label_time_given"],
    }
    return AuditReport(
        tuple(checks), summary, not_checked=tuple(not_checked.values()), folds=tuple(reports)
    )


def _as_split(times: WindowTimes, sets: Any, gap: Any) -> _Split:
    n = len(times)
    if not isinstance(sets, SplitSets | Mapping):
        sets = _named(sets)
    if isinstance(sets, SplitSets):
        given = {name: getattr(sets, name) for name in (*_SETS, "purged", "unused")}
        gap_value = sets.gap if gap is None else parse_gap(gap)
    else:
        unknown = sorted(set(sets) - set(_SETS))
        if unknown or not {"train", "test"} <= set(sets):
            raise ValueError(
                f"sets must have keys 'train', 'test' and optionally 'val', found {sorted(sets)}"
            )
        if gap is None:
            raise ValueError("gap is required to audit a hand-made split, e.g. gap='2h'")
        given = {name: sets.get(name, []) for name in _SETS}
        gap_value = parse_gap(gap)
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


def _named(sets: Any) -> dict[str, Any]:
    """A ``(train, test)`` or ``(train, val, test)`` tuple as a mapping."""
    if isinstance(sets, str | bytes) or not isinstance(sets, Iterable):
        raise ValueError(
            f"a fold must be a SplitSets, a mapping or a (train, test) tuple, found "
            f"{type(sets).__name__}"
        )
    parts = list(sets)
    if not all(_is_positions(v) for v in parts) or len(parts) not in (2, 3):
        raise ValueError(
            f"a tuple of sets must be (train, test) or (train, val, test) window positions, "
            f"found {len(parts)} items"
        )
    return dict(zip(("train", "test") if len(parts) == 2 else _SETS, parts, strict=True))


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


def _preview(items: Sequence[Any] | np.ndarray, k: int = _MAX_EXAMPLES) -> str:
    shown = ", ".join(repr(v.item() if isinstance(v, np.generic) else v) for v in items[:k])
    return shown + (f" and {len(items) - k} more" if len(items) > k else "")


def _index_disjoint(s: _Split) -> Check:
    clashes, examples = [], []
    for a, b in s.pairs():
        common = np.intersect1d(s.sets[a], s.sets[b])
        if common.size:
            clashes.append(f"{s.n(common.size)} in both {a} and {b} ({_preview(common)})")
            examples += [s.times.example(i, sets=[a, b]) for i in common[:_MAX_EXAMPLES]]
    if clashes:
        return Check("index_disjoint", False, "; ".join(clashes), tuple(examples[:_MAX_EXAMPLES]))
    n = sum(v.size for v in s.sets.values())
    return Check("index_disjoint", True, f"each of the {s.n(n)} is in one set only")


def _lot_disjoint(s: _Split) -> Check:
    t = s.times
    clashes: list[str] = []
    examples: list[dict[str, Any]] = []
    lots = {name: pd.unique(t.lot[idx]) for name, idx in s.sets.items()}
    n_clashes = 0
    for a, b in s.pairs():
        earlier = set(lots[a])
        shared = [v for v in lots[b] if v in earlier]
        n_clashes += len(shared)
        for lot in shared[: _MAX_EXAMPLES - len(clashes)]:  # describe the first few only
            in_a, in_b = s.sets[a][t.lot[s.sets[a]] == lot], s.sets[b][t.lot[s.sets[b]] == lot]
            clashes.append(f"lot {lot!r} in {a} ({s.n(in_a.size)}) and {b} ({s.n(in_b.size)})")
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
                f"{s.n(windows.size)} of {b} overlapping a {a} {s.unit} in time, e.g. {b} "
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
                f"{s.n(early.size)} of {b} starting before {iso(bound)} = the last {a} end "
                f"({t.describe(last)}) + gap {duration_text(s.gap)}, the earliest "
                f"{t.describe(first)}"
            )
            examples += [
                t.example(i, set=b, must_start_at_or_after=iso(bound), after_window=int(last))
                for i in early[:_MAX_EXAMPLES]
            ]
    if clashes:
        return Check("time_order_gap", False, "; ".join(clashes), tuple(examples[:_MAX_EXAMPLES]))
    return Check(
        "time_order_gap",
        True,
        f"every later set starts at least the gap ({duration_text(s.gap)}) after the earlier ends",
    )


def _label_availability(s: _Split) -> Check | NotChecked:
    """With label times: each label known by the next set's start. A window whose label time
    was not given (none in the input, or filled in with its row's time) has its label known
    at its end at the earliest, so it is certain to fail only if it ends after that start;
    it can never be shown to pass, so the check is then not checked."""
    t, clashes, examples = s.times, [], []
    given = _label_time_given(t)
    known = np.where(given, t.label_time, t.end)  # without a time: the earliest possible
    names = [n for n in _SETS if s.sets[n].size]
    unknown: list[str] = []  # sets whose labels must be known in time but have no times
    for a, b in itertools.pairwise(names):  # each set against the next one
        first_use = int(t.start[s.sets[b]].min())
        late = s.sets[a][known[s.sets[a]] > first_use]
        if late.size:
            when = (
                f"with label at {iso(t.label_time[late[0]])}"
                if given[late[0]]
                else "which ends after it, so its label cannot be known by then"
            )
            clashes.append(
                f"{s.n(late.size)} of {a} with the label known only after the {b} set "
                f"starts at {iso(first_use)}, e.g. {t.describe(late[0])} {when}"
            )
            for i in late[:_MAX_EXAMPLES]:
                facts = t.example(i, set=a, label_needed_by=iso(first_use))
                if not given[i]:  # a filled-in time is not a fact about the label
                    facts.pop("label_time", None)
                examples.append(facts)
        missing = int((~given[s.sets[a]]).sum())
        if missing:
            unknown.append(f"{missing} of the {s.n(s.sets[a].size)} of {a}")
    if clashes:
        source = "" if not unknown else f" (no label_time given for {'; '.join(unknown)})"
        detail = "; ".join(clashes) + source
        return Check("label_availability", False, detail, tuple(examples[:_MAX_EXAMPLES]))
    if unknown:
        if t.windows is None:
            what = "the data gives no time at which each label became known (no label time column)"
        else:
            what = (
                "the data gives no time at which each label became known: the label times of "
                f"{'; '.join(unknown)} were filled in with their rows' times (no label time "
                "column mapped), not given"
            )
        return NotChecked(
            "label_availability",
            f"{what}: no {s.unit} ends after the next set starts, but that does not show its "
            "label was known in time; map the inspection or failure time as label_time "
            "(data.columns.label_time in a job file) to check it",
        )
    return Check("label_availability", True, "every label is known before the next set starts")


def _label_time_given(t: WindowTimes) -> np.ndarray:
    """``(N,)`` bool: whether each window's label time was given, not missing from the input
    (a frame without ``label_time``) nor filled in with its row's time (a ``Windows`` cut
    without a label time column, :attr:`~mfgtx.data.Windows.label_time_filled`)."""
    if t.windows is not None:
        return ~t.windows.filled_label_times()
    return np.full(len(t), t.has_label_time)


def _scaler_train_only(s: _Split, scaler: Any) -> Check:
    if s.times.windows is None:
        raise ValueError("the scaler check needs X to be a mfgtx.data.Windows (it has rows)")
    passed, detail, examples = scaler_check(scaler, s.times, {**s.sets, **s.others})
    return Check("scaler_train_only", passed, detail, examples)


def _coverage(s: _Split) -> Check:
    n = len(s.times)
    everything = np.concatenate([*s.sets.values(), *s.others.values()])
    counts = np.bincount(everything, minlength=n)
    missing, repeated = np.flatnonzero(counts == 0), np.flatnonzero(counts > 1)
    names = ", ".join([*s.sets, *s.others])
    if not (missing.size or repeated.size):
        return Check("coverage", True, f"each of the {s.n(n)} is in exactly one of {names}")
    parts = []
    if missing.size:
        parts.append(f"{s.n(missing.size)} in none of {names} ({_preview(missing)})")
    if repeated.size:
        parts.append(f"{s.n(repeated.size)} in more than one ({_preview(repeated)})")
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
    split_sets = sets if isinstance(sets, SplitSets) else None
    return {
        "n_windows": len(t),
        "sets": per_set,
        "gap": s.gap.isoformat(),
        "gap_seconds": s.gap.total_seconds(),
        "fold": split_sets.fold if split_sets is not None else None,
        "n_purged": int(split_sets.purged.size) if split_sets is not None else None,
        "purge_reasons": dict(split_sets.purge_reasons) if split_sets is not None else None,
        "label_time_given": bool(_label_time_given(t).all()),
    }
