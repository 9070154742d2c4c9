"""Errors and warnings about input data."""

from __future__ import annotations

__all__ = ["DataError", "DataWarning"]


class DataError(ValueError):
    """Input data that cannot be used as it is.

    The message names what is wrong and where (file, column, lot, line or row, expected vs
    found); the same facts are available as attributes for programs.

    Attributes:
        column: the column concerned, or ``None``.
        lot: the lot concerned, or ``None``.
        row: the row's 0-based position in the input that was read (a DataFrame, or the
            records of a file :func:`~mfgtx.data.read_table` read itself), or ``None`` when
            the error is not about one row; ``file`` and ``line`` say where to find it.
        file: the file (or SQL table) the row came from, or ``None``.
        line: the row's line in ``file`` as a text editor numbers it (CSV, header = line 1)
            or its row in a Parquet file or query; ``None`` when not known.
        problem: what kind of problem it is in a few words (``bad time``, ``not a number``),
            for lists of problems (``mfgtx check``), or ``None``.
        found: the value found, as written, or ``None``.
        expected: what was expected in its place, in words, or ``None``.
    """

    def __init__(
        self,
        message: str,
        *,
        column: str | None = None,
        lot: str | None = None,
        row: int | None = None,
        file: str | None = None,
        line: int | None = None,
        problem: str | None = None,
        found: object = None,
        expected: str | None = None,
    ) -> None:
        super().__init__(message or "bad input data (no reason given)")
        self.column = column
        self.lot = lot
        self.row = row
        self.file = file
        self.line = line
        self.problem = problem
        self.found = None if found is None else str(found)
        self.expected = expected


class DataWarning(UserWarning):
    """Something in the input was changed or left out; the message says what and where."""
