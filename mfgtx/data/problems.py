"""The collecting mode of the validation: problems of single lots listed, not raised.

:func:`~mfgtx.data.read_table` checks each rule once over all rows (a bad number, a bad time,
two rows at one time...) and hands the rows that break it to :func:`flag`: without a
:class:`Problems` the first is raised, as ever; with one, the first bad row of each lot is
listed and the lot left out. One rule, two callers: a job that stops at the first problem,
and training and ``mfgtx check``, which go on.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from mfgtx.data.errors import DataError

__all__ = ["Problems", "flag"]


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask)[0])


class Problems:
    """The collecting mode of :func:`read_table`: a problem of one lot (a bad value or time,
    two rows at one time, a key that changes...) is listed here and its lot left out of the
    table, instead of raised; a problem of the whole input (a missing column, a name given
    twice, times with and without a zone mixed) is raised as without it.

    One rule, two callers: each check finds its bad rows once, and raises the first (no
    collector) or lists the first of each lot (a collector).

    Attributes:
        errors: the problems, in the order found: per column, the first bad row of each lot.
        lots: the lots left out.
        rows_without_lot: rows left out for having no lot id.
        notes: what the reader fixed or noticed without leaving anything out, per lot (a
            time that goes back, the rows then sorted).

    Example:
        >>> import pandas as pd
        >>> from mfgtx.data import ColumnMap, read_table
        >>> df = pd.DataFrame({"lot": ["A", "A", "B", "C"], "t": [1, 2, 1, 1],
        ...                    "x": ["1", "oops", "2", "no"]})
        >>> p = Problems()
        >>> table = read_table(df, ColumnMap("lot", "t", sensors=("x",)), problems=p)
        >>> table.lots, sorted(p.lots), [e.line is None and e.row for e in p.errors]
        (['B'], ['A', 'C'], [1, 3])
    """

    def __init__(self) -> None:
        self.errors: list[DataError] = []
        self.lots: set[str] = set()
        self.rows_without_lot = 0
        self.notes: list[DataError] = []

    def __len__(self) -> int:
        return len(self.errors)

    def add(self, err: DataError) -> None:
        """List ``err``; its lot (if it names one) is left out."""
        self.errors.append(err)
        if err.lot is not None:
            self.lots.add(str(err.lot))

    def note(self, err: DataError) -> None:
        """List ``err`` as a note: nothing is left out."""
        self.notes.append(err)

    def rows(self) -> list[dict[str, object]]:
        """The problems as errors-file rows: ``lot``, ``file``, ``line``, ``column``,
        ``reason`` (as ``mfgtx score`` writes them)."""
        return [
            {"lot": e.lot, "file": e.file, "line": e.line, "column": e.column, "reason": str(e)}
            for e in self.errors
        ]


def flag(
    bad: np.ndarray,
    lots: pd.Series | None,
    problems: Problems | None,
    error: Callable[[int, int], DataError],
    *,
    note: bool = False,
) -> None:
    """The rows ``bad`` break one rule: raise ``error(first bad row, how many)``, or with
    ``problems`` list ``error(its first bad row, how many)`` for each lot with bad rows
    (``lots``: each row's lot; ``None``: the rows have no lot, one problem for them all);
    ``note``: a note of something fixed (:attr:`Problems.notes`), never raised."""
    bad = np.asarray(bad, dtype=bool)
    if not bad.any():
        return
    if problems is None:
        if note:
            return
        raise error(_first(bad), int(bad.sum()))
    add = problems.note if note else problems.add
    at = np.flatnonzero(bad)
    if lots is None:
        add(error(int(at[0]), len(at)))
        return
    codes, _ = pd.factorize(lots.to_numpy()[at])
    _, first = np.unique(codes, return_index=True)
    counts = np.bincount(codes)
    for j in np.sort(first):  # lots in the order their first bad row comes
        add(error(int(at[j]), int(counts[codes[j]])))
