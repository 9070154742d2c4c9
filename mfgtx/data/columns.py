"""The declared column mapping of a sensor table."""

from __future__ import annotations

import zoneinfo
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["ColumnMap", "check_time_zone"]

Layout = Literal["wide", "long"]


def check_time_zone(name: object) -> str | None:
    """``name`` when it is ``None`` or an IANA time zone (``Europe/Berlin``, ``UTC``).

    Raises:
        ValueError: naming the value.
    """
    if name is None:
        return None
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"time_zone: an IANA time zone such as Europe/Berlin, found {name!r}")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise ValueError(
            f"time_zone: {name!r} is not an IANA time zone (such as Europe/Berlin, UTC)"
        ) from None
    return name


def _names(value: object, field: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and v for v in value):
        raise ValueError(
            f"{field} must be a column name or a list of column names, found {value!r}"
        )
    return tuple(value)


def _units(value: object) -> tuple[tuple[str, str], ...]:
    """``units`` as ``(column, unit)`` pairs, from a mapping or pairs, checked."""
    pairs = list(value.items()) if isinstance(value, Mapping) else value
    if not isinstance(pairs, (list, tuple)) or not all(
        isinstance(p, (list, tuple)) and len(p) == 2 for p in pairs
    ):
        raise ValueError(
            f"units must map column names to units (such as {{temperature_c: °C}}), found {value!r}"
        )
    for column, unit in pairs:
        if not isinstance(column, str) or not column or not isinstance(unit, str):
            raise ValueError(
                f"units: a column name and its unit as text (such as temperature_c: °C), "
                f"found {column!r}: {unit!r}"
            )
    return tuple((column, unit) for column, unit in pairs)


@dataclass(frozen=True)
class ColumnMap:
    """Which column of a plant export means what.

    Args:
        lot: the lot (batch, unit, engine, machine) id column; windows never cross lots.
        time: the timestamp column (ISO 8601 text, or a datetime column in Parquet).
        sensors: sensor columns (wide layout). ``None``: every numeric column that is not
            mapped to something else; the non-numeric columns left out are named in a warning.
        targets: target columns (quality value, pass/fail, remaining useful life...). A target
            is never also a sensor.
        label_time: optional column with the time each row's label (an inspection result)
            became known. Without it a label counts as known at its row's timestamp.
        keys: extra columns carried along unchanged (for example the production line); each
            must be constant within a lot.
        layout: ``"wide"`` (one column per sensor) or ``"long"`` (one row per reading).
        sensor_name: long layout: the column naming the sensor.
        value: long layout: the column holding the reading.
        categories: wide layout: sensor columns that hold names, not readings (a product
            grade, a recipe; a regime column, ``data.regimes: {column: grade}``): each name
            is read as its stable code (:mod:`mfgtx.data.categories`). With ``sensors``
            ``None`` they are read beside the numeric columns.
        time_format: how text times (``time`` and ``label_time``) are written, as a
            ``strptime`` format such as ``"%d.%m.%Y %H:%M"`` for ``13.02.2026 06:00``.
            ``None``: ISO 8601, else one format inferred for the whole column; a column
            that reads both day first and month first (``01.02.2026``) is refused then.
        time_zone: the IANA time zone (``Europe/Berlin``) of text times written without an
            offset: they are read as that clock's times and kept in UTC (a time that does not
            exist or happens twice there, at a daylight-saving change, is refused). ``None``:
            such times are kept as written (naive).
        units: the unit each column is measured in (``{temperature_c: °C}``), for people:
            charts label their axes with it; nothing is converted. Given as a mapping,
            kept as ``(column, unit)`` pairs in column order. Columns without one have none.

    Example:
        >>> ColumnMap(lot="lot", time="timestamp", targets="passed").targets
        ('passed',)
        >>> ColumnMap(lot="lot", time="lot")
        Traceback (most recent call last):
        ...
        ValueError: column 'lot' is mapped twice: as lot and as time
        >>> ColumnMap(lot="lot", time="t", units={"temp": "°C"}).unit("temp")
        '°C'
    """

    lot: str
    time: str
    sensors: tuple[str, ...] | None = None
    targets: tuple[str, ...] = ()
    label_time: str | None = None
    keys: tuple[str, ...] = ()
    layout: Layout = "wide"
    sensor_name: str = "sensor"
    value: str = "value"
    categories: tuple[str, ...] = ()
    time_format: str | None = None
    units: tuple[tuple[str, str], ...] = ()
    time_zone: str | None = None

    def __post_init__(self) -> None:
        check_time_zone(self.time_zone)
        object.__setattr__(self, "units", _units(self.units))
        if self.time_format is not None and (
            not isinstance(self.time_format, str) or "%" not in self.time_format
        ):
            raise ValueError(
                "time_format must be a strptime format such as '%d.%m.%Y %H:%M', found "
                f"{self.time_format!r}"
            )
        for field in ("lot", "time"):
            if not isinstance(getattr(self, field), str) or not getattr(self, field):
                raise ValueError(f"{field} must be a column name, found {getattr(self, field)!r}")
        if self.sensors is not None:
            object.__setattr__(self, "sensors", _names(self.sensors, "sensors"))
            if not self.sensors:
                raise ValueError("sensors must name at least one column, or be None for all")
        object.__setattr__(self, "targets", _names(self.targets, "targets"))
        object.__setattr__(self, "keys", _names(self.keys, "keys"))
        object.__setattr__(self, "categories", _names(self.categories, "categories"))
        if self.categories and self.layout == "long":
            raise ValueError(
                "categories: a long table (one row per reading) holds numbers only; give the "
                f"grade {list(self.categories)} as a column of a wide table"
            )
        if self.sensors is not None:
            stray = [c for c in self.categories if c not in self.sensors]
            if stray:
                raise ValueError(f"categories {stray} must also be listed among the sensors")
        if self.layout not in ("wide", "long"):
            raise ValueError(f"layout must be 'wide' or 'long', found {self.layout!r}")
        roles: list[tuple[str, str]] = [("lot", self.lot), ("time", self.time)]
        if self.label_time is not None:
            roles.append(("label_time", self.label_time))
        roles += [("target", t) for t in self.targets] + [("key", k) for k in self.keys]
        if self.layout == "long":
            roles += [("sensor_name", self.sensor_name), ("value", self.value)]
        roles += [("sensor", s) for s in self.sensors or ()]
        if self.sensors is None:
            roles += [("category", c) for c in self.categories]
        seen: dict[str, str] = {}
        for role, name in roles:
            if name in seen:
                raise ValueError(f"column {name!r} is mapped twice: as {seen[name]} and as {role}")
            seen[name] = role

    def unit(self, column: str) -> str:
        """The unit of ``column`` (``""`` when none is given)."""
        return dict(self.units).get(column, "")

    @property
    def non_sensor_columns(self) -> tuple[str, ...]:
        """Every mapped column that is not a sensor."""
        cols = [self.lot, self.time, *self.targets, *self.keys]
        if self.label_time is not None:
            cols.append(self.label_time)
        return tuple(cols)
