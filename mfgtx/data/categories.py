"""Category columns: text values (a product grade, a recipe) as stable numbers.

A column declared a category (:attr:`~mfgtx.data.ColumnMap.categories`, set for a regime
column, ``data.regimes: {column: grade}``) holds names, not readings: ``S355``, ``S420``,
``recipe 7``. The models work on float32 arrays, so each name becomes a number, its code.

The code of a name depends on the name alone (a 24-bit digest, so every code is an integer
that float32 holds exactly): the same name gets the same code in every file, in every chunk
of a large file, and when a model scores months later, with no vocabulary to carry along.
Numbers in the column count as names too (``7`` and ``7.0`` are the name ``7``). Two names
of one table with the same code (about one chance in a million for a few dozen names) are an
error, never a silent merge. The names behind the codes travel with the table and its windows
(``{code: name}``), so that messages name the grade, not its code.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = ["category_code", "category_name", "encode_categories", "merge_categories"]

#: Codes are below 2**24: integers float32 represents exactly.
_BITS = 24


def category_name(value: object) -> str | None:
    """The name a cell holds: stripped text, a whole number without ``.0``; ``None`` when
    empty.

    Example:
        >>> category_name(" S355 "), category_name(7.0), category_name(""), category_name(None)
        ('S355', '7', None, None)
    """
    if value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA:
        return None
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        number = float(value)
        return str(int(number)) if number.is_integer() else repr(number)
    text = str(value).strip()
    if text.lower() in ("", "nan", "none", "null", "<na>"):
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    return category_name(number) if np.isfinite(number) else text


def category_code(name: str) -> float:
    """The stable code of a category name.

    Example:
        >>> category_code("S355") == category_code("S355"), category_code("S355") < 2**24
        (True, True)
    """
    digest = hashlib.blake2b(name.encode("utf-8"), digest_size=4).digest()
    return float(int.from_bytes(digest, "big") >> (32 - _BITS))


def merge_categories(
    parts: list[Mapping[float, str]], *, column: str, where: str = ""
) -> dict[float, str]:
    """One ``{code: name}`` of several.

    Raises:
        ValueError: two different names with one code (rename one of them).
    """
    out: dict[float, str] = {}
    for part in parts:
        for code, name in part.items():
            if out.setdefault(code, name) != name:
                raise ValueError(
                    f"{where}column {column!r}: the names {out[code]!r} and {name!r} get the "
                    "same code; rename one of them (add a letter) and train again"
                )
    return out


def encode_categories(
    values: pd.Series, *, column: str = "", where: str = ""
) -> tuple[np.ndarray, dict[float, str]]:
    """Codes ``(R,)`` (NaN where a cell is empty) and ``{code: name}`` of a category column.

    Raises:
        ValueError: two names of the column have the same code.

    Example:
        >>> codes, names = encode_categories(pd.Series(["S355", "S420", None, "S355"]))
        >>> sorted(names.values()), bool(np.isnan(codes[2])), bool(codes[0] == codes[3])
        (['S355', 'S420'], True, True)
    """
    names = [category_name(v) for v in values.tolist()]
    distinct = sorted({n for n in names if n is not None})
    table = {n: category_code(n) for n in distinct}
    merge_categories([{c: n} for n, c in table.items()], column=column, where=where)
    codes = np.array([np.nan if n is None else table[n] for n in names], dtype=np.float64)
    return codes, {c: n for n, c in table.items()}
