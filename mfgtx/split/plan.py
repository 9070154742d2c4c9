"""How a job splits its lots: the frozen record a job file and a bundle share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from mfgtx.split.splitter import LotTimeSplit

__all__ = ["SplitPlan"]


@dataclass(frozen=True)
class SplitPlan:
    """A :class:`~mfgtx.split.LotTimeSplit` by lot shares or counts, and which test windows
    judge the model.

    Args:
        test_size, val_size: a share of the lots in (0, 1), or a whole number of lots.
        gap: time purged between sets (``30min``, ``2h``, ``1D``).
        evaluate_on: ``all`` windows, or each lot's ``last_per_lot`` (the prediction made
            when the lot ends).

    Example:
        >>> SplitPlan(test_size=3, val_size=0.2).splitter().test_size
        3
        >>> try:
        ...     SplitPlan(test_size=1.5)
        ... except ValueError as e:
        ...     print(str(e)[-40:])
        whole number of lots (e.g. 3), found 1.5
    """

    test_size: float = 0.25
    val_size: float = 0.2
    gap: str = "0s"
    evaluate_on: Literal["all", "last_per_lot"] = "all"

    def __post_init__(self) -> None:
        for name in ("test_size", "val_size"):
            v = getattr(self, name)
            if not (0 < v < 1 or (v >= 1 and float(v).is_integer())):
                raise ValueError(
                    f"{name} must be a share of the lots between 0 and 1 (e.g. 0.2) or a whole "
                    f"number of lots (e.g. 3), found {v:g}"
                )
        if self.test_size < 1 and self.val_size < 1 and self.test_size + self.val_size >= 1:
            raise ValueError(
                f"test_size + val_size must leave lots to train on: {self.test_size:g} + "
                f"{self.val_size:g} >= 1"
            )

    def splitter(self, *, validation: bool = True) -> LotTimeSplit:
        """The :class:`LotTimeSplit`; ``validation=False``: test lots only (the rest is
        training, e.g. for members that cross-fit their validation lots among it)."""

        def size(v: float) -> float | int:
            return int(v) if v >= 1 else v

        return LotTimeSplit(
            test_size=size(self.test_size),
            val_size=size(self.val_size) if validation else 0,
            gap=self.gap,
        )

    def to_dict(self) -> dict[str, Any]:
        return {"method": "LotTimeSplit", **self.__dict__}
