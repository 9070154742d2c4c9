"""The plant's own limits on a prediction or a sensor, declared in the job file (``limits:``).

A limit names a column (a prediction such as ``rul_cycles`` or ``p_bad``, or a sensor such as
``Massetemp_°C``) and what the plant holds it to: an alarm below or above a value, or a
specification band ``[low, high]``. The plant view draws them as lines on the trends; alerts
raise one when a value is beyond them::

    limits:
      rul_cycles: {alarm_below: 30}
      Massetemp_°C: {spec: [230, 240]}
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["Limit"]


def _number(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class Limit:
    """One column's limits.

    Args:
        alarm_below: a value below this raises an alarm (an RUL alarm at 30 cycles).
        alarm_above: a value above this raises an alarm (a bad-lot probability of 0.8).
        spec: the specification band ``[low, high]``; a value outside it is out of spec.
    """

    alarm_below: float | None = None
    alarm_above: float | None = None
    spec: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.alarm_below is None and self.alarm_above is None and self.spec is None:
            raise ValueError("name at least one of alarm_below, alarm_above, spec")
        for name in ("alarm_below", "alarm_above"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(value):
                raise ValueError(f"{name}: expected a finite number, found {value}")
        if self.spec is not None:
            if len(self.spec) != 2 or not all(math.isfinite(x) for x in self.spec):
                raise ValueError(f"spec: expected [low, high], found {list(self.spec)}")
            if self.spec[0] >= self.spec[1]:
                raise ValueError(f"spec: low {self.spec[0]:g} is not below high {self.spec[1]:g}")
        if (
            self.alarm_below is not None
            and self.alarm_above is not None
            and self.alarm_below >= self.alarm_above
        ):
            raise ValueError(
                f"alarm_below {self.alarm_below:g} is not below alarm_above {self.alarm_above:g}"
            )

    def lines(self) -> dict[str, float]:
        """The limit lines to draw, by name (``alarm below``, ``spec low``...)."""
        out: dict[str, float] = {}
        if self.alarm_below is not None:
            out["alarm below"] = self.alarm_below
        if self.alarm_above is not None:
            out["alarm above"] = self.alarm_above
        if self.spec is not None:
            out["spec low"], out["spec high"] = self.spec[0], self.spec[1]
        return out

    def breach(self, value: float) -> str | None:
        """What is wrong with ``value`` in plant words, or ``None`` when it is within every
        limit (a missing value breaches nothing: it is a data-quality matter)."""
        if value is None or not math.isfinite(value):
            return None
        if self.alarm_below is not None and value < self.alarm_below:
            return f"{_number(value)} is below the alarm limit {_number(self.alarm_below)}"
        if self.alarm_above is not None and value > self.alarm_above:
            return f"{_number(value)} is above the alarm limit {_number(self.alarm_above)}"
        if self.spec is not None and not self.spec[0] <= value <= self.spec[1]:
            low, high = self.spec
            return f"{_number(value)} is outside the spec {_number(low)} to {_number(high)}"
        return None
