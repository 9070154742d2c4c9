"""What the kinds over sensor rows (``sensor``, ``forecast``) share as a :class:`Kind`.

Shape legend: ``N`` windows, ``T`` window rows, ``C`` sensors.

A window kind trains on the windows the job reads from its sensor rows (the jobs read them,
:func:`mfgtx.jobfile.prepare.read_windows`, cut as :meth:`WindowKind.cut` says), splits them by
lot and time, and is judged on the test lots beside the baselines of its task. A kind adds
its model: :meth:`WindowKind.cut`, :meth:`~WindowKind.need`, :meth:`~WindowKind.fit`,
:meth:`~WindowKind.judge` and its predictor; everything else here is the same for every
kind over sensor rows.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic

import numpy as np

from mfgtx._config import ConfigError
from mfgtx.baselines import EvaluationReport
from mfgtx.data import (
    ColumnMap,
    DataError,
    SensorScaler,
    SensorTable,
    Windowing,
    Windows,
)
from mfgtx.kinds._fitting import Fitted
from mfgtx.kinds._intervals import Splits
from mfgtx.kinds._job import (
    FitRequest,
    FitSetup,
    JobScores,
    JobSettings,
    RowReader,
    RowScorer,
)
from mfgtx.kinds._kind import Kind, SectionT
from mfgtx.kinds._predictor import SpecT
from mfgtx.kinds._split import SplitWindows, cross_fit, split_windows
from mfgtx.split import AuditReport, LeakageError

__all__ = ["WindowData", "WindowKind"]


@dataclass(frozen=True)
class WindowData:
    """A job's windows and the columns they were read with."""

    windows: Windows
    columns: ColumnMap


def _split_error(job: JobSettings, e: ValueError) -> Exception:
    """A split's ValueError as the job's :class:`ConfigError` (data and leakage errors as
    they are)."""
    if isinstance(e, DataError | LeakageError | ConfigError):
        return e
    return ConfigError(f"{job.source_file}: split: {e}")


def split(job: JobSettings, windows: Windows, *, strict: bool = True) -> SplitWindows:
    """:func:`~mfgtx.kinds.split_windows` with the job's ``split`` plan and regimes.

    Raises:
        LeakageError: the audit failed (``strict``).
        ConfigError: sizes or a gap that leave a set empty.
    """
    regimes = job.data.regimes if job.data is not None else None
    try:
        return split_windows(windows, job.split, strict=strict, regimes=regimes)
    except ValueError as e:
        raise _split_error(job, e) from e


class WindowKind(Kind[SectionT, SpecT, WindowData], Generic[SectionT, SpecT]):
    """A :class:`Kind` over sensor windows (see the module docstring)."""

    #: training reads the targets (and label times) of the data
    labelled: bool = True
    #: the model's name in reports
    report_name: str = "model"

    @abstractmethod
    def cut(self, windowing: Windowing, section: SectionT) -> Callable[[SensorTable], Windows]:
        """How training cuts a table into windows.

        Raises:
            ValueError: windowing settings the kind cannot use.
        """

    @abstractmethod
    def need(self, windowing: Windowing, section: SectionT) -> int:
        """Rows a lot needs for one training window."""

    @abstractmethod
    def fit(
        self,
        windows: Windows,
        columns: ColumnMap,
        windowing: Windowing,
        request: FitRequest[SectionT],
    ) -> Fitted:
        """Split, audit, fit, calibrate and judge ``windows`` (read with ``columns``, cut as
        ``windowing`` says) as ``request`` asks (``request.members``: an ensemble
        cross-fitted by lot)."""

    @abstractmethod
    def judge(
        self,
        predictor: Any,
        windows: Windows,
        train_idx: np.ndarray,
        test_idx: np.ndarray,
        *,
        scaler: SensorScaler,
        model_name: str = "model",
        splits: Splits | None = None,
    ) -> tuple[EvaluationReport, dict[str, float]]:
        """The report of ``predictor`` on ``test_idx`` beside the baselines fitted on
        ``train_idx`` (the same rule in train and evaluate), and the extra figures. An
        interval model's report carries its band's coverage on the test lots and, with
        ``splits`` (the ``(fit, validation)`` windows of the model's split), the ridge
        baseline's conformal interval from the same validation lots."""

    def check_windows(self, job: JobSettings, spec: SpecT, windows: Windows) -> None:
        """Refuse windows another than the bundle's (beyond its sensors).

        Raises:
            ConfigError: naming the setting that differs.
        """

    def judged_windows(
        self, windows: Windows, train: np.ndarray, test: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The windows a bundle is judged on and its baselines fitted on, of a split."""
        return np.asarray(train), np.asarray(test)

    # ------------------------------------------------------------------ training

    def read(self, job: JobSettings, rows: RowReader) -> WindowData:
        windows, columns = rows(self)
        return WindowData(windows, columns)

    def fingerprint(self, job: JobSettings, data: WindowData) -> tuple[Any, ...]:
        """The training and validation windows' inputs and labels."""
        windows = data.windows
        sets = split_windows(windows, job.split, strict=False).sets
        both = np.concatenate([np.asarray(sets.train), np.asarray(sets.val)])
        parts = [windows.values[windows.rows(both)], windows.lot[both].astype(str)]
        if windows.y is not None:
            parts.append(windows.y[both])
        return tuple(np.ascontiguousarray(p) for p in parts)

    def train(self, data: WindowData, job: JobSettings, setup: FitSetup) -> Fitted:
        return self.fit(data.windows, data.columns, job.windows, self.fit_request(job, setup))

    def audit(self, job: JobSettings, data: WindowData) -> tuple[dict[str, Any], AuditReport]:
        windows = data.windows
        ensemble = job.train.ensemble
        if ensemble is not None:  # audit the split training makes: members cross-fitted by lot
            return self._audit_cross_fit(job, windows, ensemble.members)
        prep = split(job, windows, strict=False)
        sets = prep.sets
        summary = {
            "command": "audit",
            "passed": prep.report.passed,
            "failed": list(prep.report.failed),
            "windows": {
                "train": len(sets.train),
                "val": len(sets.val),
                "test": len(sets.test),
                "purged": len(sets.purged),
            },
            "lots": {
                name: len(set(windows.lot[np.asarray(idx)]))
                for name, idx in (("train", sets.train), ("val", sets.val), ("test", sets.test))
            },
        }
        return summary, prep.report

    def _audit_cross_fit(
        self, job: JobSettings, windows: Windows, members: int
    ) -> tuple[dict[str, Any], AuditReport]:
        regimes = job.data.regimes if job.data is not None else None
        try:
            cf = cross_fit(windows, job.split, members, strict=False, regimes=regimes)
        except ValueError as e:
            raise _split_error(job, e) from e
        lots = {
            "train": len(set(windows.lot[cf.train])),
            "test": len(set(windows.lot[np.asarray(cf.test)])),
        }
        lots |= {
            f"member_{k}_val": len(set(windows.lot[val])) for k, (_, val) in enumerate(cf.members)
        }
        summary = {
            "command": "audit",
            "passed": cf.report.passed,
            "failed": list(cf.report.failed),
            "windows": {"train": len(cf.train), "test": len(cf.test), "members": members},
            "lots": lots,
        }
        return summary, cf.report

    # ------------------------------------------------------------------ judging

    def check_sensors(self, job: JobSettings, spec: Any, windows: Windows) -> None:
        """Refuse windows of other sensors than the bundle's.

        Raises:
            ConfigError: naming both lists.
        """
        expected = tuple(spec.columns.sensors or ())
        if windows.sensors != expected:
            raise ConfigError(
                f"{job.source_file}: data.columns.sensors: the bundle was trained on "
                f"{list(expected)}, the data gives {list(windows.sensors)}"
            )

    def evaluate(
        self, predictor: Any, job: JobSettings, data: WindowData
    ) -> tuple[EvaluationReport, dict[str, float], bool]:
        windows, spec = data.windows, predictor.input_spec
        self.check_sensors(job, spec, windows)
        self.check_windows(job, spec, windows)
        prep = split(job, windows, strict=False)
        train, test = self.judged_windows(windows, np.asarray(prep.sets.train), prep.test)
        calibrate = ((train, np.asarray(prep.sets.val)),)  # the bundle's validation lots
        report, extra = self.judge(
            predictor, windows, train, test, scaler=prep.scaler, model_name="bundle",
            splits=calibrate,
        )  # fmt: skip
        return report, extra, prep.report.passed

    def judge_external(
        self,
        predictor: Any,
        windows: Windows,
        learn: np.ndarray,
        judged: np.ndarray,
        *,
        scaler: SensorScaler,
    ) -> tuple[EvaluationReport, dict[str, float]]:
        return self.judge(predictor, windows, learn, judged, scaler=scaler, model_name="bundle")

    def check_external(self, job: JobSettings) -> None:
        """Sensor rows: an external test set is read like the training rows."""

    def bench(
        self, predictor: Any, job: JobSettings, rows: RowReader, *, batch: int, repeats: int
    ) -> dict[str, Any]:
        import torch

        windows, _ = rows(self)
        idx = np.arange(len(windows))
        best = float("inf")
        for _ in range(repeats):
            t0 = time.perf_counter()
            predictor.rows(windows, idx, batch_size=batch)
            best = min(best, time.perf_counter() - t0)
        return {
            "command": "bench",
            "bundle_id": predictor.bundle_id,
            "windows": len(idx),
            "window": windows.window,
            "batch_size": batch,
            "threads": torch.get_num_threads(),
            "seconds": round(best, 4),
            "windows_per_s": round(len(idx) / best, 1),
        }

    # ------------------------------------------------------------------ scoring

    def score_source(self, job: JobSettings) -> tuple[Any, Any]:
        sc = job.score
        source = sc.source or (job.data.source if job.data else None)
        if source is None:
            raise ConfigError(f"{job.source_file}: score.source: name the data to score")
        return source, source

    def scoring(self, predictor: Any, job: JobSettings, source: Any) -> tuple[Any, Any]:
        """``predictor`` with the job's columns and ``source`` with its CSV options, as
        :meth:`score` reads it (and the watch reads the same rows): a CSV option the source
        leaves out is ``data.source``'s, else the bundle's
        (:attr:`WindowPredictor.read_options`)."""
        if job.data is not None:  # the job file's mapping (a new plant's export) wins
            try:
                predictor = predictor.with_columns(job.data.column_map(targets=False))
            except ValueError as e:
                raise ConfigError(f"{job.source_file}: {e}") from e
            if source is not job.data.source:
                source = source.inheriting(job.data.source.csv_format(predictor.read_options.csv))
        return predictor, source.inheriting(predictor.read_options.csv)

    def score(self, predictor: Any, job: JobSettings, source: Any, rows: RowScorer) -> JobScores:
        """Score ``source`` with the job's columns (:meth:`scoring`)."""
        return rows(*self.scoring(predictor, job, source))

    def onnx_data(self, predictor: Any, job: JobSettings, rows: RowReader) -> tuple[Any, str]:
        windows, _ = rows(predictor.kind)
        return self.onnx_inputs(predictor, windows, np.arange(len(windows))), "windows"
