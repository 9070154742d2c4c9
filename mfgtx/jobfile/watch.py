"""How strict the watch is (``mfgtx watch``, :mod:`mfgtx.watch`): its thresholds, written once.

The defaults are chosen so that a sensor shifted by two training spreads, a dead sensor and a
model whose error has doubled are flagged, and data drawn like the training data is not
(``tests/watch``). A job file may change any of them under ``watch:``::

    watch:
      drift: 1.0            # distance (in training spreads) beyond which a sensor drifted
      false_alarms: 0.01    # share of watches of lots like training's that flag a sensor
      error_ratio: 2.0      # realized error / test error beyond which a model is not valid
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

__all__ = ["WatchSettings"]


@dataclass(frozen=True)
class WatchSettings:
    """The watch's thresholds (the job file's ``watch:`` section).

    Args:
        drift: a sensor drifted when the Wasserstein distance between its recent readings
            and its training distribution is beyond this many training spreads (standard
            deviations). A shift of the whole distribution by ``s`` spreads gives ``s``.
            This is a floor: where the training lots differed from each other, the limit
            is raised to what groups of as many training lots reach (``false_alarms``).
        outside_range: a sensor is flagged when more than this share of its recent readings
            lie outside the range it had in training (raised like ``drift``).
        false_alarms: the share of watches in which a sensor (in one regime) is flagged as
            drifted or out of range although its recent lots were drawn like the training
            lots: the limits are the distance and the outside share that groups of as many
            training lots, each compared with the other training lots, exceed in no more
            than this share of draws. Needs a bundle trained by an mfgtx that records its
            training lots one by one (older bundles: ``drift`` and ``outside_range`` alone).
        missing_increase: a sensor is flagged when its share of missing readings is this much
            above its share in training (0.2: twenty more readings in a hundred).
        min_readings: fewer recent readings of a sensor (or of a sensor in one regime) than
            this are not judged for drift.
        error_ratio: a model is not valid when its error on lots whose truth arrived is this
            many times its error on its own test lots.
        coverage_drop: a model's interval is flagged when the share of true values inside it
            falls this far below the share it was built for (0.8 for a 10-90 % interval).
        min_truth: fewer scored windows with their truth than this leave the model unjudged.
        last_lots: the lots of the score source the watch reads (the latest by time); 0:
            every lot.
    """

    drift: float = 1.0
    outside_range: float = 0.05
    false_alarms: float = 0.01
    missing_increase: float = 0.2
    min_readings: int = 30
    error_ratio: float = 2.0
    coverage_drop: float = 0.2
    min_truth: int = 10
    last_lots: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not math.isfinite(value) or value < 0:
                raise ValueError(f"{f.name}: expected a number of at least 0, found {value!r}")
        for name in ("outside_range", "missing_increase", "coverage_drop", "false_alarms"):
            if getattr(self, name) > 1:
                raise ValueError(f"{name}: a share between 0 and 1, found {getattr(self, name)}")
        if self.false_alarms <= 0:
            raise ValueError(f"false_alarms: a share above 0, found {self.false_alarms}")
        if self.drift <= 0 or self.error_ratio <= 1:
            raise ValueError(
                f"drift must be above 0 and error_ratio above 1, found drift {self.drift} and "
                f"error_ratio {self.error_ratio}"
            )
