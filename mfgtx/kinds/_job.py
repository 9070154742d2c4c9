"""What a kind reads of a job and hands back to it: the seam between :mod:`mfgtx.jobs` and
the kinds, which sit below the jobs and so name a job by what they need of it.

:class:`JobSettings` is the job file as a kind reads it, :class:`FitSetup` how the job
trains besides its data and sections, :data:`RowReader` / :data:`RowScorer` the jobs' reading
and scoring of sensor rows, and :class:`JobScores` what a scoring job scored.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

import pandas as pd

from mfgtx.data import ColumnMap, Windowing, Windows
from mfgtx.split import SplitPlan
from mfgtx.train import TrainConfig

if TYPE_CHECKING:
    from mfgtx.kinds._kind import Kind

__all__ = ["FitSetup", "JobScores", "JobSettings", "RowReader", "RowScorer"]


@dataclass(frozen=True)
class FitSetup:
    """How a job trains, besides its data and its sections.

    Attributes:
        train: the :class:`~mfgtx.train.TrainConfig` (checkpoints, resume, seed ...).
        run_key: what the weights depend on (saved in checkpoints; ``--resume`` checks it).
        on_step: called with ``(step, loss)`` after every optimiser step, or ``None``.
        judge: calibrate and compare with the baselines (rank 0 under ``torchrun``).
    """

    train: TrainConfig
    run_key: dict[str, Any] | None = None
    on_step: Any = None
    judge: bool = True


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


#: The jobs' reading of a job's sensor rows as a kind cuts them
#: (:func:`mfgtx.jobs.prepare.read_windows`).
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
