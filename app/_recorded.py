"""What a bundle's recorded job file says that a page needs: how its training data was
written (the CSV format), where it was, and the units of its columns.

Read from the job as the bundle records it (``extra.job_file``, paths made absolute at
training time), key by key: a bundle saved from Python, or by an mfgtx whose job files had
other keys, gives the plain CSV format, no file and no units.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _settings import ROOT

from mfgtx.data.io import CsvFormat

__all__ = ["Recorded", "recorded"]


@dataclass(frozen=True)
class Recorded:
    """Args:
    fmt: the CSV format the job read its training data in (the plain one otherwise).
    trained_on: the CSV file it read, when it exists here.
    units: the unit of each column (``data.columns.units``).
    """

    fmt: CsvFormat = field(default_factory=CsvFormat)
    trained_on: Path | None = None
    units: Mapping[str, str] = field(default_factory=dict)

    def unit(self, column: str) -> str:
        """The unit of ``column`` (``""`` when the job gives none)."""
        return self.units.get(column, "")


def _section(value: Any, *keys: str) -> dict[str, Any]:
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value if isinstance(value, dict) else {}


def recorded(manifest: Mapping[str, Any] | None) -> Recorded:
    """The facts of the bundle's recorded job (see the module docstring)."""
    job = _section(dict(manifest or {}), "extra", "job_file")
    source = _section(job, "data", "source")
    units = _section(job, "data", "columns", "units")
    keys = ("delimiter", "decimal", "encoding")
    try:
        fmt = CsvFormat(**{k: str(source[k]) for k in keys if source.get(k) is not None})
    except ValueError:  # written for another mfgtx: read as plain CSV
        fmt = CsvFormat()
    path = source.get("path")
    trained_on = None
    if isinstance(path, str) and path.endswith(".csv"):
        file = Path(path) if Path(path).is_absolute() else ROOT / path
        trained_on = file.resolve() if file.is_file() else None
    return Recorded(
        fmt=fmt,
        trained_on=trained_on,
        units={str(c): str(u) for c, u in units.items()},
    )
