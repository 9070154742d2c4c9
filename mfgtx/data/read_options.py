"""How a plant writes its files, read the same way by every entry point.

:class:`ReadOptions` is one source's way of writing: the CSV dialect (delimiter, decimal
mark, encoding: a :class:`~mfgtx.data.io.CsvFormat`), how its times are written
(``time_format``, and ``time_zone``: the clock of times written without an offset) and its
pass/fail words (:class:`LabelWords`). A bundle saves the options it was trained with in its
input spec; ``mfgtx score`` of another source, the dashboard's uploads and
``mfgtx.load(bundle).predict("export.csv")`` read with them unless told otherwise.

:class:`LabelWords` reads a pass/fail column: the words of each side, compared trimmed and
without regard to case (numbers ``1`` pass and ``0`` fail are always read); a value that is
neither is refused naming the file, line, lot, the accepted words and the job-file key
``labels`` that takes more.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from mfgtx.data.columns import check_time_zone
from mfgtx.data.io import CsvFormat
from mfgtx.data.table import Where, pass_fail

__all__ = ["LabelWords", "ReadOptions"]


def _words(value: object, side: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    if not isinstance(value, list | tuple) or not value:
        raise ValueError(f"labels.{side}: a list of words such as [i.O., OK], found {value!r}")
    out = []
    for w in value:
        if not isinstance(w, str) or not w.strip():
            raise ValueError(f"labels.{side}: each word is text that is not blank, found {w!r}")
        out.append(w.strip())
    return tuple(out)


@dataclass(frozen=True)
class LabelWords:
    """The words a plant writes for a good (pass) and a bad (fail) result: the job file's
    top-level ``labels: {good: [...], bad: [...]}`` (not ``data.labels``, the label *table*
    joined on the lot).

    Words are compared trimmed and without regard to case; ``1`` (good) and ``0`` (bad) are
    always read. The defaults are the words mfgtx has always read.

    Args:
        good: the words of a passed lot (``pass_column`` true: ``defect`` is 0).
        bad: the words of a failed lot (``defect`` is 1).

    Example:
        >>> words = LabelWords(good=("i.O.", "OK"), bad=("n.i.O.", "NOK"))
        >>> words.passed(pd.Series([" I.O. ", "n.i.O.", None, "1"]), "Ergebnis").tolist()
        [1.0, 0.0, nan, 1.0]
        >>> LabelWords(good=("OK",), bad=("ok",))
        Traceback (most recent call last):
        ...
        ValueError: labels: 'ok' is both a good and a bad word
    """

    good: tuple[str, ...] = ("true", "pass", "yes")
    bad: tuple[str, ...] = ("false", "fail", "no")

    def __post_init__(self) -> None:
        object.__setattr__(self, "good", _words(self.good, "good"))
        object.__setattr__(self, "bad", _words(self.bad, "bad"))
        both = {w.lower() for w in self.good} & {w.lower() for w in self.bad}
        if both:
            raise ValueError(f"labels: {sorted(both)[0]!r} is both a good and a bad word")

    def passed(
        self,
        values: pd.Series,
        column: str,
        where: Where | None = None,
        lots: pd.Series | None = None,
    ) -> pd.Series:
        """``values`` as 1.0 (good), 0.0 (bad) or NaN (empty).

        Raises:
            DataError: a value that is none of the words (nor 1 or 0), naming its file and
                line (``where``), its lot (``lots``), the accepted words and ``labels``.
        """
        lots = pd.Series("", index=values.index) if lots is None else lots.astype(str)
        return pass_fail(
            values, column, where or Where("DataFrame"), lots, good=self.good, bad=self.bad
        )

    def to_dict(self) -> dict[str, list[str]]:
        return {"good": list(self.good), "bad": list(self.bad)}


@dataclass(frozen=True)
class ReadOptions:
    """How one source's files are written: what every entry point reads them with.

    Args:
        delimiter, decimal, encoding: the CSV dialect (:class:`~mfgtx.data.io.CsvFormat`;
            the job file's ``source.delimiter``, ``source.decimal``, ``source.encoding``).
        time_format: how text times are written, a ``strptime`` format such as
            ``"%d.%m.%Y %H:%M:%S"`` (``data.columns.time_format``); ``None``: ISO 8601, else
            one format inferred per column, and a column that reads both day first and month
            first is refused naming both readings.
        time_zone: the IANA time zone (``Europe/Berlin``) of times written without an offset
            (``data.columns.time_zone``): they are read as that clock's times and kept in
            UTC. ``None``: kept as written (naive).
        labels: the pass/fail words (:class:`LabelWords`, the job file's top-level
            ``labels``).

    Example:
        >>> opts = ReadOptions(delimiter=";", decimal=",", encoding="cp1252",
        ...                    time_format="%d.%m.%Y %H:%M:%S", time_zone="Europe/Berlin")
        >>> ReadOptions.from_dict(opts.to_dict()) == opts, opts.csv.decimal
        (True, ',')
        >>> ReadOptions.from_dict({}) == ReadOptions()  # a bundle that saved none
        True
    """

    delimiter: str = "auto"
    decimal: str = "."
    encoding: str = "utf-8"
    time_format: str | None = None
    time_zone: str | None = None
    labels: LabelWords = field(default_factory=LabelWords)

    def __post_init__(self) -> None:
        CsvFormat(self.delimiter, self.decimal, self.encoding)  # its own checks
        if self.time_format is not None and (
            not isinstance(self.time_format, str) or "%" not in self.time_format
        ):
            raise ValueError(
                "time_format must be a strptime format such as '%d.%m.%Y %H:%M', found "
                f"{self.time_format!r}"
            )
        check_time_zone(self.time_zone)

    @property
    def csv(self) -> CsvFormat:
        """The CSV dialect."""
        return CsvFormat(self.delimiter, self.decimal, self.encoding)

    def to_dict(self) -> dict[str, Any]:
        return {
            "delimiter": self.delimiter,
            "decimal": self.decimal,
            "encoding": self.encoding,
            "time_format": self.time_format,
            "time_zone": self.time_zone,
            "labels": self.labels.to_dict(),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ReadOptions:
        """Rebuild from :meth:`to_dict`; a key it lacks takes its default."""
        fields = {k: v for k, v in state.items() if k != "labels"}
        labels = state.get("labels")
        return cls(**fields, labels=LabelWords(**labels) if labels else LabelWords())
