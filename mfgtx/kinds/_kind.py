"""What every model kind shares: the trained result, the predictor, splitting and reporting.

A *kind* (:mod:`mfgtx.kinds.sensor`, :mod:`~mfgtx.kinds.forecast`, :mod:`~mfgtx.kinds.vit`)
is the one place that knows its model: its job-file section, its input specification, how
it is built from data, trained, calibrated and compared, how its bundle is written and read,
and how it predicts a frame of rows or a set of images. The :class:`Predictor` of a bundle is
what ``mfgtx score``, ``mfgtx evaluate``, the dashboard and a Python user all call.
"""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, NoReturn, Protocol, TypeVar

import numpy as np
import pandas as pd

from mfgtx._config import ConfigError
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.baselines import EvaluationReport
from mfgtx.data import ColumnMap, DataError, RegimePlan, Regimes, SensorScaler, Windowing, Windows
from mfgtx.split import AuditReport, SplitPlan, SplitSets, audit
from mfgtx.train import TrainConfig

__all__ = [
    "CrossFit",
    "FitSetup",
    "Fitted",
    "InputSpec",
    "JobScores",
    "JobSettings",
    "Kind",
    "Predictor",
    "Scored",
    "SplitWindows",
    "Trained",
    "cross_fit",
    "error_row",
    "member_config",
    "merged_fit",
    "split_windows",
    "target_values",
    "time_text",
]

log = logging.getLogger("mfgtx.kinds")


def time_text(values: np.ndarray) -> list[str]:
    """Window times as text: ISO 8601 (UTC) for timestamps, the number for cycles."""
    if np.issubdtype(values.dtype, np.datetime64):
        return [t.isoformat() for t in pd.to_datetime(values, utc=True)]
    return [repr(float(v)) for v in values]


def target_values(windows: Windows) -> np.ndarray:
    """``windows.y``: the targets a model is trained and judged on.

    Raises:
        ValueError: the windows carry none (they were read without targets).
    """
    if windows.y is None:
        raise ValueError(
            "the windows carry no targets to train or judge a model on; name them in "
            "data.columns.targets"
        )
    return windows.y


def error_row(lot: object, err: Exception) -> dict[str, object]:
    """An errors-file row (``lot``, ``file``, ``line``, ``column``, ``reason``) for ``err``.

    The file and line are the error's own (:class:`~mfgtx.data.DataError` ``file`` and
    ``line``): its message was worded with them when it was raised, from the places that
    travel with the rows (:class:`~mfgtx.data.table.Where`).
    """
    line = getattr(err, "line", None)
    return {
        "lot": None if lot is None else str(lot),
        "file": getattr(err, "file", None),
        "line": None if line is None else int(line),
        "column": getattr(err, "column", None),
        "reason": str(err) or f"{type(err).__name__} (no reason given)",
    }


def _text(value: object) -> str | None:
    """An errors-file cell as text (``None`` for an empty one)."""
    return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)


# --------------------------------------------------------------------------- splitting


@dataclass(frozen=True)
class SplitWindows:
    """Windows split by lot and time, with the training-only scaler and the audit.

    Attributes:
        windows: every window, as the model reads them (normalised per regime with
            ``regimes``).
        sets: the split (train / val / test / purged).
        scaler: fitted on the training windows only.
        report: the split audit (it passed, or :func:`split_windows` raised).
        val, test: the windows the model is judged on (every window, or each lot's last one
            with ``evaluate_on: last_per_lot``).
        regimes: the operating regimes fitted on the training rows, or ``None``.
    """

    windows: Windows
    sets: SplitSets
    scaler: SensorScaler
    report: AuditReport
    val: np.ndarray
    test: np.ndarray
    regimes: Regimes | None = None

    @property
    def counts(self) -> dict[str, int]:
        s = self.sets
        return {
            "train": len(s.train),
            "val": len(s.val),
            "test": len(self.test),
            "purged": len(s.purged),
        }


def split_windows(
    windows: Windows,
    plan: SplitPlan,
    *,
    strict: bool = True,
    regimes: RegimePlan | None = None,
) -> SplitWindows:
    """Split by lot and time, fit the regimes (if any) and the scaler on the training
    windows, audit the split.

    Raises:
        LeakageError: the audit failed (``strict``).
        ValueError: the sizes or gap leave a set empty.
    """
    (sets,) = plan.splitter().split_sets(windows)
    fitted, model_windows = _regimes(windows, sets.train, regimes)
    scaler = SensorScaler.fit(model_windows, sets.train)
    report = audit(windows, sets, scaler=scaler, regimes=fitted, strict=strict)
    last = plan.evaluate_on == "last_per_lot"
    val = windows.last_per_lot(sets.val) if last else np.asarray(sets.val)
    test = windows.last_per_lot(sets.test) if last else np.asarray(sets.test)
    return SplitWindows(model_windows, sets, scaler, report, val, test, fitted)


def _regimes(
    windows: Windows, train: Any, plan: RegimePlan | None
) -> tuple[Regimes | None, Windows]:
    """The regimes fitted on the rows of the ``train`` windows and the windows as the model
    reads them (``windows`` itself without a plan)."""
    if plan is None:
        return None, windows
    fitted = Regimes.fit(windows, train, plan)
    return fitted, fitted.apply(windows)


# --------------------------------------------------------------------------- results


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

    @property
    def metrics(self) -> dict[str, float]:
        """The model's test metrics (the report's first row) and the extra figures."""
        out = {} if self.report is None else dict(self.report.rows[0].metrics)
        out = {k: round(float(v), 6) for k, v in out.items()}
        return {**out, **self.extra_metrics}


@dataclass(frozen=True)
class Scored:
    """What a predictor made of one batch of input: the output rows and the errors.

    Attributes:
        rows: the output frame (the columns ``mfgtx score`` writes).
        errors: one errors-file row per bad lot, file or image (not scored).
        lots, windows: how many lots (or images) and windows were scored.
        warnings: errors-file rows about lots that were scored all the same (a sensor
            without a single reading in a lot, scored as missing); each also came as a
            :class:`~mfgtx.data.DataWarning`.
    """

    rows: pd.DataFrame
    errors: list[dict[str, object]]
    lots: int = 0
    windows: int = 0
    warnings: list[dict[str, object]] = field(default_factory=list)


@dataclass(frozen=True)
class Trained:
    """A model just trained, standing in for its bundle until the bundle is written (so
    that training judges the model through the same predictor that scoring uses)."""

    model: Any
    calibration: Any = None
    bundle_id: str = ""
    manifest: Any = None


class InputSpec(Protocol):
    """What every kind's input specification (its own frozen dataclass, saved in its
    bundles) tells the shared code: the model's task."""

    @property
    def task(self) -> str: ...


#: A kind's input specification.
SpecT = TypeVar("SpecT", bound=InputSpec)


# --------------------------------------------------------------------------- predictors


class Predictor(ABC, Generic[SpecT]):
    """A loaded bundle, ready to predict: the one inference path of mfgtx.

    Build it with :func:`mfgtx.load`. :meth:`predict` returns a DataFrame with exactly the
    columns and values ``mfgtx score`` writes for the same input; :meth:`score` returns
    those rows and the errors of bad lots instead of raising; :meth:`explain` gives the
    attention maps of :mod:`mfgtx.explain` (non-causal diagnostics) with their deletion
    test. ``SpecT`` is the kind's input specification.

    Attributes:
        kind: the :class:`Kind` that wrote the bundle.
        bundle: the verified, loaded :class:`~mfgtx.artifacts.Bundle` (while training
            judges a model, the :class:`Trained` model standing in for it).
        input_spec: what the model reads and how (the kind's frozen input specification).
    """

    #: the key columns of the output (rows are replaced by these when written again)
    keys: ClassVar[tuple[str, ...]] = ("lot", "window_end")

    def __init__(self, kind: Kind[Any, Any, Any], bundle: Bundle | Trained, spec: SpecT) -> None:
        self.kind, self.bundle, self.input_spec = kind, bundle, spec

    def __repr__(self) -> str:
        where = self.bundle.path if isinstance(self.bundle, Bundle) else "just trained"
        return f"{type(self).__name__}({where}, id {self.bundle_id[:12]})"

    @property
    def model(self) -> Any:
        return self.bundle.model

    @property
    def members(self) -> int:
        """How many models answer (an ensemble's members, else 1)."""
        return len(getattr(self.model, "members", ())) or 1

    @property
    def explained_model(self) -> Any:
        """The model whose attention maps :meth:`explain` draws: the model, or an ensemble's
        first member (the members' maps are not averaged)."""
        members = getattr(self.model, "members", None)
        return members[0] if members is not None else self.model

    @property
    def bundle_id(self) -> str:
        return self.bundle.bundle_id

    @property
    def path(self) -> Path:
        """The bundle's directory.

        Raises:
            BundleError: the model was just trained; its bundle is not written yet.
        """
        if not isinstance(self.bundle, Bundle):
            raise BundleError("the model was just trained: its bundle is not written yet")
        return self.bundle.path

    @property
    def calibration(self) -> Any:
        return self.bundle.calibration

    @property
    def report(self) -> EvaluationReport | None:
        """The comparison with the baselines made when the bundle was trained."""
        metrics = self.bundle.manifest.get("metrics") or {}
        return EvaluationReport.from_dict(metrics) if metrics.get("rows") else None

    @property
    def audit(self) -> AuditReport | None:
        """The split audit saved with the bundle."""
        state = self.bundle.manifest.get("audit")
        return AuditReport.from_dict(state) if state else None

    @property
    def task(self) -> str:
        return str(self.input_spec.task)

    @abstractmethod
    def score(self, data: Any, *, batch_size: int = 256) -> Scored:
        """The output rows for ``data`` and one errors-file row per bad lot or image.

        Every kind takes ``batch_size`` (inputs per forward pass); a kind adds its own
        options, keyword-only and each with a default (a window predictor's ``stride``,
        ``last_per_lot`` ...; the ViT's ``per_tile``)."""

    def predict(self, data: Any, **options: Any) -> pd.DataFrame:
        """The output rows for ``data`` (see :meth:`score`; ``options`` are its options).

        Raises:
            DataError: the input cannot be read as a whole (no rows, a column name given
                twice), or a lot or image could not be scored (the first reason, with its
                lot, column, file and line).
        """
        scored = self.score(data, **options)
        if scored.errors:
            first = scored.errors[0]
            more = f" (and {len(scored.errors) - 1} more)" if len(scored.errors) > 1 else ""
            text = {k: _text(first.get(k)) for k in ("lot", "column", "file", "line")}
            raise DataError(
                f"{first['reason']}{more}",
                lot=text["lot"],
                column=text["column"],
                file=text["file"],
                line=None if text["line"] is None else int(float(text["line"])),
            )
        return scored.rows

    @abstractmethod
    def explain(self, data: Any, *, deletion: bool = True) -> Any:
        """Attention maps of one input and their deletion test (:mod:`mfgtx.explain`;
        ``deletion``: run the test). A kind adds its own options, keyword-only and each with
        a default (which window, which map)."""


# --------------------------------------------------------------------------- kinds


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


SectionT = TypeVar("SectionT")
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
    """The bundle's ``extra`` section: the job file (for the record) and the best baseline."""
    extra: dict[str, Any] = {}
    if job is not None:
        extra["job_file"] = dict(job)
    if fitted.best_baseline is not None:
        extra["best_baseline"] = fitted.best_baseline
    return extra or None


# --------------------------------------------------------------------------- ensembles


@dataclass(frozen=True)
class CrossFit:
    """The members' splits of an ensemble cross-fitted by lot.

    Attributes:
        windows: every window.
        train: the windows of every lot that is not a test lot (what the ensemble learns
            from; purged near the test lots as a single model's split would be).
        test: the test windows the ensemble is judged on.
        members: ``(train, val)`` of each member: its validation lots are one block of the
            non-test lots (blocks of consecutive lots in time), its training lots the rest.
        scaler: fitted on ``train`` (every member reads inputs scaled the same way).
        report: the audit of ``train`` against the test lots, with each member's lots
            checked apart too.
    """

    windows: Windows
    train: np.ndarray
    test: np.ndarray
    members: tuple[tuple[np.ndarray, np.ndarray], ...]
    scaler: SensorScaler
    report: AuditReport
    regimes: Regimes | None = None

    @property
    def counts(self) -> dict[str, int]:
        return {
            "train": len(self.train),
            "val": len(self.train),  # every training window validates one member
            "test": len(self.test),
            "members": len(self.members),
        }


def cross_fit(
    windows: Windows,
    plan: SplitPlan,
    members: int,
    *,
    strict: bool = True,
    regimes: RegimePlan | None = None,
) -> CrossFit:
    """Test lots as ``plan`` says; the other lots cut into ``members`` blocks in time order,
    member ``k`` validating (early stopping, calibration) on block ``k`` and training on the
    others. The lots are taken as exchangeable (machines of a fleet, engines of a test cell):
    a member's validation lots may run before some of its training lots; the test lots come
    after every member's lots, and the audit proves it.

    Raises:
        LeakageError: the audit fails (``strict``).
        ValueError: fewer non-test lots than members.
    """
    from mfgtx.split import Check

    (sets,) = plan.splitter(validation=False).split_sets(windows)
    train = np.asarray(sets.train)
    lots = pd.unique(windows.lot[train])  # in time order: windows come lot by lot, in order
    first = {lot: windows.start[train][windows.lot[train] == lot].min() for lot in lots}
    lots = sorted(lots, key=lambda lot: (first[lot], lot))
    if len(lots) < members:
        raise ValueError(
            f"train.ensemble.members: {members} members need at least {members} lots outside "
            f"the test lots, found {len(lots)}"
        )
    fitted, model_windows = _regimes(windows, train, regimes)
    scaler = SensorScaler.fit(model_windows, train)
    report = audit(
        windows,
        {"train": train, "test": sets.test},
        gap=plan.gap,
        scaler=scaler,
        regimes=fitted,
    )
    splits, checks = [], []
    for k, block in enumerate(np.array_split(np.asarray(lots, dtype=object), members)):
        in_block = np.isin(windows.lot[train], block.astype(str))
        val, fit_on = train[in_block], train[~in_block]
        both = set(windows.lot[val]) & set(windows.lot[fit_on])
        checks.append(
            Check(
                f"member_{k}_lots_apart",
                not both and len(val) > 0 and len(fit_on) > 0,
                f"member {k} trains on {len(set(windows.lot[fit_on]))} lots and validates on "
                f"{len(set(windows.lot[val]))} others ({', '.join(block[:3].astype(str))}...)"
                if not both
                else f"member {k}'s training and validation share lots {sorted(both)[:5]}",
            )
        )
        splits.append((fit_on, val))
    report = AuditReport(
        (*report.checks, *checks),
        {**report.summary, "ensemble_members": members, "folds": "cross-fitted by lot"},
        not_checked=report.not_checked,
    )
    if strict and not report.passed:
        from mfgtx.split import LeakageError

        raise LeakageError(report)
    test = windows.last_per_lot(sets.test) if plan.evaluate_on == "last_per_lot" else sets.test
    return CrossFit(model_windows, train, np.asarray(test), tuple(splits), scaler, report, fitted)


@dataclass(frozen=True)
class Learning:
    """What a kind trains on, one model or an ensemble alike.

    Attributes:
        windows: the windows as the model reads them (per-regime normalised with regimes).
        splits: ``(fit_on, val)`` windows per member (one pair for a single model).
        learn: every training window (what the baselines are fitted on).
        test: the windows the model is judged on.
        scaler, report, counts, regimes: as :class:`SplitWindows` / :class:`CrossFit`.
    """

    windows: Windows
    splits: tuple[tuple[np.ndarray, np.ndarray], ...]
    learn: np.ndarray
    test: np.ndarray
    scaler: SensorScaler
    report: AuditReport
    counts: dict[str, int]
    regimes: Regimes | None = None


def learning_split(
    windows: Windows,
    plan: SplitPlan,
    members: int | None = None,
    *,
    regimes: RegimePlan | None = None,
) -> Learning:
    """:func:`cross_fit` for ``members`` models, else :func:`split_windows`, as one record."""
    if members:
        cf = cross_fit(windows, plan, members, regimes=regimes)
        return Learning(
            cf.windows, cf.members, cf.train, cf.test, cf.scaler, cf.report, cf.counts,
            cf.regimes,
        )  # fmt: skip
    prep = split_windows(windows, plan, regimes=regimes)
    train = np.asarray(prep.sets.train)
    return Learning(
        prep.windows, ((train, np.asarray(prep.sets.val)),), train, prep.test, prep.scaler,
        prep.report, prep.counts, prep.regimes,
    )  # fmt: skip


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
