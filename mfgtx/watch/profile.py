"""The training profile: what the watch needs of the training data, as plain numbers.

Shape legend: ``R`` rows, ``C`` sensors, ``Q`` quantile levels.

Written into a bundle's ``extra`` section under :data:`PROFILE_KEY` when it is trained (so the
bundle's checksums cover it like the rest of its manifest): per sensor the number of rows,
the share of missing readings, min, max, mean, standard deviation and :data:`N_QUANTILES`
quantiles at the levels ``(i + 0.5) / Q``; with operating regimes, the same per regime (rows
whose regime cannot be told are left out of the regimes, not of the whole). Given each row's
lot, each sensor (and regime) also keeps its training lots one by one
(:class:`~mfgtx.watch.lots.LotSummaries`), so the watch can judge recent lots against the
lot-to-lot variation training showed; a profile written without them (an older mfgtx) is
judged as before, reading by reading. Each lot also keeps its values of the job's key
columns (``data.columns.keys``, named in :attr:`TrainingProfile.keys`), so the watch can
judge a line's lots against that line's; a profile without them is judged across every lot.
A bundle written before profiles has none: :func:`profile_of` gives ``None`` and the watch
says so.

Example:
    >>> import numpy as np
    >>> values = np.array([[1.0, 5.0], [2.0, 5.0], [3.0, np.nan], [4.0, 5.0]])
    >>> p = TrainingProfile.from_values(values, ("temp", "flow"))
    >>> p.sensors["temp"].mean, p.sensors["flow"].missing, p.sensors["flow"].std
    (2.5, 0.25, 0.0)
    >>> TrainingProfile.from_dict(p.to_dict()) == p
    True
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mfgtx.watch.lots import LotSummaries

__all__ = ["N_QUANTILES", "PROFILE_KEY", "SensorProfile", "TrainingProfile", "profile_of"]

#: The key of the profile in a bundle's ``extra`` section.
PROFILE_KEY = "training_profile"
#: Quantiles kept per sensor (at the levels ``(i + 0.5) / N_QUANTILES``).
N_QUANTILES = 20
_VERSION = 1


def _levels(n: int = N_QUANTILES) -> np.ndarray:
    return (np.arange(n) + 0.5) / n  # (Q,)


def _plain(x: float) -> float | None:
    return float(x) if math.isfinite(x) else None


@dataclass(frozen=True)
class SensorProfile:
    """One sensor's training readings in numbers (``None``: no reading at all).

    Attributes:
        count: rows (readings and missing ones).
        missing: the share of rows without a reading.
        min, max, mean, std: of the readings.
        quantiles: the readings' quantiles at the levels ``(i + 0.5) / Q``.
        lots: the readings lot by lot, or ``None`` (no lots told, or an older profile).
    """

    count: int
    missing: float
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    std: float | None = None
    quantiles: tuple[float, ...] = ()
    lots: LotSummaries | None = None

    @classmethod
    def of(
        cls,
        values: np.ndarray,
        lot: np.ndarray | None = None,
        lot_keys: Sequence[tuple[str, ...] | None] | None = None,
    ) -> SensorProfile:
        """The profile of one sensor's readings ``(R,)`` (NaN: missing); ``lot`` ``(R,)``
        each row's lot index (``-1``: none) to keep the readings lot by lot too, with each
        lot index's key values ``lot_keys`` (see :class:`~mfgtx.watch.lots.LotSummaries`)."""
        values = np.asarray(values, dtype=np.float64)
        seen = values[np.isfinite(values)]
        count = int(values.size)
        missing = round(1.0 - seen.size / count, 6) if count else 0.0
        if not seen.size:
            return cls(count, missing)
        qs = np.quantile(seen, _levels())
        return cls(
            count,
            missing,
            float(seen.min()),
            float(seen.max()),
            float(seen.mean()),
            float(seen.std()),
            tuple(float(q) for q in qs),
            None if lot is None else LotSummaries.of(values, lot, lot_keys),
        )

    def to_dict(self) -> dict[str, Any]:
        lots = {} if self.lots is None else {"lots": self.lots.to_dict()}
        return {
            "count": self.count,
            "missing": self.missing,
            "min": self.min,
            "max": self.max,
            "mean": self.mean,
            "std": self.std,
            "quantiles": list(self.quantiles),
            **lots,
        }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> SensorProfile:
        def number(key: str) -> float | None:
            v = state.get(key)
            return None if v is None else float(v)

        quantiles = tuple(float(q) for q in state.get("quantiles") or ())
        lots = state.get("lots")
        return cls(
            int(state["count"]),
            float(state["missing"]),
            number("min"),
            number("max"),
            number("mean"),
            number("std"),
            quantiles,
            None if lots is None else LotSummaries.from_dict(lots),
        )


@dataclass(frozen=True)
class TrainingProfile:
    """The training data of a bundle, sensor by sensor (and regime by regime).

    Attributes:
        sensors: each sensor's :class:`SensorProfile` over every training row.
        regimes: ``{regime name: {sensor: SensorProfile}}``; empty without regimes.
        keys: the key columns (``data.columns.keys``) whose values each training lot's
            summaries record, in order; empty without (or in an older profile).
    """

    sensors: dict[str, SensorProfile]
    regimes: dict[str, dict[str, SensorProfile]] = field(default_factory=dict)
    keys: tuple[str, ...] = ()

    @classmethod
    def from_values(
        cls,
        values: np.ndarray,
        sensors: Sequence[str],
        *,
        regime: np.ndarray | None = None,
        regime_names: Sequence[str] = (),
        lot: np.ndarray | None = None,
        keys: Sequence[str] = (),
        lot_keys: Sequence[tuple[str, ...] | None] | None = None,
    ) -> TrainingProfile:
        """The profile of raw readings ``values`` ``(R, C)`` of ``sensors`` (NaN: missing);
        ``regime`` ``(R,)`` the regime index of each row (``-1``: not told),
        ``regime_names`` the name of each index and ``lot`` ``(R,)`` the lot index of each
        row (``-1``: none), to keep each sensor's readings lot by lot; ``lot_keys`` each
        lot index's values of the key columns ``keys`` (``None``: a lot without them)."""
        values = np.asarray(values, dtype=np.float64)
        if values.ndim != 2 or values.shape[1] != len(sensors):
            raise ValueError(f"values of shape {values.shape} do not hold {len(sensors)} sensors")
        if lot is not None and np.shape(lot) != (len(values),):
            raise ValueError(f"lot of shape {np.shape(lot)} for {len(values)} rows")
        if lot_keys is not None and not keys:
            raise ValueError("key values of lots without the key columns they belong to")
        told = lot_keys if lot is not None and keys else None
        whole = {s: SensorProfile.of(values[:, c], lot, told) for c, s in enumerate(sensors)}
        by_regime: dict[str, dict[str, SensorProfile]] = {}
        if regime is not None:
            for k, name in enumerate(regime_names):
                own = np.asarray(regime) == k  # (R,)
                rows = values[own]  # (R_k, C)
                lots = None if lot is None else np.asarray(lot)[own]
                if len(rows):
                    by_regime[str(name)] = {
                        s: SensorProfile.of(rows[:, c], lots, told) for c, s in enumerate(sensors)
                    }
        return cls(whole, by_regime, tuple(keys) if told is not None else ())

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (no NaN): what the bundle keeps."""
        return {
            "version": _VERSION,
            "quantile_levels": [round(float(x), 6) for x in _levels()],
            "sensors": {s: p.to_dict() for s, p in self.sensors.items()},
            "regimes": {
                r: {s: p.to_dict() for s, p in sensors.items()}
                for r, sensors in self.regimes.items()
            },
            **({"keys": list(self.keys)} if self.keys else {}),
        }

    @classmethod
    def from_dict(cls, state: Mapping[str, Any]) -> TrainingProfile:
        """Rebuild from :meth:`to_dict`.

        Raises:
            ValueError: not a profile this mfgtx reads.
        """
        if not isinstance(state, Mapping) or state.get("version") != _VERSION:
            found = state.get("version") if isinstance(state, Mapping) else state
            raise ValueError(f"a training profile of version {_VERSION} expected, found {found!r}")
        try:
            sensors = {str(s): SensorProfile.from_dict(p) for s, p in state["sensors"].items()}
            regimes = {
                str(r): {str(s): SensorProfile.from_dict(p) for s, p in ss.items()}
                for r, ss in (state.get("regimes") or {}).items()
            }
            keys = tuple(str(k) for k in state.get("keys") or ())
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise ValueError(f"a training profile with a bad entry: {e!r}") from e
        return cls(sensors, regimes, keys)


def profile_of(manifest: Mapping[str, Any]) -> TrainingProfile | None:
    """The training profile a bundle's manifest holds, or ``None`` (a bundle written before
    profiles, or of a model that reads no sensors).

    Raises:
        ValueError: the manifest holds a profile this mfgtx cannot read.
    """
    extra = manifest.get("extra") or {}
    state = extra.get(PROFILE_KEY) if isinstance(extra, Mapping) else None
    return None if state is None else TrainingProfile.from_dict(state)
