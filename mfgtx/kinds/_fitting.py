"""What a kind's training gives (:class:`Fitted`: the model and everything its bundle holds)
and the helpers of an ensemble's training (each member's config, the members' fits as one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mfgtx.baselines import EvaluationReport
from mfgtx.split import AuditReport

__all__ = ["Fitted", "member_config", "merged_fit"]


@dataclass(frozen=True)
class Fitted:
    """A trained model with everything its bundle holds.

    Attributes:
        model: the trained model (best validation weights, eval mode).
        spec: the kind's input specification.
        fit: the :class:`~mfgtx.train.FitResult`.
        report: the comparison with the baselines on the test lots (``None`` on the other
            processes under ``torchrun``, which do not judge).
        audit: the split's :class:`~mfgtx.split.AuditReport`.
        split: how the data was split (JSON).
        counts: windows or images per set.
        calibration: a classifier's calibration, or ``None``.
        train_config: the :class:`~mfgtx.train.TrainConfig` it trained with.
        extra_metrics: figures beside the report (interval coverage, flag recall ...).
        best_baseline: the fitted state of the report's best baseline where the kind can
            keep it (the forecast baselines' :meth:`state`), else ``None``.
        extra: more of the bundle's ``extra`` section, by key (the training profile the
            watch reads, :mod:`mfgtx.watch.profile`, added by the train job).
        intervals: an interval model's
            :class:`~mfgtx.calibration.conformal.IntervalCalibration` (fitted on the
            validation lots), or ``None``; saved as ``extra.interval_calibration``.
    """

    model: Any
    spec: Any
    fit: Any
    report: EvaluationReport | None
    audit: AuditReport
    split: dict[str, Any]
    counts: dict[str, int]
    calibration: Any = None
    train_config: Any = None
    extra_metrics: dict[str, float] = field(default_factory=dict)
    best_baseline: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    intervals: Any = None

    @property
    def metrics(self) -> dict[str, float]:
        """The model's test metrics (the report's first row) and the extra figures."""
        out = {} if self.report is None else dict(self.report.rows[0].metrics)
        out = {k: round(float(v), 6) for k, v in out.items()}
        return {**out, **self.extra_metrics}


def merged_fit(fits: list[Any]) -> Any:
    """One :class:`~mfgtx.train.FitResult` for the members of an ensemble: their histories
    one after another, the last member's best epoch, the mean best validation loss."""
    from dataclasses import replace as dc_replace

    history = tuple(h for f in fits for h in f.history)
    return dc_replace(
        fits[-1],
        history=history,
        best_val_loss=float(np.mean([f.best_val_loss for f in fits])),
        stopped_early=any(f.stopped_early for f in fits),
        resumed_from_epoch=sum(f.resumed_from_epoch for f in fits),
    )


def member_config(train: Any, k: int) -> Any:
    """Member ``k``'s training config: its own seed and checkpoint folder."""
    from dataclasses import replace as dc_replace

    ckpt = None if train.checkpoint_dir is None else str(Path(train.checkpoint_dir) / f"member-{k}")
    return dc_replace(train, seed=train.seed + k, checkpoint_dir=ckpt)
