"""Leakage-safe splits of sensor windows by lot and time: :class:`LotTimeSplit`.

Shape legend: ``N`` windows, ``L`` lots, ``K`` folds (``n_splits``).

A split is safe for a plant when the model is judged the way it will be used: trained on
earlier lots, applied to later ones. So whole lots go to one set, lots are ordered by time,
every window that straddles a set boundary (or ends less than ``gap`` before it, or whose
label was known only after it) is purged, and nothing is ever moved from one set to another.
:func:`mfgtx.split.audit` proves these properties for any split.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from mfgtx.data.windows import Windows
from mfgtx.split._times import WindowTimes, duration_text, iso, parse_gap, window_times

__all__ = ["LotTimeSplit", "PurgeWarning", "SplitSets"]

logger = logging.getLogger(__name__)

_PURGE_REASONS = ("train_end_gap", "train_label_time", "val_end_gap", "val_label_time")


class PurgeWarning(UserWarning):
    """Whole training or validation lots were purged: a split boundary fell inside them."""


def _warn_whole_lots_purged(times: WindowTimes, sets: SplitSets) -> None:
    """Say which lots lost every window to purging (correct, but easy to overlook)."""
    kept = set(times.lot[np.concatenate([sets.train, sets.val])].tolist())
    lost = sorted({str(lot) for lot in times.lot[sets.purged].tolist()} - {str(k) for k in kept})
    if lost:
        warnings.warn(
            f"fold {sets.fold}: every window of {len(lost)} lot(s) was purged "
            f"({', '.join(lost[:5])}{' ...' if len(lost) > 5 else ''}): they ran too close to "
            "the next set's start or their labels arrived after it, so none of their windows "
            "is learnt from; the audit lists why each window was left out. A smaller split "
            "gap or fewer lines running at once per set keeps more of them",
            PurgeWarning,
            stacklevel=3,
        )


@dataclass(frozen=True, eq=False)
class SplitSets:
    """Every window of one fold, in exactly one of five sets.

    All index arrays are sorted, read-only ``int64`` positions into the windows (``0 .. N-1``).

    Attributes:
        fold: fold number, 0 for the earliest test block.
        train: windows kept for training.
        val: windows kept for validation (empty when ``val_size=0``).
        test: every window of the fold's test lots.
        purged: windows of training or validation lots that straddle or come too close to the
            next set's start, or whose label was known only after it.
        unused: windows of lots after the fold's test block (rolling origin).
        val_start: first window start of the validation lots (``None`` without validation).
        test_start: first window start of the test lots.
        gap: the embargo between a window's end and the next set's start.
        purge_reasons: number of purged windows per reason: ``train_end_gap``,
            ``train_label_time``, ``val_end_gap``, ``val_label_time``. A window that breaks
            both rules is counted under ``*_end_gap`` only, so the counts sum to
            ``len(purged)``.
    """

    fold: int
    train: np.ndarray
    val: np.ndarray
    test: np.ndarray
    purged: np.ndarray
    unused: np.ndarray
    val_start: pd.Timestamp | None
    test_start: pd.Timestamp
    gap: pd.Timedelta
    purge_reasons: Mapping[str, int]

    def __post_init__(self) -> None:
        for name in ("train", "val", "test", "purged", "unused"):
            arr = np.sort(np.asarray(getattr(self, name), dtype=np.int64))
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "purge_reasons", MappingProxyType(dict(self.purge_reasons)))


class LotTimeSplit:
    """Split windows by lot and time, rolling origin, purging windows at every boundary.

    Lots are ordered by their first window start (ties by lot id). With ``n_splits=K`` the
    last ``K`` blocks of ``n_test`` lots are the test blocks; fold ``k``'s validation block is
    the ``n_val`` lots just before its test block, and training is every lot before that
    (expanding window). Lots after the fold's test block are unused in that fold.

    Purging, with ``next_start`` the first window start of the next set (validation if there
    is one, else test) and ``test_start`` the first window start of the test lots:

    * a training window is kept iff ``end + gap <= next_start`` and
      ``label_time <= next_start`` (its label is known before the model is used);
    * a validation window is kept iff ``end + gap <= test_start`` and
      ``label_time <= test_start``;
    * every window of the test lots is a test window.

    Windows that break a rule are purged, never moved to another set. Lots run concurrently on
    several lines, so windows of a training lot that run alongside the first test lot are
    purged: that is intended.

    :meth:`split` follows the scikit-learn splitter protocol and yields ``(train, test)``;
    validation windows are in neither (get them from :meth:`split_sets`). With scikit-learn,
    ``X`` can be a plain feature matrix (one row per window) when the window times travel
    in ``groups`` (the :class:`mfgtx.data.Windows`, or a DataFrame with ``lot``, ``start``,
    ``end`` and optionally ``label_time``: ``cross_val_score(est, X, y, groups=times,
    cv=LotTimeSplit(...))``) or
    in the splitter itself (``LotTimeSplit(..., windows=times)``, for ``GridSearchCV(cv=...)``
    and anything that passes no groups); or pass ``cv=list(LotTimeSplit(...).split(times))``.

    Args:
        n_splits: number of folds ``K`` (rolling origin), ``>= 1``.
        test_size: lots per test block: a fraction of all lots in ``(0, 1)`` (rounded up, at
            least one lot) or a number of lots ``>= 1``.
        val_size: lots per validation block, as ``test_size``; ``0`` for no validation set.
        gap: embargo between a window's end and the next set's start: anything
            :class:`pandas.Timedelta` accepts (``"2h"``, ``datetime.timedelta``,
            ``numpy.timedelta64``), ``>= 0``; bare numbers other than 0 are refused.
        windows: the windows to split, bound to the splitter (a :class:`mfgtx.data.Windows`
            or a DataFrame of window times as below); ``X`` then only has to have one row
            per window.

    Parameters are stored as given and checked when splitting, as in scikit-learn.

    ``X`` is a :class:`mfgtx.data.Windows` or a DataFrame with one row per window and columns
    ``lot``, ``start``, ``end`` (datetime64, time-zone-aware compared in UTC) and optionally
    ``label_time`` (without it a label counts as known at ``end``). Indices are positions
    ``0 .. N-1``, never DataFrame index labels.

    Raises (from :meth:`split`, :meth:`split_sets`, :meth:`get_n_splits`):
        ValueError: a bad parameter, ``X`` without window times, ``groups`` that differ from
            the lots, too few lots for the folds, or a fold whose training or validation set
            purging empties (the message says which rule removed how many windows).
        mfgtx.data.DataError: bad window times (missing, not datetime, end before start).

    Example:
        >>> import pandas as pd
        >>> start = pd.date_range("2024-01-01", periods=8, freq="2h")
        >>> windows = pd.DataFrame({"lot": list("AABBCCDD"), "start": start,
        ...                         "end": start + pd.Timedelta("1h")})
        >>> cv = LotTimeSplit(2, test_size=1, gap="1h")
        >>> cv
        LotTimeSplit(gap='1h', n_splits=2, test_size=1, val_size=0.0)
        >>> for train, test in cv.split(windows):
        ...     print(train, test)
        [0 1 2 3] [4 5]
        [0 1 2 3 4 5] [6 7]
        >>> sets = next(LotTimeSplit(test_size=1, val_size=1, gap="2h").split_sets(windows))
        >>> print(sets.train, sets.val, sets.test, sets.purged)
        [0 1 2] [4] [6 7] [3 5]

        With scikit-learn, the features are a plain matrix and the times travel in ``groups``
        or in the splitter:

        >>> import numpy as np
        >>> from sklearn.linear_model import Ridge
        >>> from sklearn.model_selection import GridSearchCV, cross_val_score
        >>> X = np.random.default_rng(0).normal(size=(8, 3))  # one row per window
        >>> y = X @ np.array([1.0, -2.0, 0.5])
        >>> scores = cross_val_score(Ridge(), X, y, groups=windows, cv=cv)
        >>> scores.shape
        (2,)
        >>> bound = LotTimeSplit(2, test_size=1, gap="1h", windows=windows)
        >>> search = GridSearchCV(Ridge(), {"alpha": [0.1, 10.0]}, cv=bound).fit(X, y)
        >>> search.best_params_
        {'alpha': 0.1}
    """

    def __init__(
        self,
        n_splits: int = 1,
        *,
        test_size: float | int = 0.2,
        val_size: float | int = 0.0,
        gap: Any = "0s",
        windows: Any = None,
    ) -> None:
        self.n_splits = n_splits
        self.test_size = test_size
        self.val_size = val_size
        self.gap = gap
        self.windows = windows

    def __repr__(self) -> str:
        names = sorted(("n_splits", "test_size", "val_size", "gap"))  # scikit-learn's order
        shown = [f"{n}={getattr(self, n)!r}" for n in names]
        if self.windows is not None:  # not the whole table: its kind and size
            shown.append(f"windows=<{type(self.windows).__name__} of {len(self.windows)} windows>")
        return f"{type(self).__name__}({', '.join(shown)})"

    def get_n_splits(self, X: Any = None, y: Any = None, groups: Any = None) -> int:
        """Number of folds. ``X``, ``y`` and ``groups`` are ignored (scikit-learn protocol)."""
        self._checked_params()
        return int(self.n_splits)

    def split(
        self, X: Any, y: Any = None, groups: Any = None
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield ``(train, test)`` window positions per fold (validation windows in neither).

        Args:
            X: a :class:`mfgtx.data.Windows` or a DataFrame with one row per window and
                columns ``lot``, ``start``, ``end`` and optionally ``label_time``; or, when
                the times come from ``groups`` or ``windows``, anything with one row per
                window (a feature matrix).
            y: ignored.
            groups: the window times, as a :class:`mfgtx.data.Windows` or such a DataFrame
                (scikit-learn passes them on untouched); or the lot of each window, which
                must equal the lots, and supplies them when the DataFrame has no ``lot``
                column.
        """
        return iter([(sets.train, sets.test) for sets in self.split_sets(X, groups)])

    def split_sets(self, X: Any, groups: Any = None) -> Iterator[SplitSets]:
        """Every fold's :class:`SplitSets` (train, val, test, purged, unused), earliest first.

        All folds are computed and checked before the first is returned, so a bad input or an
        emptied set raises here, not halfway through a cross-validation.
        """
        n_splits, gap = self._checked_params()
        times = self._times(X, groups)
        rank, lots = _lot_ranks(times)
        n_test, n_val = self._block_sizes(len(lots))
        folds = [_fold(times, rank, lots, k, n_splits, n_test, n_val, gap) for k in range(n_splits)]
        for sets in folds:
            _warn_whole_lots_purged(times, sets)
        return iter(folds)

    def _times(self, X: Any, groups: Any) -> WindowTimes:
        """The window times: from ``groups`` (a window table), the bound ``windows``, or
        ``X``; a feature matrix ``X`` must then have one row per window."""
        if isinstance(groups, Windows):  # scikit-learn hands it on untouched, as a table
            return _one_row_per_window(X, window_times(groups), "groups")
        if isinstance(groups, pd.DataFrame):
            missing = [c for c in ("lot", "start", "end") if c not in groups.columns]
            if missing:
                raise ValueError(
                    f"groups is a DataFrame without column(s) {missing} (found "
                    f"{list(groups.columns)}): give the window times as groups, one row per "
                    "window with lot, start, end and optionally label_time"
                )
            return _one_row_per_window(X, window_times(groups), "groups")
        if self.windows is not None:
            times = window_times(self.windows, groups)
            return _one_row_per_window(X, times, "the windows bound to the splitter")
        return window_times(X, groups)

    def _checked_params(self) -> tuple[int, pd.Timedelta]:
        n = self.n_splits
        if isinstance(n, bool) or not isinstance(n, Integral) or n < 1:
            raise ValueError(f"n_splits must be an integer >= 1, found {n!r}")
        _check_size("test_size", self.test_size, allow_zero=False)
        _check_size("val_size", self.val_size, allow_zero=True)
        return int(n), parse_gap(self.gap)

    def _block_sizes(self, n_lots: int) -> tuple[int, int]:
        n_test = _n_lots(self.test_size, n_lots)
        n_val = _n_lots(self.val_size, n_lots)
        needed = int(self.n_splits) * n_test + n_val + 1
        if n_lots < needed:
            how = "".join(
                f", {name}={size!r} of {n_lots} lots -> {k}"
                for name, size, k in (
                    ("test_size", self.test_size, n_test),
                    ("val_size", self.val_size, n_val),
                )
                if not isinstance(size, Integral) and size > 0
            )
            raise ValueError(
                f"{self!r} needs at least {self.n_splits}*{n_test} + {n_val} + 1 = {needed} lots "
                f"(n_splits*test lots + val lots + at least one training lot{how}), found "
                f"{n_lots}; use fewer folds, smaller test_size/val_size or more lots"
            )
        return n_test, n_val


def _one_row_per_window(X: Any, times: WindowTimes, source: str) -> WindowTimes:
    if X is not None:
        try:
            n = X.shape[0] if hasattr(X, "shape") else len(X)
        except TypeError:
            n = None
        if n is not None and n != len(times):
            raise ValueError(
                f"X has {n} rows but {source} describe {len(times)} windows: X must hold one "
                "row per window, in the same order"
            )
    return times


def _check_size(name: str, size: Any, *, allow_zero: bool) -> None:
    zero = "0 (no validation set), " if allow_zero else ""
    ok = False
    if isinstance(size, bool):
        ok = False
    elif isinstance(size, Integral):
        ok = int(size) >= 1 or (allow_zero and int(size) == 0)
    elif isinstance(size, Real):
        ok = 0.0 < float(size) < 1.0 or (allow_zero and float(size) == 0.0)
    if not ok:
        raise ValueError(
            f"{name} must be {zero}a fraction of lots in (0, 1) or a number of lots >= 1, "
            f"found {size!r}"
        )


def _n_lots(size: float | int, n_lots: int) -> int:
    """Lots in a block: an int as is; a fraction of ``n_lots`` rounded up, at least 1."""
    if isinstance(size, Integral):
        return int(size)
    if size == 0:
        return 0
    # round first so that 0.28 * 25 = 7.000000000000001 gives 7 lots, not 8
    return max(1, math.ceil(round(float(size) * n_lots, 9)))


def _lot_ranks(times: WindowTimes) -> tuple[np.ndarray, np.ndarray]:
    """Each window's lot position in time order ``(N,)``, and the lots in that order ``(L,)``."""
    codes, uniques = pd.factorize(times.lot)
    uniques = np.asarray(uniques)
    first = np.full(uniques.shape[0], np.iinfo(np.int64).max)
    np.minimum.at(first, codes, times.start)
    try:
        by_id = np.argsort(uniques, kind="stable")
    except TypeError:  # lot ids of mixed types: break ties by their text
        by_id = np.argsort(uniques.astype(str), kind="stable")
    id_rank = np.empty_like(by_id)
    id_rank[by_id] = np.arange(by_id.shape[0])
    order = np.lexsort((id_rank, first))  # by first start, then lot id
    rank_of_code = np.empty_like(order)
    rank_of_code[order] = np.arange(order.shape[0])
    return rank_of_code[codes], uniques[order]


def _fold(
    times: WindowTimes,
    rank: np.ndarray,
    lots: np.ndarray,
    fold: int,
    n_splits: int,
    n_test: int,
    n_val: int,
    gap: pd.Timedelta,
) -> SplitSets:
    test_lo = len(lots) - (n_splits - fold) * n_test
    test_hi, val_lo = test_lo + n_test, test_lo - n_val
    is_train, is_test = rank < val_lo, (rank >= test_lo) & (rank < test_hi)
    is_val = (rank >= val_lo) & (rank < test_lo)
    test_start = int(times.start[is_test].min())
    val_start = int(times.start[is_val].min()) if n_val else None
    next_start = test_start if val_start is None else val_start

    next_name = "validation" if n_val else "test"
    train, *train_why = _purge(times, is_train, next_start, gap)
    val, *val_why = _purge(times, is_val, test_start, gap)
    if not train.any():
        raise _emptied("train", fold, times, is_train, next_name, next_start, gap, train_why)
    if n_val and not val.any():
        raise _emptied("validation", fold, times, is_val, "test", test_start, gap, val_why)
    reasons = dict(zip(_PURGE_REASONS, [*train_why, *val_why], strict=True))

    sets = SplitSets(
        fold=fold,
        train=np.flatnonzero(train),
        val=np.flatnonzero(val),
        test=np.flatnonzero(is_test),
        purged=np.flatnonzero((is_train & ~train) | (is_val & ~val)),
        unused=np.flatnonzero(rank >= test_hi),
        val_start=None if val_start is None else pd.Timestamp(val_start),
        test_start=pd.Timestamp(test_start),
        gap=gap,
        purge_reasons=reasons,
    )
    logger.info(
        "fold %d: %d train, %d val, %d test windows; %d purged %s, %d unused; test lots %s",
        fold,
        sets.train.size,
        sets.val.size,
        sets.test.size,
        sets.purged.size,
        reasons,
        sets.unused.size,
        list(lots[test_lo:test_hi]),
    )
    return sets


def _purge(
    times: WindowTimes, members: np.ndarray, boundary: int, gap: pd.Timedelta
) -> tuple[np.ndarray, int, int]:
    """Members kept before ``boundary``, and how many fail the end + gap rule / the label rule.

    A member is kept iff ``end + gap <= boundary`` and ``label_time <= boundary``; one that
    fails both is counted under the end + gap rule only.
    """
    gap_ok = times.end + gap.value <= boundary
    label_ok = times.label_time <= boundary
    kept = members & gap_ok & label_ok
    return kept, int(np.sum(members & ~gap_ok)), int(np.sum(members & gap_ok & ~label_ok))


def _emptied(
    name: str,
    fold: int,
    times: WindowTimes,
    members: np.ndarray,
    next_name: str,
    boundary: int,
    gap: pd.Timedelta,
    why: list[int],
) -> ValueError:
    lots = list(pd.unique(times.lot[members]))
    more = f" and {len(lots) - 5} more" if len(lots) > 5 else ""
    shown = ", ".join(repr(v) for v in lots[:5]) + more
    return ValueError(
        f"fold {fold}: purging left no {name} window. The {next_name} set starts at "
        f"{iso(boundary)}; of the {int(members.sum())} windows of the {name} lots ({shown}), "
        f"{why[0]} end after {iso(boundary - gap.value)} (that start minus the gap, "
        f"{duration_text(gap)}) and "
        f"{why[1]} have their label only after that start. Use a smaller gap, fewer folds "
        "(n_splits) or a smaller test_size/val_size"
    )
