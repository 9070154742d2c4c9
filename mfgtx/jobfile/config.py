"""Job configuration: frozen dataclasses read from one YAML file (plus ``--set`` overrides).

One file describes a job end to end, so ``train``, ``evaluate``, ``score`` and ``audit`` can
share it::

    data:                      # where the sensor rows come from and what the columns mean
      source: {path: sample_data/sensors.csv}       # or {url: "sqlite:///plant.db", table: sensors}
      labels: {source: {path: sample_data/quality.csv}, on: lot, columns: [passed, inspected_at]}
      columns: {lot: lot, time: timestamp, sensors: [...], targets: [defect],
                label_time: inspected_at}
      pass_column: passed      # classification: defect = 1 where this pass/fail column is false
    windows: {window: 120, stride: 30}
    split: {test_size: 0.25, val_size: 0.2, gap: 30min, evaluate_on: last_per_lot}
    model: {task: classification, d_model: 32, n_heads: 4, n_layers: 2, d_ff: 64, patch_len: 10}
    train: {epochs: 30, batch_size: 32, lr: 0.001, patience: 6}
    calibration: {cost_ratio: 5}
    bundle: models/sample_quality
    score:
      output: {path: results/sample_quality.parquet}

Every key is checked; see :func:`load_config`.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mfgtx._config import default_of
from mfgtx._files import expand_path
from mfgtx.data import ColumnMap, RegimePlan, Windowing
from mfgtx.data.io import CsvFormat
from mfgtx.data.read_options import LabelWords, ReadOptions
from mfgtx.engine import EngineSpec
from mfgtx.jobfile._schema import (
    MAX_YAML_CHARS,
    ConfigError,
    build,
    load_yaml,
    parse_override,
    set_key,
)
from mfgtx.jobfile._sql import check_query, check_table_name, check_url, safe_slug
from mfgtx.jobfile.alerts import AlertsSection
from mfgtx.jobfile.limits import Limit
from mfgtx.jobfile.watch import WatchSettings
from mfgtx.kinds import ForecastSection, ImagesSection, SensorSection, VitSection
from mfgtx.split import SplitPlan
from mfgtx.train import TrainConfig

__all__ = [
    "CalibrationSection",
    "ColumnsSection",
    "ConfigError",
    "DataSection",
    "EngineSection",
    "EnsembleSection",
    "EvaluateSection",
    "JobConfig",
    "LabelsSection",
    "ScoreSection",
    "SinkSection",
    "SourceSection",
    "TrainSection",
    "TruthSection",
    "engine_spec",
    "load_config",
    "recorded_job",
    "train_config",
    "with_absolute_paths",
]


@dataclass(frozen=True)
class SourceSection:
    """Where rows come from: a file or folder (``path``) or a SQL database (``url``).

    Args:
        path: a CSV or Parquet file, or a folder of them (read in name order).
        url: a SQLAlchemy URL (``sqlite:///plant.db``, ``postgresql+psycopg://user@host/db``).
        table: the SQL table to read (with ``url``).
        query: a SQL query instead of ``table`` (its rows should come grouped by lot).
        format: ``auto`` (from the file suffix), ``csv``, ``parquet``, or ``cmapss`` (NASA
            C-MAPSS text files, placed on one clock with ``rul``/``failed_at`` added).
        chunk_rows: rows read at a time when scoring (inputs larger than memory).
        chunk_mb: CSV files: text read at a time (MB), whatever the rows hold; a chunk is
            at most ``chunk_rows`` rows and about this much text.
        max_inflated_mb: compressed CSV files (gzip, bz2, xz, zip; found by their first
            bytes): reading stops with an error past this many MB of decompressed data.
        max_lot_rows: the most rows one lot may have (a lot is held whole in memory): a
            larger lot is refused by name; ``score`` and ``evaluate`` list it in the errors
            file and go on with the other lots.
        rul_cap: ``cmapss`` only: cap the remaining-useful-life target at this many cycles.
        delimiter: CSV files: the character between values, ``auto`` (the one of ``,``
            ``;`` tab ``|`` that the header line holds most often, ``,`` when it holds
            none) or ``tab``. Left out: ``auto`` (``score.source``, ``evaluate.source``:
            inherited, as below).
        decimal: CSV files: ``,`` reads ``1,25`` as 1.25 (European exports; the delimiter
            is then not ``,``). Only values that are numbers with one decimal comma change.
            Left out: ``.`` (``score.source``, ``evaluate.source``: inherited).
        encoding: CSV files: the text encoding (``utf-8``, a byte-order mark is skipped;
            Windows exports are often ``cp1252``). Left out: ``utf-8`` (``score.source``,
            ``evaluate.source``: inherited).

    ``delimiter``, ``decimal`` and ``encoding`` left out of ``score.source`` are what
    ``data.source`` gives, else what the bundle was trained with (its read options,
    :class:`~mfgtx.data.read_options.ReadOptions`); each one a source gives wins.
    ``evaluate.source`` takes them from ``data.source`` the same way.
    """

    path: str | None = None
    url: str | None = None
    table: str | None = None
    query: str | None = None
    format: Literal["auto", "csv", "parquet", "cmapss"] = "auto"
    chunk_rows: int = 200_000
    chunk_mb: int = 32
    max_inflated_mb: int = 2048
    max_lot_rows: int = 2_000_000
    rul_cap: float | None = None
    delimiter: str | None = None
    decimal: Literal[".", ","] | None = None
    encoding: str | None = None

    def __post_init__(self) -> None:
        self.csv_format()  # the reader's own checks
        given = (self.delimiter, self.decimal, self.encoding)
        csv_options = any(v not in (None, d) for v, d in zip(given, _PLAIN_CSV, strict=True))
        if csv_options and (self.url is not None or self.format in ("parquet", "cmapss")):
            raise ValueError("delimiter, decimal and encoding are for CSV files")
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of path (file or folder) and url (SQL database)")
        if self.url is not None and (self.table is None) == (self.query is None):
            raise ValueError("a SQL source needs exactly one of table and query")
        if self.url is not None:
            check_url(self.url)
        if self.table is not None:
            check_table_name(self.table, "table")
        if self.query is not None:
            check_query(self.query)
        if self.path is not None and (self.table or self.query):
            raise ValueError("table and query belong to a SQL source (url), not to a path")
        for key in ("chunk_rows", "chunk_mb", "max_inflated_mb", "max_lot_rows"):
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{key}: a whole number >= 1, found {value!r}")
        if self.rul_cap is not None and (self.format != "cmapss" or not self.rul_cap > 0):
            raise ValueError("rul_cap is a positive number of cycles for format: cmapss only")

    def csv_format(self, inherit: CsvFormat | None = None) -> CsvFormat:
        """How the source's CSV files are written: its own ``delimiter``, ``decimal`` and
        ``encoding``, each one it leaves out as ``inherit`` has it (default: a plain CSV
        file's ``auto``, ``.``, ``utf-8``)."""
        inherit = inherit or CsvFormat()
        return CsvFormat(
            delimiter=inherit.delimiter if self.delimiter is None else self.delimiter,
            decimal=inherit.decimal if self.decimal is None else self.decimal,
            encoding=inherit.encoding if self.encoding is None else self.encoding,
        )

    def inheriting(self, inherit: CsvFormat) -> SourceSection:
        """This source with each CSV option it leaves out taken from ``inherit`` (a SQL
        source has none: itself)."""
        if self.url is not None or self.format in ("parquet", "cmapss"):
            return self
        fmt = self.csv_format(inherit)
        decimal: Literal[".", ","] = "," if fmt.decimal == "," else "."
        return dataclasses.replace(
            self, delimiter=fmt.delimiter, decimal=decimal, encoding=fmt.encoding
        )


#: ``delimiter``, ``decimal`` and ``encoding`` of a plain CSV file.
_PLAIN_CSV = ("auto", ".", "utf-8")


@dataclass(frozen=True)
class LabelsSection:
    """A second table joined to the sensor rows (e.g. lab results per lot).

    Args:
        source: where the labels come from.
        on: the column both tables share (the lot id).
        columns: label columns to take (empty: all).
    """

    source: SourceSection
    on: str = "lot"
    columns: tuple[str, ...] = ()


@dataclass(frozen=True)
class ColumnsSection:
    """The :class:`~mfgtx.data.ColumnMap` of the input; see its documentation.

    ``units`` (optional): the unit of each column for people, ``{temperature_c: °C}``;
    the dashboard labels its charts with it, nothing is converted. ``time_zone``
    (optional): the IANA zone (``Europe/Berlin``) of times written without an offset; they
    are read as that clock's times and kept in UTC.
    """

    lot: str
    time: str
    sensors: tuple[str, ...] | None = None
    targets: tuple[str, ...] = ()
    label_time: str | None = None
    keys: tuple[str, ...] = ()
    layout: Literal["wide", "long"] = "wide"
    sensor_name: str = "sensor"
    value: str = "value"
    time_format: str | None = None
    units: dict[str, str] = field(default_factory=dict)
    time_zone: str | None = None

    def __post_init__(self) -> None:
        self.column_map()  # ColumnMap's own checks, with its messages

    def column_map(self, *, targets: bool = True) -> ColumnMap:
        """The ColumnMap (``targets=False``: for scoring, without targets and label time)."""
        fields = dataclasses.asdict(self)
        if not targets:
            fields.update(targets=(), label_time=None)
        return ColumnMap(**fields)


@dataclass(frozen=True)
class DataSection:
    """The input table.

    Args:
        source: the sensor rows.
        columns: what the columns mean (a new plant's export needs only this changed).
        labels: an optional label table joined on the lot.
        pass_column: classification: a pass/fail column (true/false, pass/fail, 1/0); the
            target ``defect`` is 1 where it is false. List ``defect`` in ``columns.targets``.
        label_known: ``row``: a label is known at its row's time (or ``columns.label_time``);
            ``lot_end``: at the lot's last time (run-to-failure RUL is known at the failure).
        segment: for one continuous series without lots (a line's historian export): cut it
            into blocks of this fixed length (``30D``, ``12h``) that become the lots named by
            ``columns.lot``. Windows stay inside a block and the split keeps whole blocks
            apart in time; a block shorter than a window gives none. ``score`` reads the
            series whole (one lot named ``whole``), so the latest window is always scored.
        regimes: operating regimes (sensor jobs, :class:`~mfgtx.data.RegimePlan`): a regime
            column (``{column: grade}``, names or numbers) or setting columns clustered by k-means
            (``{columns: [setting_1, setting_2], clusters: 6}``). Fitted on the training
            rows only and saved in the bundle; the model and the baselines read each sensor
            normalised within its row's regime plus one channel per regime. The regime
            columns are read even when ``columns.sensors`` does not list them.
    """

    source: SourceSection
    columns: ColumnsSection
    labels: LabelsSection | None = None
    pass_column: str | None = None
    label_known: Literal["row", "lot_end"] = "row"
    segment: str | None = None
    regimes: RegimePlan | None = None

    def __post_init__(self) -> None:
        if self.regimes is not None:
            c = self.columns
            taken = {c.lot: "columns.lot", c.time: "columns.time"}
            taken.update({t: "columns.targets" for t in c.targets})
            for name in self.regimes.settings:
                if name in taken:
                    raise ValueError(
                        f"regimes: {name!r} is {taken[name]}; a regime column is a setting "
                        "or grade column of the rows"
                    )

        if self.segment is not None:
            import pandas as pd

            try:
                length = pd.Timedelta(self.segment)
            except ValueError:
                length = pd.Timedelta(0)
            if length <= pd.Timedelta(0):
                raise ValueError(
                    f"segment must be a fixed length such as 30D or 12h, found {self.segment!r}"
                )
        if self.pass_column is not None and "defect" not in self.columns.targets:
            raise ValueError("pass_column makes a 'defect' target: list defect in columns.targets")
        if self.label_known == "lot_end" and self.columns.label_time is None:
            raise ValueError("label_known: lot_end needs columns.label_time (a name to create)")

    def column_map(self, *, targets: bool = True) -> ColumnMap:
        """The :class:`~mfgtx.data.ColumnMap` of the rows, with the regime columns read
        beside the listed sensors (``targets=False``: for scoring)."""
        cols = self.columns.column_map(targets=targets)
        if self.regimes is None:
            return cols
        if cols.sensors is not None:
            extra = tuple(c for c in self.regimes.settings if c not in cols.sensors)
            cols = dataclasses.replace(cols, sensors=(*cols.sensors, *extra))
        if self.regimes.column is not None:  # names (or numbers) of a grade: as categories
            cols = dataclasses.replace(cols, categories=(self.regimes.column,))
        return cols


@dataclass(frozen=True)
class EnsembleSection:
    """``train.ensemble``: ``members`` models cross-fitted by lot, saved in one bundle and
    averaged when scoring (sensor and forecast jobs).

    The lots that are not test lots are cut into ``members`` blocks in time order; member
    ``k`` stops early (and a classifier calibrates) on block ``k`` and trains on the others,
    each from its own seed (``train.seed + k``). The lots are taken as exchangeable (the
    machines of a fleet, the engines of a test cell): a member's validation lots may run
    before some of its training lots, while the test lots come after every member's lots (the
    audit checks it). The report judges the average on the test lots.
    """

    members: int = 5

    def __post_init__(self) -> None:
        if self.members < 2:
            raise ValueError(
                f"members must be >= 2 (one model needs no ensemble), found {self.members}"
            )


@dataclass(frozen=True)
class EngineSection:
    """``engine``: where the job's independent tasks run (an ensemble's members); the command
    line's ``--engine``, ``--address`` and ``--workers`` win over it (:func:`engine_spec`).

    Attributes:
        name: ``local`` (in the job's process, one after another) or ``ray`` (as Ray tasks;
            the ``mfgtx[ray]`` extra).
        address: the Ray cluster to join (``auto``, ``head:6379``, ``ray://head:10001``);
            default: start Ray on this machine. Every node must read the job's data paths
            and run the same mfgtx.
        workers: tasks at once; default: as many as the Ray cluster fits.
        ddp: train the one model (no ``train.ensemble``, no ``train.sweep``) data-parallel
            over this many Ray Train workers, each with ``train.threads`` threads (``ray``
            only; ``--ddp`` wins); default: in one process.
        turn_seconds: on Ray, an ensemble member trains in turns of about this many seconds
            (whole epochs), resuming from its checkpoint, so that the members share the
            workers to the end (:class:`~mfgtx.engine.EngineSpec`); ``null``: each member in
            one task. The weights are the same either way.
    """

    name: Literal["local", "ray"] = default_of(EngineSpec, "name")
    address: str | None = default_of(EngineSpec, "address")
    workers: int | None = default_of(EngineSpec, "workers")
    ddp: int | None = default_of(EngineSpec, "ddp")
    turn_seconds: float | None = default_of(EngineSpec, "turn_seconds")

    def __post_init__(self) -> None:
        EngineSpec(  # the engine's checks
            self.name, self.address, self.workers, ddp=self.ddp, turn_seconds=self.turn_seconds
        )


@dataclass(frozen=True)
class TrainSection:
    """The ``train`` section: the settings of :class:`~mfgtx.train.TrainConfig` (same names,
    same meaning) but ``resume`` (the ``--resume`` flag), ``ensemble``
    (:class:`EnsembleSection`), ``threads`` (per model, set by the engine that trains it,
    :mod:`mfgtx.engine`) and ``sweep``: a grid of values to try, by key of this section or
    of the model's section (``{lr: [0.001, 0.003], d_model: [32, 64]}``), each trial judged
    on the validation lots only (:mod:`mfgtx.jobs.sweep`, which checks the keys and values
    against the job's model). ``checkpoint_dir`` defaults to ``<bundle>.ckpt`` next to the
    bundle; ``batch_size`` to 32 (plant data sets are small: the one key whose job default is
    not the library's); every other default is read from ``TrainConfig``.

    Every value is known when the job file is read, so the section builds its
    :class:`~mfgtx.train.TrainConfig` then (validating it, once; :attr:`config`) and
    :func:`train_config` gives it with the checkpoint folder and ``--resume`` flag of a run.
    """

    epochs: int = default_of(TrainConfig, "epochs")
    batch_size: int = 32
    lr: float = default_of(TrainConfig, "lr")
    weight_decay: float = default_of(TrainConfig, "weight_decay")
    betas: tuple[float, float] = default_of(TrainConfig, "betas")
    warmup_fraction: float = default_of(TrainConfig, "warmup_fraction")
    min_lr_ratio: float = default_of(TrainConfig, "min_lr_ratio")
    grad_clip: float | None = default_of(TrainConfig, "grad_clip")
    ema_decay: float | None = default_of(TrainConfig, "ema_decay")
    patience: int | None = default_of(TrainConfig, "patience")
    max_minutes: float | None = default_of(TrainConfig, "max_minutes")
    min_delta: float = default_of(TrainConfig, "min_delta")
    seed: int = default_of(TrainConfig, "seed")
    deterministic: bool = default_of(TrainConfig, "deterministic")
    precision: Literal["auto", "fp32", "bf16"] = default_of(TrainConfig, "precision")
    compile: Literal["off", "auto", "on"] = default_of(TrainConfig, "compile")
    device: Literal["auto", "cpu", "cuda"] = default_of(TrainConfig, "device")
    checkpoint_dir: str | None = default_of(TrainConfig, "checkpoint_dir")
    num_workers: int = default_of(TrainConfig, "num_workers")
    progress: Literal["auto", "bar", "log", "off"] = default_of(TrainConfig, "progress")
    log_every: int = default_of(TrainConfig, "log_every")
    ensemble: EnsembleSection | None = None
    threads: int | None = field(
        default=None,
        metadata={
            "doc": "torch threads each model (each ensemble member) trains with, set while "
            "it trains and restored afterwards; default: torch's own in this process, 1 on "
            "Ray (`--engine ray`), where two members then train at once on two cores. Not "
            "part of what a `--resume` checks."
        },
    )
    sweep: dict[str, tuple[Any, ...]] | None = field(
        default=None,
        metadata={
            "doc": "values to try, by key of this section or of the model's "
            "(`{lr: [0.001, 0.003], d_model: [32, 64]}`): every combination is one trial, "
            "trained on the job's split and judged by its validation loss on the validation "
            "lots alone; the lowest is the bundle's model, judged once on the test lots, and "
            "every trial is in the report's Sweep table. Trials run on the job's engine."
        },
    )

    def __post_init__(self) -> None:
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, found {self.threads}")
        if self.sweep is not None:
            if not self.sweep:
                raise ValueError("sweep: name at least one key and its values, or leave it out")
            empty = [k for k, v in self.sweep.items() if not v]
            if empty:
                raise ValueError(f"sweep.{empty[0]}: give at least one value to try")
        config = TrainConfig(
            epochs=self.epochs,
            batch_size=self.batch_size,
            lr=self.lr,
            weight_decay=self.weight_decay,
            betas=self.betas,
            warmup_fraction=self.warmup_fraction,
            min_lr_ratio=self.min_lr_ratio,
            grad_clip=self.grad_clip,
            ema_decay=self.ema_decay,
            patience=self.patience,
            max_minutes=self.max_minutes,
            min_delta=self.min_delta,
            seed=self.seed,
            deterministic=self.deterministic,
            precision=self.precision,
            compile=self.compile,
            device=self.device,
            checkpoint_dir=self.checkpoint_dir,
            num_workers=self.num_workers,
            progress=self.progress,
            log_every=self.log_every,
        )
        object.__setattr__(self, "_config", config)  # not a field: the job file has no such key

    @property
    def config(self) -> TrainConfig:
        """The :class:`~mfgtx.train.TrainConfig` of this section (no ``--resume``)."""
        config: TrainConfig = self.__dict__["_config"]
        return config


def engine_spec(
    config: JobConfig,
    *,
    name: str | None = None,
    address: str | None = None,
    workers: int | None = None,
    ddp: int | None = None,
) -> EngineSpec:
    """The engine a run of ``config`` uses: the job's ``engine`` section with the command
    line's ``--engine``, ``--address``, ``--workers`` and ``--ddp`` (``None``: not given) over
    it, and ``train.threads``. An ``--engine`` other than the section's drops the section's
    address, workers and ddp (they belong to its engine).

    Raises:
        ConfigError: a combination that cannot be used, in words (e.g. an address with the
            local engine).

    Example:
        >>> job = load_config(None, ["engine.name=ray", "engine.workers=4"])
        >>> engine_spec(job, workers=2)
        EngineSpec(name='ray', address=None, workers=2, threads=None, ddp=None, turn_seconds=60.0)
        >>> engine_spec(job, name="local").name
        'local'
    """
    section = config.engine or EngineSection()
    chosen = name or section.name
    same = chosen == section.name
    try:
        return EngineSpec(
            chosen,  # type: ignore[arg-type]  # EngineSpec checks the name
            address if address is not None else section.address if same else None,
            workers if workers is not None else section.workers if same else None,
            config.train.threads,
            ddp if ddp is not None else section.ddp if same else None,
            section.turn_seconds,
        )
    except ValueError as e:
        raise ConfigError(f"{config.source_file}: engine: {e}") from e


def train_config(
    section: TrainSection, checkpoint_dir: str | None, *, resume: bool = False
) -> TrainConfig:
    """The :class:`~mfgtx.train.TrainConfig` of a ``train`` section for a run that keeps its
    checkpoints in ``checkpoint_dir`` (``resume``: the ``--resume`` flag)."""
    return dataclasses.replace(section.config, checkpoint_dir=checkpoint_dir, resume=resume)


@dataclass(frozen=True)
class CalibrationSection:
    """Calibration on the validation lots (never the test lots), saved in the bundle.

    Args:
        cost_ratio: classifiers: temperature scaling and a threshold where a missed defect
            costs ``cost_ratio`` false alarms.
        intervals: interval models (remaining life, forecasts): ``cqr`` widens (or narrows)
            the model's own quantile band, ``conformal`` puts a band around the point
            prediction (split conformal; gives a point-only regressor a band), ``off`` keeps
            the band as trained. Default: ``cqr`` for a model with quantile heads, nothing for
            a point-only model. Lots, not windows, are the exchangeable units
            (:mod:`mfgtx.calibration.conformal`): the band holds ``coverage`` of a new
            exchangeable lot's windows on average; drift and lots unlike the validation lots
            break it.
        coverage: the band's nominal coverage (0.8: the ``q10``/``q90`` columns); default:
            what the model's outermost quantiles span (0.8 for ``[0.1, 0.9]``), 0.8 for a
            point-only model. A forecaster's must equal that span (its columns are named by
            the quantiles).
        bounds: the physical range of a target, ``{rul_cycles: [0, null]}`` (``null``:
            unbounded); the calibrated band and the prediction are clipped to it, and
            training refuses targets whose values lie outside it.
        horizon_block: forecasters: pool this many consecutive horizon steps per margin
            (a steadier margin where validation lots are few); 1: one margin per step and
            channel; default: the horizon cut into as many blocks as there are validation
            lots (``ceil(horizon / lots)`` steps each; one margin per step once there are as
            many lots as steps).
        bins: regressors (remaining life): one margin per range of the prediction (Mondrian
            calibration; the validation predictions cut into this many equal shares), so the
            band holds within each range instead of on average over them (a machine predicted
            at 20 cycles is judged among machines predicted near 20, not mostly among young
            machines whose remaining life is easy); 1: one margin; default: the most bins,
            up to 4, in which every bin still holds the lots a guarantee needs (4 at 80 %).
    """

    cost_ratio: float = 5.0
    intervals: Literal["conformal", "cqr", "off"] | None = None
    coverage: float | None = None
    bounds: dict[str, tuple[float | None, ...]] = field(default_factory=dict)
    horizon_block: int | None = None
    bins: int | None = None

    def __post_init__(self) -> None:
        if not self.cost_ratio > 0:
            raise ValueError(f"cost_ratio must be positive, found {self.cost_ratio}")
        if self.coverage is not None and not 0.0 < self.coverage < 1.0:
            raise ValueError(f"coverage must lie between 0 and 1 (e.g. 0.8), found {self.coverage}")
        if self.horizon_block is not None and self.horizon_block < 1:
            raise ValueError(f"horizon_block must be at least 1, found {self.horizon_block}")
        if self.bins is not None and self.bins < 1:
            raise ValueError(f"bins must be at least 1, found {self.bins}")
        for name, pair in self.bounds.items():
            if len(pair) != 2:
                raise ValueError(
                    f"bounds.{name}: give [low, high] (null for unbounded), found {list(pair)}"
                )
            low, high = pair
            if low is not None and high is not None and low > high:
                raise ValueError(f"bounds.{name}: low {low} is above high {high}")


@dataclass(frozen=True)
class SinkSection:
    """Where scores go: a ``.parquet``/``.csv`` file (``path``) or a SQL ``table`` (``url``)."""

    path: str | None = None
    url: str | None = None
    table: str | None = None

    def __post_init__(self) -> None:
        if (self.path is None) == (self.url is None):
            raise ValueError("give exactly one of path (a .parquet or .csv file) and url (SQL)")
        if self.url is not None and not self.table:
            raise ValueError("a SQL output needs a table")
        if self.url is not None:
            check_url(self.url)
        if self.table is not None:
            check_table_name(self.table, "table")
        if self.path is not None and not self.path.lower().endswith((".parquet", ".csv")):
            raise ValueError(f"path must end in .parquet or .csv, found {self.path!r}")


@dataclass(frozen=True)
class ScoreSection:
    """Batch scoring.

    Args:
        output: where the predictions go (replaced by key: lot and window end; for a forecaster
            also sensor and step; for a ViT the image path).
        source: the rows to score (default: ``data.source``, without labels). The CSV
            options it leaves out (``delimiter``, ``decimal``, ``encoding``) are
            ``data.source``'s, else the bundle's; its times are read with the bundle's time
            format and zone unless ``data.columns`` gives them.
        images: ViT bundles: the images to score, a folder (searched recursively), a ``.zip``
            or a CSV manifest with a ``path`` column (default: ``images.path``). A file that
            is not a usable image goes to the errors file; the others are scored.
        errors: CSV file listing bad rows, lots and the reason (default: next to the output,
            or next to the SQLite file).
        stride: rows between scored windows (default: the training stride).
        last_per_lot: score only each lot's last window.
        batch_size: windows (or images, or tiles) per forward pass.
        per_tile: tiled ViT bundles: one row per tile (keys image, top, left) instead of
            one per photo (its worst tile).
    """

    output: SinkSection
    source: SourceSection | None = None
    images: str | None = None
    errors: str | None = None
    stride: int | None = None
    last_per_lot: bool = False
    batch_size: int = 256
    per_tile: bool = False

    def __post_init__(self) -> None:
        if self.stride is not None and self.stride < 1:
            raise ValueError(f"stride must be >= 1, found {self.stride}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, found {self.batch_size}")
        if self.errors is None and self.output.path is None and not _sqlite_file(self.output.url):
            raise ValueError("errors: name a CSV file for the error list of a SQL output")
        if self.errors is not None and not self.errors.lower().endswith(".csv"):
            raise ValueError(f"errors: the error list is a .csv file, found {self.errors!r}")

    def errors_path(self) -> Path:
        if self.errors is not None:
            return Path(self.errors)
        if self.output.path is not None:
            out = Path(self.output.path)
            return out.with_name(out.stem + ".errors.csv")
        db = Path(_sqlite_file(self.output.url) or "")
        return db.with_name(f"{db.stem}.{safe_slug(str(self.output.table))}.errors.csv")


@dataclass(frozen=True)
class TruthSection:
    """``evaluate.truth``: the known outcome of each lot of an external test set.

    Args:
        path: a CSV or Parquet table with one row per lot, or (``format: cmapss_rul``) a NASA
            ``RUL_FD00x.txt`` file: one number per line, line ``i`` the ``i``-th lot in lot
            order.
        format: ``auto`` (from the suffix), ``csv``, ``parquet`` or ``cmapss_rul``.
        on: the table's lot column (default: ``data.columns.lot``).
        columns: the table's columns holding the targets, in the order of the bundle's
            targets (default: the targets' own names).
        rul_cap: cap the truth at this many cycles (as the training target was capped).
    """

    path: str
    format: Literal["auto", "csv", "parquet", "cmapss_rul"] = "auto"
    on: str | None = None
    columns: tuple[str, ...] = ()
    rul_cap: float | None = None

    def __post_init__(self) -> None:
        if self.rul_cap is not None and not self.rul_cap > 0:
            raise ValueError(f"rul_cap must be a positive number of cycles, found {self.rul_cap}")
        if self.format == "cmapss_rul" and (self.on is not None or self.columns):
            raise ValueError("a cmapss_rul file has no columns: leave out on and columns")


@dataclass(frozen=True)
class EvaluateSection:
    """``evaluate``: judge the bundle on an external test set instead of the test lots split
    from ``data.source`` (a later production period, another line, NASA's test engines).

    The model is scored on the last window of every lot of ``source`` (the prediction as of
    the lot's latest row) and compared with ``truth`` joined on the lot; without ``truth``
    the source carries its own targets (``data.columns.targets``). The baselines are fitted
    on every labelled window of ``data.source`` (all of it is training data to this test
    set), and the report has the same rows, verdict and bootstrap interval as every report.

    Args:
        source: the test rows, read with ``data.columns``.
        truth: the outcome per lot (:class:`TruthSection`), or ``None``.
        last_per_lot: judge each lot's last window only (default); ``false`` judges every
            labelled window (a labelled source without ``truth``).
    """

    source: SourceSection
    truth: TruthSection | None = None
    last_per_lot: bool = True

    def __post_init__(self) -> None:
        if self.truth is not None and not self.last_per_lot:
            raise ValueError("a truth table gives one outcome per lot: keep last_per_lot: true")


def _sqlite_file(url: str | None) -> str | None:
    if url and url.startswith("sqlite:///") and len(url) > len("sqlite:///"):
        return url[len("sqlite:///") :]
    return None


_HISTORY_SUFFIXES = (".db", ".sqlite", ".sqlite3")


def check_history(value: str) -> str:
    """``value`` if it is a ``history`` setting: ``off``, a database URL, or a SQLite file
    (``.db``, ``.sqlite``, ``.sqlite3``); else a ``ValueError``."""
    if value == "off" or "://" in value:
        return value if value == "off" else check_url(value)
    if not value.lower().endswith(_HISTORY_SUFFIXES):
        raise ValueError(
            f"history: {value!r} is neither off, a database URL nor a SQLite file ending in "
            f"{', '.join(_HISTORY_SUFFIXES)}"
        )
    return value


@dataclass(frozen=True)
class JobConfig:
    """A whole job file; which sections a command needs is checked by the command.

    The model sections are the kinds' own (:mod:`mfgtx.kinds`): ``model`` (sensor),
    ``forecast``, and ``images`` with ``vit``; ``windows`` and ``split`` are the
    :class:`~mfgtx.data.Windowing` and :class:`~mfgtx.split.SplitPlan` the bundle records.

    ``source_file`` (the job file's name) and ``paths_as_written`` (``(expanded, as written)``
    of every path :func:`load_config` expanded) are for messages; they are not job keys.

    Args:
        data: the input table (:class:`DataSection`); ``train vit`` reads ``images`` instead.
        windows: how windows are cut from every lot.
        split: how lots are split into training, validation and test sets.
        model: the sensor encoder's settings (``train sensor``).
        forecast: the forecaster's settings (``train forecast``).
        images: the labelled images of a ViT job and how they are read (``train vit``).
        vit: the defect ViT's settings (``train vit``).
        train: how the model trains.
        calibration: classifiers: the cost of a missed defect in false alarms; interval
            models: conformal calibration of the band (:class:`CalibrationSection`).
        bundle: the bundle directory ``train`` writes and ``score``, ``evaluate`` and
            ``bench`` read.
        score: batch scoring (``score``).
        evaluate: an external test set (``evaluate``).
        name: a name for the job (free text, kept with the job in its bundle).
        labels: the plant's pass/fail words (:class:`~mfgtx.data.read_options.LabelWords`,
            ``{good: [i.O., OK, pass], bad: [n.i.O., NOK, fail]}``), read wherever a
            pass/fail value is (``data.pass_column``); compared trimmed and without regard
            to case; default: true/pass/yes and false/fail/no. Not ``data.labels``, which
            joins a label *table* on the lot.
        history: where ``score`` records its runs and rows (:mod:`mfgtx.history`): a
            SQLite file (``runs/history.db``), a database URL (``sqlite:///...`` or
            ``postgresql+psycopg://...``), or ``off``; default: ``history.db`` in the score
            output's folder (a SQLite output's folder; a PostgreSQL output's errors
            file's folder). A history is appended to, never replaced.
        limits: the plant's limits by column (:class:`~mfgtx.jobfile.limits.Limit`): a
            prediction or a sensor, ``{rul_cycles: {alarm_below: 30}, Massetemp_°C: {spec:
            [230, 240]}}``; drawn on the plant view's trends, alerted on when crossed.
        alerts: who hears of flagged lots, limits crossed, drift and models no longer valid
            (:class:`~mfgtx.jobfile.alerts.AlertsSection`, Apprise URLs); needs the history,
            which sends each alert once.
        watch: the thresholds of ``mfgtx watch`` (:class:`~mfgtx.jobfile.watch.WatchSettings`).
        engine: where an ensemble's members train (:class:`EngineSection`): in the job's
            process (default) or on Ray, where one model may also train data-parallel
            (``ddp``); ``--engine``, ``--address``, ``--workers``, ``--ddp`` win.
    """

    data: DataSection | None = None
    windows: Windowing = field(default_factory=Windowing)
    split: SplitPlan = field(default_factory=SplitPlan)
    model: SensorSection = field(default_factory=SensorSection)
    forecast: ForecastSection | None = None
    images: ImagesSection | None = None
    vit: VitSection = field(default_factory=VitSection)
    train: TrainSection = field(default_factory=TrainSection)
    calibration: CalibrationSection = field(default_factory=CalibrationSection)
    bundle: str | None = None
    score: ScoreSection | None = None
    evaluate: EvaluateSection | None = None
    name: str | None = None
    labels: LabelWords = field(default_factory=LabelWords)
    history: str | None = None
    limits: dict[str, Limit] = field(default_factory=dict)
    alerts: AlertsSection | None = None
    watch: WatchSettings = field(default_factory=WatchSettings)
    engine: EngineSection | None = None
    #: sections of kinds registered beyond mfgtx's own (``(key, section)``, read by key)
    kind_sections: tuple[tuple[str, Any], ...] = ()
    source_file: str = field(default="config", compare=False)
    paths_as_written: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.history is not None:
            check_history(self.history)
        if self.alerts is not None and self.history == "off":
            raise ValueError(
                "alerts: need the history (it sends each alert once and retries a failed "
                "one); remove history: off, or the alerts section"
            )

    def require(self, *keys: str) -> None:
        """Raise :class:`ConfigError` naming the first of ``keys`` that is not set."""
        for key in keys:
            if getattr(self, key) is None:
                raise ConfigError(f"{self.source_file}: {key}: required by this command")

    def read_options(self) -> ReadOptions:
        """How ``data.source`` is written (its CSV options, ``data.columns.time_format``
        and ``time_zone``) and the pass/fail words: what a bundle trained on it records."""
        if self.data is None:
            return ReadOptions(labels=self.labels)
        fmt, cols = self.data.source.csv_format(), self.data.columns
        return ReadOptions(
            delimiter=fmt.delimiter,
            decimal=fmt.decimal,
            encoding=fmt.encoding,
            time_format=cols.time_format,
            time_zone=cols.time_zone,
            labels=self.labels,
        )

    def section(self, key: str) -> Any:
        """The job's section ``key`` (a field, or a registered kind's own section), or
        ``None``."""
        if key in _FIELDS:
            return getattr(self, key)
        return dict(self.kind_sections).get(key)

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out.pop("source_file")
        out.pop("paths_as_written")
        out.pop("kind_sections")
        out.update({k: dataclasses.asdict(v) for k, v in self.kind_sections})
        return out


_FIELDS = frozenset(f.name for f in dataclasses.fields(JobConfig)) - {"kind_sections"}


def build_job(data: dict[str, Any], file: str) -> JobConfig:
    """:class:`JobConfig` of a job file's mapping; the section of a kind registered beyond
    mfgtx's own is built with that kind's ``Section``."""
    from mfgtx.kinds import KINDS

    data = dict(data)
    if "kind_sections" in data:
        raise ConfigError(f"{file}: kind_sections: unknown key")
    extra: list[tuple[str, Any]] = []
    for kind in KINDS.values():
        key = kind.section_key
        if key not in _FIELDS and key in data:
            extra.append((key, build(kind.Section, data.pop(key), file=file, prefix=key)))
    config = build(JobConfig, data, file=file)
    return dataclasses.replace(config, kind_sections=tuple(extra)) if extra else config


def _read_job_file(path: Path) -> str:
    """The text of a job file, refusing a file too large to be one before reading it."""
    try:
        size = path.stat().st_size
        if size > MAX_YAML_CHARS * 4:  # UTF-8 takes at most 4 bytes a character
            raise ConfigError(f"{path.name}: {size:,} bytes is far more than a job file holds")
        with path.open("r", encoding="utf-8") as f:
            return f.read(MAX_YAML_CHARS + 1)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path.name}: not UTF-8 text ({e.reason} at byte {e.start})") from e
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror or e}") from e


def load_config(
    path: str | Path | None,
    overrides: list[str] | tuple[str, ...] = (),
    *,
    base: dict[str, Any] | None = None,
) -> JobConfig:
    """Read a YAML job file, apply ``--set key=value`` overrides, validate every key.

    Relative paths in the file stay relative to the working directory (schedulers run jobs
    from the project root). Every path (and SQLite file) is expanded here, once: a leading
    ``~`` and ``$VAR`` or ``${VAR}`` (:func:`mfgtx._files.expand_path`); the job's checks,
    reads and writes all use the expanded path, and messages name it as written
    (``paths_as_written``).

    Raises:
        ConfigError: naming the file and the dotted key, e.g.
            ``job.yaml: data.colums: unknown key; did you mean 'columns'?``.
    """
    data: dict[str, Any] = dict(base or {})
    name = "config"
    if path is not None:
        name = Path(path).name
        loaded = load_yaml(_read_job_file(Path(path)), file=name)
        if loaded is not None and not isinstance(loaded, dict):
            raise ConfigError(f"{name}: expected a mapping of sections at the top level")
        data.update(loaded or {})
    for text in overrides:
        keys, value = parse_override(text)
        set_key(data, keys, value)
    for meta in ("source_file", "paths_as_written"):
        if meta in data:
            raise ConfigError(f"{name}: {meta}: unknown key")
    written: dict[str, str] = {}
    data = _expand_paths(data, name, "", written)
    config = build_job(data, name)
    return dataclasses.replace(
        config, source_file=name, paths_as_written=tuple(sorted(written.items()))
    )


_PATH_KEYS = ("path", "errors", "images", "bundle", "checkpoint_dir")


def _expand_paths(value: Any, file: str, key: str, written: dict[str, str]) -> Any:
    """``value`` (a job file's mapping) with every path expanded (``written``: expanded ->
    as written, for the ones that changed)."""
    if isinstance(value, dict):
        return {
            k: _expand_paths(v, file, f"{key}.{k}" if key else str(k), written)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_expand_paths(v, file, key, written) for v in value]
    last = key.rpartition(".")[2]
    if key == "history" and isinstance(value, str) and value != "off" and "://" not in value:
        last = "path"  # a SQLite file, expanded as every path is
    if not isinstance(value, str) or not (last in _PATH_KEYS or last == "url"):
        return value
    sqlite = _sqlite_file(value) if last == "url" else None
    if last == "url" and sqlite is None:
        return value  # a server's URL: its text (a password may hold a $) is left as it is
    try:
        expanded = "sqlite:///" + expand_path(sqlite) if sqlite else expand_path(value)
    except ValueError as e:
        raise ConfigError(f"{file}: {key}: {e}") from None
    if expanded != value:
        written[expanded] = value
    return expanded


def with_absolute_paths(config: JobConfig) -> dict[str, Any]:
    """The job as a dict with every file path (and SQLite file) made absolute, as a bundle
    records it: whoever reads the bundle later finds the data from any directory. The paths
    are the ones the job used (:func:`load_config` expanded ``~`` and variables already;
    they are not expanded a second time)."""

    def fix(value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            return {k: fix(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [fix(v, key) for v in value]
        if isinstance(value, str) and key in _PATH_KEYS:
            return str(Path(value).resolve())
        if isinstance(value, str) and key == "history" and value != "off" and "://" not in value:
            return str(Path(value).resolve())
        if isinstance(value, str) and key == "url" and _sqlite_file(value):
            return "sqlite:///" + str(Path(str(_sqlite_file(value))).resolve())
        return value

    return fix(config.to_dict())


def recorded_job(manifest: dict[str, Any]) -> JobConfig | None:
    """The job a bundle was trained with (``extra.job_file``), or ``None`` when it records
    none (a bundle written from Python). The paths are the absolute ones of training time.

    Raises:
        ConfigError: the recorded job does not validate with this mfgtx.
    """
    job = (manifest.get("extra") or {}).get("job_file")
    if not isinstance(job, dict):
        return None
    return build_job(job, "the bundle's recorded job")
