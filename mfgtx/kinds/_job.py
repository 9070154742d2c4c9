"""What a kind reads of a job and hands back to it: the seam between :mod:`mfgtx.jobs` and
the kinds, which sit below the jobs and so name a job by what they need of it.

:class:`JobSettings` is the job file as a kind reads it, :class:`FitSetup` how the job
trains besides its data and sections, :data:`RowReader` / :data:`RowScorer` the jobs' reading
and scoring of sensor rows, and :class:`JobScores` what a scoring job scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

import numpy as np
import pandas as pd

from mfgtx.data import ColumnMap, RegimePlan, Windowing, Windows
from mfgtx.data.read_options import ReadOptions
from mfgtx.engine import Engine
from mfgtx.split import SplitPlan
from mfgtx.train import TrainConfig

if TYPE_CHECKING:
    from mfgtx.kinds._kind import Kind

__all__ = [
    "FitRequest",
    "FitSetup",
    "IntervalSettings",
    "JobScores",
    "JobSettings",
    "RowReader",
    "RowScorer",
    "SectionT",
]

#: A kind's job-file section (its frozen dataclass).
SectionT = TypeVar("SectionT")


@dataclass(frozen=True)
class FitSetup:
    """How a job trains, besides its data and its sections.

    Attributes:
        train: the :class:`~mfgtx.train.TrainConfig` (checkpoints, resume, seed ...).
        intervals: how an interval model's band is calibrated on the validation lots
            (``calibration.intervals``, ``coverage``, ``bounds``); ``None``: not at all.
        run_key: what the weights depend on (saved in checkpoints; ``--resume`` checks it).
        on_step: called with ``(step, loss)`` after every optimiser step, or ``None``.
        judge: calibrate and compare with the baselines (rank 0 under ``torchrun``).
        engine: where an ensemble's members train (:mod:`mfgtx.engine`, open); ``None``:
            one after another in this process.
    """

    train: TrainConfig
    run_key: dict[str, Any] | None = None
    on_step: Any = None
    judge: bool = True
    engine: Engine | None = None


@dataclass(frozen=True)
class IntervalSettings:
    """The job's ``calibration`` keys for interval models (see
    :class:`~mfgtx.jobfile.config.CalibrationSection`): ``method`` ``conformal``, ``cqr``,
    ``off`` or ``None`` (``cqr`` for a model with quantile heads, else off)."""

    method: str | None = None
    coverage: float | None = None
    bounds: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    horizon_block: int = 1

    def resolve(self, has_quantiles: bool) -> str | None:
        """``conformal``, ``cqr`` or ``None`` (no calibration) for a model with or without
        quantile heads.

        Raises:
            ValueError: ``cqr`` asked of a model without quantile heads.
        """
        if self.method == "off":
            return None
        if self.method == "cqr" and not has_quantiles:
            raise ValueError(
                "calibration.intervals: cqr widens the model's quantile band, and this model "
                "has no quantile heads; use conformal (a band around the point prediction) or "
                "give the model quantiles"
            )
        if self.method is None:
            return "cqr" if has_quantiles else None
        return self.method

    def coverage_for(self, levels: tuple[float, ...]) -> float:
        """The nominal coverage: the job's, else the span of the model's outermost
        quantiles ``levels``, else 0.8."""
        if self.coverage is not None:
            return self.coverage
        return round(max(levels) - min(levels), 9) if len(levels) >= 2 else 0.8

    def bound(
        self, targets: tuple[str, ...], truth: np.ndarray
    ) -> tuple[tuple[float | None, ...], tuple[float | None, ...]]:
        """``(lower, upper)``: one physical bound per target (``None``: unbounded), after
        checking the bounds name targets and hold the training truth ``(..., K)``.

        Raises:
            ValueError: a bound names no target, or the data holds values outside it.
        """
        unknown = sorted(set(self.bounds) - set(targets))
        if unknown:
            raise ValueError(
                f"calibration.bounds: {unknown} are not targets of this model (it predicts "
                f"{list(targets)})"
            )
        pairs = [self.bounds.get(t, (None, None)) for t in targets]
        lower, upper = tuple(p[0] for p in pairs), tuple(p[1] for p in pairs)
        for k, name in enumerate(targets):
            y = truth[..., k][np.isfinite(truth[..., k])]
            lo, hi = lower[k], upper[k]
            if y.size and ((lo is not None and y.min() < lo) or (hi is not None and y.max() > hi)):
                raise ValueError(
                    f"calibration.bounds.{name}: [{lo}, {hi}] but the data holds {name} from "
                    f"{y.min():g} to {y.max():g}; correct the bound or the data"
                )
        return lower, upper


@dataclass(frozen=True)
class FitRequest(Generic[SectionT]):
    """What a kind's ``fit`` is asked to do besides reading its data: one training run's
    settings, built once from the job and its :class:`FitSetup`
    (:meth:`~mfgtx.kinds.Kind.fit_request`), or by hand from Python.

    Attributes:
        section: the kind's job-file section (its model's settings, e.g. a
            :class:`~mfgtx.kinds.SensorSection`).
        plan: how the data is split by lot and time (the job's ``split``).
        train: the :class:`~mfgtx.train.TrainConfig` (epochs, seed, checkpoints, resume ...).
        cost_ratio: a classifier's cost of a missed defect in false alarms, which places its
            decision threshold (``calibration.cost_ratio``); ``None``: no threshold.
        run_key: what the weights depend on (saved in checkpoints; ``--resume`` checks it);
            ``None``: not checked.
        on_step: called with ``(step, loss)`` after every optimiser step, or ``None``.
        judge: calibrate and compare with the baselines; ``False`` on the other processes
            under ``torchrun`` (rank 0 judges and writes).
        members: train an ensemble of this many models cross-fitted by lot
            (``train.ensemble.members``); ``None``: one model. A kind without ensembles
            refuses it (:meth:`~mfgtx.kinds.Kind.check_train`).
        regimes: the operating regimes fitted on the training rows (``data.regimes``), or
            ``None``; the jobs refuse them for a kind that does not take them
            (``takes_regimes``) before reading its rows.
        read: how the training source's files are written (CSV dialect, time format and
            zone, pass/fail words), saved in the bundle's input spec so that every entry
            point reads another file the same way.
        engine: where the members train (an open :class:`~mfgtx.engine.Engine`: each
            member one task, ``fn(member, **shared)``, with the engine's threads); ``None``:
            one after another in this process. ``on_step`` then runs inside each task (on
            Ray: in the worker process, so it must be a module-level function or picklable).

    Example:
        >>> from mfgtx.kinds import SensorSection
        >>> from mfgtx.split import SplitPlan
        >>> from mfgtx.train import TrainConfig
        >>> request = FitRequest(SensorSection(d_model=16), SplitPlan(), TrainConfig(epochs=2))
        >>> request.section.d_model, request.members, request.judge
        (16, None, True)
    """

    section: SectionT
    plan: SplitPlan
    train: TrainConfig
    cost_ratio: float | None = None
    intervals: IntervalSettings | None = None
    run_key: dict[str, Any] | None = None
    on_step: Any = None
    judge: bool = True
    members: int | None = None
    regimes: RegimePlan | None = None
    read: ReadOptions = field(default_factory=ReadOptions)
    engine: Engine | None = None


class JobSettings(Protocol):
    """What a kind reads of a job file: :class:`mfgtx.jobs.JobConfig` meets it (the kinds
    sit below the jobs, so they name the job by what they need of it). Read-only: a job is
    a frozen dataclass."""

    @property
    def source_file(self) -> str: ...
    @property
    def windows(self) -> Windowing: ...
    @property
    def split(self) -> SplitPlan: ...
    @property
    def data(self) -> Any: ...
    @property
    def images(self) -> Any: ...
    @property
    def train(self) -> Any: ...
    @property
    def calibration(self) -> Any: ...
    @property
    def score(self) -> Any: ...
    @property
    def evaluate(self) -> Any: ...
    @property
    def bundle(self) -> str | None: ...

    def require(self, *keys: str) -> None: ...
    def section(self, key: str) -> Any: ...
    def read_options(self) -> ReadOptions: ...


#: The jobs' reading of a job's sensor rows as a kind cuts them
#: (:func:`mfgtx.jobfile.prepare.read_windows`).
RowReader = Callable[["Kind[Any, Any, Any]"], "tuple[Windows, ColumnMap]"]
#: The jobs' scoring of a job's sensor rows, lot by lot, with a window predictor.
RowScorer = Callable[[Any, Any], "JobScores"]


@dataclass(frozen=True)
class JobScores:
    """What a scoring job scored: the rows to write, the errors-file rows, the counts.

    Attributes:
        rows: every output row.
        errors: errors-file rows (bad lots or images, and warnings about scored lots).
        keys: the output's key columns (rows are replaced by these when written again).
        unit: ``windows`` (of ``lots``) or ``images``.
        lots, windows, warnings: sensor rows: lots and windows scored, warnings among the
            errors; images: ``lots`` is the images scored.
    """

    rows: pd.DataFrame
    errors: list[dict[str, object]]
    keys: tuple[str, ...]
    unit: Literal["windows", "images"]
    lots: int = 0
    windows: int = 0
    warnings: int = 0
