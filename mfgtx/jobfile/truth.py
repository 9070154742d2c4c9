"""The known outcome of each lot of an external test set (``evaluate.truth``).

Two layouts: a table with one row per lot (CSV or Parquet: the lot column and one column per
target), or NASA's C-MAPSS ``RUL_FD00x.txt`` (``format: cmapss_rul``), one number per line,
line ``i`` the remaining life of the ``i``-th lot of the test file in lot order. Both give
the outcome as of each lot's **last row**, so the model is judged on the window ending there.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from mfgtx.data import DataError
from mfgtx.jobfile.config import SourceSection, TruthSection
from mfgtx.jobfile.sources import FILE, LINE, read_frame

__all__ = ["read_truth"]

#: ``evaluate.truth.format`` of a table, as the ``source.format`` that reads it.
_TABLE: dict[str, Literal["auto", "csv", "parquet"]] = {
    "auto": "auto",
    "csv": "csv",
    "parquet": "parquet",
}


def _lot_order(lots: Sequence[object]) -> list[object]:
    """Lots in their natural order: by number when every id is a number, else as text."""
    try:
        return sorted(lots, key=lambda x: float(str(x)))
    except ValueError:
        return sorted(lots, key=str)


def read_truth(
    truth: TruthSection,
    lots: Sequence[object],
    targets: Sequence[str],
    lot_column: str,
) -> pd.DataFrame:
    """The truth of ``lots`` (every lot of the test source, scored or not), one row per lot.

    Args:
        truth: the ``evaluate.truth`` section.
        lots: the test source's lot ids (all of them: a ``cmapss_rul`` file counts them).
        targets: the bundle's targets, in order.
        lot_column: ``data.columns.lot`` (the table's lot column unless ``truth.on``).

    Returns:
        Indexed by lot id as text, one float column per target (capped at ``rul_cap``); lots
        the table does not give are left out (the caller lists them).

    Raises:
        DataError: naming the file, line and column: a value that is not a number, a lot given
            twice, a missing column, or a RUL file counting other lots than the source.
    """
    path = Path(truth.path)
    if truth.format == "cmapss_rul":
        from mfgtx.datasets import read_cmapss_rul

        if len(targets) != 1:
            raise DataError(f"{path}: a cmapss_rul file gives one target, the bundle has {targets}")
        try:
            values = read_cmapss_rul(path).astype(float)
        except (OSError, ValueError) as e:
            raise DataError(str(e)) from e
        order = _lot_order(list(dict.fromkeys(lots)))
        if len(order) != len(values):
            raise DataError(
                f"{path}: {len(values)} values, but the test source has {len(order)} lots; line i "
                "of a RUL file is the i-th lot in lot order, so both must count the same lots"
            )
        frame = pd.DataFrame({targets[0]: values}, index=[str(x) for x in order])
    else:
        table = read_frame(SourceSection(path=str(path), format=_TABLE[truth.format]))
        on = truth.on or lot_column
        columns = list(truth.columns) or list(targets)
        if len(columns) != len(targets):
            raise DataError(
                f"{path}: evaluate.truth.columns names {len(columns)} column(s) {columns}; the "
                f"bundle has {len(targets)} target(s) {list(targets)}"
            )
        missing = [c for c in [on, *columns] if c not in table.columns]
        if missing:
            shown = [c for c in table.columns if c not in (FILE, LINE)]
            raise DataError(
                f"{path}: missing column(s) {missing}; found {shown}", column=missing[0]
            )
        ids = table[on].astype(str).str.strip()
        repeated = ids.duplicated()
        if repeated.any():
            i = int(np.flatnonzero(repeated.to_numpy())[0])
            raise DataError(
                f"{path} line {int(table[LINE].iloc[i])}: lot {ids.iloc[i]} has a second row; "
                "a truth table gives one outcome per lot",
                column=on,
            )
        out = {}
        for target, column in zip(targets, columns, strict=True):
            numbers = pd.to_numeric(table[column], errors="coerce")
            bad = ~np.isfinite(numbers.to_numpy(dtype=float))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise DataError(
                    f"{path} line {int(table[LINE].iloc[i])}, column {column!r}: expected a "
                    f"number, found {str(table[column].iloc[i])[:40]!r}",
                    column=column,
                )
            out[target] = numbers.to_numpy(dtype=float)
        frame = pd.DataFrame(out, index=ids.to_numpy())
    if truth.rul_cap is not None:
        frame = frame.clip(upper=truth.rul_cap)
    return frame
