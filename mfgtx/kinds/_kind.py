"""The seam of mfgtx's model kinds: :class:`Kind`, everything the jobs, the CLI, explain and
serving need of one model.

A *kind* (:mod:`mfgtx.kinds.sensor`, :mod:`~mfgtx.kinds.forecast`, :mod:`~mfgtx.kinds.vit`)
is the one place that knows its model: its job-file section, its input specification, how
it is built from data, trained, calibrated and compared, how its bundle is written and read,
and how it predicts a frame of rows or a set of images. What it reads of a job is in
:mod:`mfgtx.kinds._job`, its predictor in :mod:`~mfgtx.kinds._predictor`, what training
gives in :mod:`~mfgtx.kinds._fitting` and how it splits its windows in
:mod:`~mfgtx.kinds._split`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Generic, NoReturn, TypeVar

import numpy as np

from mfgtx._config import ConfigError
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.baselines import EvaluationReport
from mfgtx.calibration.conformal import BUNDLE_KEY as INTERVALS_KEY
from mfgtx.data import SensorScaler, Windows
from mfgtx.kinds._fitting import Fitted
from mfgtx.kinds._job import (
    FitRequest,
    FitSetup,
    IntervalSettings,
    JobScores,
    JobSettings,
    RowReader,
    RowScorer,
    SectionT,
)
from mfgtx.kinds._predictor import Predictor, SpecT
from mfgtx.split import AuditReport

__all__ = ["DataT", "Kind", "SectionT"]


#: What a kind trains and is judged on (windows, prepared images).
DataT = TypeVar("DataT")


class Kind(ABC, Generic[SectionT, SpecT, DataT]):
    """A model kind: everything mfgtx knows about one model, in one place.

    ``SectionT`` is its job-file section, ``SpecT`` the input specification its bundles
    save, ``DataT`` what it trains and is judged on (windows, prepared images). The jobs,
    the CLI, explain and serving call only what this class declares; a kind registers
    itself with :func:`mfgtx.kinds.register_kind`.

    Attributes:
        name: ``mfgtx train NAME``.
        model_name: the model's name in bundle manifests (e.g. ``mfgtx.SensorEncoder``).
        model_class: the model class.
        section_key: the job-file section of the model's settings.
        Section: that section's frozen dataclass.
        job_sections: the job-file sections that describe the model and its input (the
            training run depends on them; :func:`describes` looks for the first).
        default: the kind of a job file that names no other kind's section.
        takes_regimes: reads ``data.regimes`` (operating regimes).
    """

    name: ClassVar[str]
    model_name: ClassVar[str]
    model_class: ClassVar[type]
    #: the kind's ensemble of ``model_class`` members, and its name in manifests (or None)
    ensemble_name: ClassVar[str | None] = None
    ensemble_class: ClassVar[type | None] = None
    section_key: ClassVar[str]
    Section: ClassVar[type]
    job_sections: ClassVar[tuple[str, ...]] = ()
    default: ClassVar[bool] = False
    takes_regimes: ClassVar[bool] = False

    @property
    def sections(self) -> tuple[str, ...]:
        """:attr:`job_sections`, or the model's own section."""
        return self.job_sections or (self.section_key,)

    @property
    def model_names(self) -> tuple[str, ...]:
        """Every model class name a bundle of this kind may give."""
        return (self.model_name,) + ((self.ensemble_name,) if self.ensemble_name else ())

    def model_classes(self) -> dict[str, type]:
        """The kind's model classes by the names bundle manifests give them."""
        out: dict[str, type] = {self.model_name: self.model_class}
        if self.ensemble_name and self.ensemble_class is not None:
            out[self.ensemble_name] = self.ensemble_class
        return out

    def describes(self, job: JobSettings) -> bool:
        """Whether ``job`` is a job of this kind (it has the kind's first section)."""
        return job.section(self.sections[0]) is not None

    def section(self, job: JobSettings) -> SectionT:
        """The job's section of this kind's model settings.

        Raises:
            ConfigError: the job has none.
        """
        section = job.section(self.section_key)
        if section is None:
            raise ConfigError(f"{job.source_file}: {self.section_key}: required by this kind")
        return section

    # ------------------------------------------------------------------ training

    def fit_request(self, job: JobSettings, setup: FitSetup) -> FitRequest[SectionT]:
        """What :meth:`train` asks the kind's ``fit``: the job's section, split, calibration,
        ensemble and regimes, and ``setup``'s training settings."""
        ensemble = job.train.ensemble
        return FitRequest(
            section=self.section(job),
            plan=job.split,
            train=setup.train,
            cost_ratio=job.calibration.cost_ratio,
            intervals=IntervalSettings(
                method=job.calibration.intervals,
                coverage=job.calibration.coverage,
                bounds=dict(job.calibration.bounds),
                horizon_block=job.calibration.horizon_block,
            ),
            run_key=setup.run_key,
            on_step=setup.on_step,
            judge=setup.judge,
            members=ensemble.members if ensemble is not None else None,
            regimes=job.data.regimes if job.data is not None else None,
            read=job.read_options(),
            engine=setup.engine,
        )

    def check_train(self, job: JobSettings) -> None:
        """Refuse, before any data is read, job settings this kind cannot train with.

        Raises:
            ConfigError: naming the setting.
        """

    @abstractmethod
    def read(self, job: JobSettings, rows: RowReader) -> DataT:
        """The job's training data (``rows`` reads sensor rows as this kind cuts them).

        Raises:
            ConfigError: a missing section or settings that do not fit the data.
            DataError: the data cannot be read.
        """

    @abstractmethod
    def fingerprint(self, job: JobSettings, data: DataT) -> tuple[Any, ...]:
        """The training and validation data as arrays or text, for the run key."""

    def left_out(self, job: JobSettings, data: DataT) -> list[dict[str, Any]] | None:
        """Inputs training leaves out and lists in ``<bundle>.errors.csv`` (``None``: the
        kind writes no such file)."""
        return None

    def writes_left_out(self, job: JobSettings) -> bool:
        """Whether training ``job`` writes ``<bundle>.errors.csv`` (checked before reading)."""
        return False

    def release(self, data: DataT) -> None:
        """Free what ``data`` holds outside memory (scratch files)."""

    @abstractmethod
    def train(self, data: DataT, job: JobSettings, setup: FitSetup) -> Fitted:
        """Split, audit, fit, calibrate and judge ``data`` as ``job`` says.

        Raises:
            LeakageError: the split fails its audit.
            ValueError: settings that do not fit the data (naming them).
        """

    @abstractmethod
    def audit(self, job: JobSettings, data: DataT) -> tuple[dict[str, Any], AuditReport]:
        """The summary line and the audit of the split training would make (never raises on
        leakage)."""

    # ------------------------------------------------------------------ judging

    @abstractmethod
    def evaluate(
        self, predictor: Any, job: JobSettings, data: DataT
    ) -> tuple[EvaluationReport, dict[str, float], bool]:
        """``(report, extra figures, audit passed)`` of a loaded bundle on the test part of
        ``data``, beside the baselines fitted on its training part.

        Raises:
            ConfigError: ``data`` is not what the bundle reads.
        """

    def check_external(self, job: JobSettings) -> None:
        """Refuse an ``evaluate`` section (an external test set of sensor rows) this kind
        cannot be judged on.

        Raises:
            ConfigError: saying what to do instead.
        """
        raise ConfigError(
            f"{job.source_file}: evaluate: an external test set is read as sensor rows; a "
            f"{self.name} bundle cannot be judged on one"
        )

    def judge_external(
        self,
        predictor: Any,
        windows: Windows,
        learn: np.ndarray,
        judged: np.ndarray,
        *,
        scaler: SensorScaler,
    ) -> tuple[EvaluationReport, dict[str, float]]:
        """The report of a bundle on an external test set of sensor windows (``judged``),
        beside the baselines fitted on ``learn`` (after :meth:`check_external`)."""
        raise NotImplementedError(f"{self.name}: no external test set (check_external)")

    @abstractmethod
    def bench(
        self, predictor: Any, job: JobSettings, rows: RowReader, *, batch: int, repeats: int
    ) -> dict[str, Any]:
        """Scoring throughput of ``predictor`` on the job's data (the summary line)."""

    # ------------------------------------------------------------------ scoring

    @abstractmethod
    def score_source(self, job: JobSettings) -> tuple[Any, Any]:
        """``(what to score, the SQL source it reads or None)`` for ``mfgtx score``.

        Raises:
            ConfigError: the job names nothing to score.
        """

    @abstractmethod
    def score(self, predictor: Any, job: JobSettings, source: Any, rows: RowScorer) -> JobScores:
        """Score ``source`` with a loaded bundle (``rows`` scores sensor rows lot by lot)."""

    # ------------------------------------------------------------------ serving

    @abstractmethod
    def onnx_signature(self, predictor: Any) -> tuple[tuple[str, ...], tuple[str, ...], Any]:
        """``(input names, output names, module)`` of the model's ONNX export: ``module``
        takes the inputs in that order and returns the outputs as a tuple."""

    @abstractmethod
    def onnx_inputs(
        self, predictor: Any, data: Any, idx: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        """The model's inputs for ``data`` (what :meth:`onnx_data` gives), as the predictor
        feeds them, by input name."""

    @abstractmethod
    def onnx_example(self, predictor: Any, names: tuple[str, ...]) -> dict[str, Any]:
        """Two samples of the model's input shape, for tracing the export."""

    @abstractmethod
    def onnx_data(self, predictor: Any, job: JobSettings, rows: RowReader) -> tuple[Any, str]:
        """The job's data to time an export on, and its unit (``windows``, ``images``)."""

    # ------------------------------------------------------------------ bundles

    @abstractmethod
    def spec_from_bundle(self, bundle: Bundle) -> SpecT:
        """The input specification of ``bundle`` (or of a bundle of an earlier layout).

        Raises:
            BundleError: the bundle lacks what the model needs to read its inputs.
        """

    @abstractmethod
    def predictor(self, bundle: Bundle) -> Predictor[SpecT]:
        """The :class:`Predictor` of a loaded bundle of this kind."""

    def save(
        self, path: str | Path, fitted: Fitted, *, job: Mapping[str, Any] | None = None
    ) -> Path:
        """Write ``fitted`` as a bundle at ``path`` (replacing an earlier bundle there).

        ``job`` (the job file's settings) is kept for the record only, never read back."""
        from mfgtx.artifacts import save_bundle

        ensemble = self.ensemble_class is not None and isinstance(fitted.model, self.ensemble_class)
        return save_bundle(
            path,
            fitted.model,
            model_name=self.ensemble_name if ensemble else self.model_name,
            kind=self.name,
            input_spec=fitted.spec,
            scaler=getattr(fitted.spec, "scaler", None),
            split=fitted.split,
            audit=fitted.audit,
            metrics=None
            if fitted.report is None
            else {**fitted.report.to_dict(), "extra": dict(fitted.extra_metrics)},
            train_config=fitted.train_config,
            calibration=fitted.calibration,
            precision=fitted.fit.precision,
            extra=_extra(fitted, job),
            overwrite=True,
        )

    def old_layout(self, bundle: Bundle, *needed: str) -> dict[str, Any]:
        """``extra.job`` of a bundle written before input specifications (format 2), after
        checking it holds ``needed``; otherwise a :class:`BundleError` naming the bundle."""
        job = (bundle.manifest.get("extra") or {}).get("job") or {}
        missing = [k for k in needed if job.get(k) is None]
        if missing:
            self.too_old(bundle, *missing)
        return job

    def too_old(self, bundle: Bundle, *missing: str) -> NoReturn:
        """Raise the :class:`BundleError` of a bundle written by an earlier mfgtx without
        ``missing``, which this version needs to read its inputs."""
        raise BundleError(
            f"{bundle.path} was written by an earlier mfgtx without the input "
            f"specification this version needs (missing {list(missing)}); retrain it with "
            f"`mfgtx train {self.name} JOB.yaml`",
            file=bundle.path,
        )


def _extra(fitted: Fitted, job: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The bundle's ``extra`` section: the job file (for the record), the best baseline and
    what the train job added (``fitted.extra``: the training profile)."""
    extra: dict[str, Any] = dict(fitted.extra)
    if job is not None:
        extra["job_file"] = dict(job)
    if fitted.best_baseline is not None:
        extra["best_baseline"] = fitted.best_baseline
    if fitted.intervals is not None:  # plain numbers, in the manifest the checksums cover
        extra[INTERVALS_KEY] = fitted.intervals.to_dict()
    return extra or None
