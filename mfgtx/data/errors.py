"""Errors and warnings about input data."""

from __future__ import annotations

__all__ = ["DataError", "DataWarning"]


class DataError(ValueError):
    """Input data that cannot be used as it is.

    The message names what is wrong and where (file, column, lot, line or row, expected vs
    found); the same facts are available as attributes for programs.
    """

    def __init__(
        self,
        message: str,
        *,
        column: str | None = None,
        lot: str | None = None,
        row: int | None = None,
    ) -> None:
        super().__init__(message)
        self.column = column
        self.lot = lot
        self.row = row


class DataWarning(UserWarning):
    """Something in the input was changed or left out; the message says what and where."""
