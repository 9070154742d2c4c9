"""Per-sensor scaling fitted on training windows only, saved with the model.

Shape legend: ``R`` table rows, ``C`` sensors, ``N`` windows, ``T`` window length.

A :class:`SensorScaler` is fitted from the table rows that the *training* windows cover and
remembers exactly which rows those were (as ``[start, stop)`` ranges), so that
:func:`mfgtx.split.audit` can prove that no validation or test row contributed to its
statistics. It serialises to plain JSON-compatible data (no pickle).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from mfgtx.data.windows import Windows

__all__ = ["SensorScaler"]

Method = Literal["standard", "robust"]


def _to_ranges(rows: np.ndarray) -> list[list[int]]:
    """Sorted distinct rows -> ``[[start, stop), ...]`` runs."""
    if rows.size == 0:
        return []
    breaks = np.flatnonzero(np.diff(rows) != 1)
    starts = np.concatenate([[rows[0]], rows[breaks + 1]])
    stops = np.concatenate([rows[breaks] + 1, [rows[-1] + 1]])
    return [[int(a), int(b)] for a, b in zip(starts, stops, strict=True)]


@dataclass(frozen=True)
class SensorScaler:
    """Per-sensor centring and scaling, ``(x - center) / scale``.

    Build it with :meth:`fit`; ``method="standard"`` uses mean and standard deviation,
    ``"robust"`` median and interquartile range / 1.349 (which equals the standard deviation
    for normal data, so both give comparable units). Missing values are ignored when
    fitting and stay missing when transforming. A sensor with no spread gets scale 1.

    Example:
        >>> import numpy as np
        >>> from mfgtx.data import Windows
        >>> w = Windows(values=np.arange(12, dtype=np.float32).reshape(6, 2),
        ...             row_start=np.array([0, 2, 4]), lot=np.array(["A", "A", "B"]),
        ...             start=np.zeros(3, "datetime64[ns]"), end=np.zeros(3, "datetime64[ns]"),
        ...             label_time=np.zeros(3, "datetime64[ns]"), y=None, sensors=("a", "b"),
        ...             targets=(), window=2, stride=2, horizon=0)
        >>> s = SensorScaler.fit(w, [0, 1])          # rows 0..3 only
        >>> s.center, s.fit_rows
        ((3.0, 4.0), ((0, 4),))
    """

    sensors: tuple[str, ...]
    method: Method
    center: tuple[float, ...]
    scale: tuple[float, ...]
    fit_rows: tuple[tuple[int, int], ...] = field(default=())

    def __post_init__(self) -> None:
        if self.method not in ("standard", "robust"):
            raise ValueError(f"method must be 'standard' or 'robust', found {self.method!r}")
        n = len(self.sensors)
        if len(self.center) != n or len(self.scale) != n:
            raise ValueError(
                f"scaler has {n} sensors but {len(self.center)} centers and "
                f"{len(self.scale)} scales"
            )
        if not all(np.isfinite(self.center)) or not all(s > 0 for s in self.scale):
            raise ValueError("scaler centers must be finite and scales positive")

    @classmethod
    def fit(
        cls,
        windows: Windows,
        train_indices: Sequence[int] | np.ndarray,
        method: Method = "standard",
    ) -> SensorScaler:
        """Fit on the rows covered by ``windows[train_indices]`` (the training set)."""
        rows = windows.rows(train_indices)
        if rows.size == 0:
            raise ValueError("cannot fit a scaler on an empty training set")
        values = windows.values[rows].astype(np.float64)  # (r, C)
        center, scale = [], []
        for j, name in enumerate(windows.sensors):
            col = values[:, j]
            col = col[~np.isnan(col)]
            if col.size == 0:
                raise ValueError(f"sensor {name!r} has no observed value in the training rows")
            if method == "robust":
                q1, med, q3 = np.percentile(col, [25, 50, 75])
                c, s = med, (q3 - q1) / 1.349
            else:
                c, s = col.mean(), col.std()
            center.append(float(c))
            scale.append(float(s) if s > 1e-12 else 1.0)
        return cls(
            sensors=tuple(windows.sensors),
            method=method,
            center=tuple(center),
            scale=tuple(scale),
            fit_rows=tuple((a, b) for a, b in _to_ranges(rows)),
        )

    def fitted_rows(self) -> np.ndarray:
        """The table rows the statistics came from, as a sorted array."""
        if not self.fit_rows:
            return np.empty(0, dtype=np.int64)
        return np.concatenate([np.arange(a, b) for a, b in self.fit_rows])

    def transform(self, x: np.ndarray) -> np.ndarray:
        """Scale ``x (..., C)``; NaN stays NaN."""
        if x.shape[-1] != len(self.sensors):
            raise ValueError(
                f"scaler was fitted on {len(self.sensors)} sensors {list(self.sensors)}, "
                f"input has {x.shape[-1]} columns"
            )
        center = np.asarray(self.center, dtype=np.float64)
        scale = np.asarray(self.scale, dtype=np.float64)
        return ((x - center) / scale).astype(np.float32)

    def inverse_transform(self, x: np.ndarray) -> np.ndarray:
        """Undo :meth:`transform` on ``x (..., C)``."""
        center = np.asarray(self.center, dtype=np.float64)
        scale = np.asarray(self.scale, dtype=np.float64)
        return (x * scale + center).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        """JSON-compatible state (saved next to the model)."""
        return {
            "sensors": list(self.sensors),
            "method": self.method,
            "center": list(self.center),
            "scale": list(self.scale),
            "fit_rows": [list(r) for r in self.fit_rows],
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> SensorScaler:
        """Rebuild from :meth:`to_dict`; raises ``ValueError`` on missing or bad fields."""
        expected = {"sensors", "method", "center", "scale", "fit_rows"}
        if set(state) != expected:
            raise ValueError(
                f"scaler state must have keys {sorted(expected)}, found {sorted(state)}"
            )
        return cls(
            sensors=tuple(str(s) for s in state["sensors"]),
            method=state["method"],
            center=tuple(float(c) for c in state["center"]),
            scale=tuple(float(s) for s in state["scale"]),
            fit_rows=tuple((int(a), int(b)) for a, b in state["fit_rows"]),
        )
