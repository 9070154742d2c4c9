"""How a table is cut into windows: the one frozen record a job file, a bundle and scoring share.

Shape legend: ``T`` window length.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mfgtx.data.table import SensorTable
from mfgtx.data.windowing import make_windows
from mfgtx.data.windows import Windows

__all__ = ["Windowing"]


@dataclass(frozen=True)
class Windowing:
    """Windows cut from every lot: ``window`` rows each, ``stride`` apart (default window/4).

    Args:
        window: rows per window ``T`` (a forecaster's context).
        stride: rows between window starts within a lot (default ``window // 4``); each lot
            also gets the window ending at its last row.
        on_short: ``"skip"`` (left out with a warning naming them) or ``"error"`` for lots
            too short for one window.
        min_rows: windows may reach back before a lot's first row (those steps missing), so
            every lot with ``min_rows`` rows gets windows and a model reads each lot's whole
            history up to ``window`` rows (see :func:`~mfgtx.data.make_windows`).

    Example:
        >>> Windowing(window=120, stride=30).need, Windowing(window=30, min_rows=5).need
        (120, 5)
        >>> Windowing(window=30, min_rows=40)
        Traceback (most recent call last):
        ...
        ValueError: min_rows must be between 1 and window=30, found 40
    """

    window: int = 60
    stride: int | None = None
    on_short: Literal["error", "skip"] = "skip"
    min_rows: int | None = None

    def __post_init__(self) -> None:
        if self.window < 2:
            raise ValueError(f"window must be >= 2 rows, found {self.window}")
        if self.stride is not None and self.stride < 1:
            raise ValueError(f"stride must be >= 1, found {self.stride}")
        if self.min_rows is not None and not 1 <= self.min_rows <= self.window:
            raise ValueError(
                f"min_rows must be between 1 and window={self.window}, found {self.min_rows}"
            )

    @property
    def need(self) -> int:
        """Rows a lot needs for one window (without a forecast horizon)."""
        return self.min_rows or self.window

    @property
    def step(self) -> int:
        """The stride, ``window // 4`` when none is set."""
        return self.stride or max(1, self.window // 4)

    def cut(
        self,
        table: SensorTable,
        *,
        stride: int | None = None,
        horizon: int = 0,
        forecast: tuple[str, ...] | None = None,
        on_short: Literal["error", "skip"] | None = None,
    ) -> Windows:
        """The windows of ``table`` (``stride`` overrides :attr:`step`; ``horizon`` and
        ``forecast`` cut forecast windows); each lot's last window ends at its last row."""
        return make_windows(
            table,
            self.window,
            stride=stride or self.step,
            horizon=horizon,
            forecast=forecast,
            on_short=on_short or self.on_short,
            min_rows=self.min_rows,
            include_last=True,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "stride": self.step,
            "on_short": self.on_short,
            "min_rows": self.min_rows,
        }
