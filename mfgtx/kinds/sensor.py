"""The ``sensor`` kind: a :class:`~mfgtx.models.SensorEncoder` for lot quality and RUL.

Shape legend: ``N`` windows, ``T`` window length, ``C`` sensors, ``K`` outputs, ``Q``
quantiles.

Job file: the ``model`` section (:class:`SensorSection`: the encoder's config minus the
sensor count, window length, outputs and class weights, which come from the data). Bundle:
the encoder, its :class:`SensorSpec` (columns, windowing, task, targets, time axis, scaler)
and, for a classifier, its calibration. Output rows: ``lot``, ``window_end`` (the key),
``window_start``, ``bundle_id``, then for a classifier (calibrated) ``p_bad`` (two classes:
label 1 is bad) or ``p_<target>_<k>`` per class, and ``decision``: ``bad`` or ``good`` at the
bundle's threshold (the most probable class without one; empty where a window could not be
scored), for a regressor one column per target and ``<target>_q<NN>`` per quantile; with
the bundle's conformal calibration (:mod:`mfgtx.calibration.conformal`) the band's two columns
at its coverage (``_q10``/``_q90`` at 80 %) are the calibrated band and every column is
clipped to the target's physical range (``calibration.bounds``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal

import numpy as np
import pandas as pd
import torch

from mfgtx._config import default_of
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.baselines import compare, fit_baselines, summary_cache
from mfgtx.calibration import class_probabilities, fit_calibration
from mfgtx.calibration.conformal import IntervalCalibration, bins_for, fit_cqr, fit_split
from mfgtx.data import (
    ColumnMap,
    DataError,
    Regimes,
    SensorScaler,
    SensorTable,
    WindowDataset,
    Windowing,
    Windows,
)
from mfgtx.data.read_options import ReadOptions
from mfgtx.kinds._fitting import Fitted, merged_fit
from mfgtx.kinds._intervals import Splits, interval_figures, judged_intervals
from mfgtx.kinds._job import FitRequest
from mfgtx.kinds._members import (
    Member,
    end_turn,
    member_names,
    members_of,
    run_members,
    start_member,
)
from mfgtx.kinds._onnx import Sensor, masked_example
from mfgtx.kinds._onnx import member_config as graph_config
from mfgtx.kinds._predictor import Trained, time_text
from mfgtx.kinds._registry import register_kind
from mfgtx.kinds._split import learning_split, target_values
from mfgtx.kinds._window_kind import WindowKind
from mfgtx.kinds._windows import WindowPredictor, batches
from mfgtx.kinds._words import BAD, GOOD, decision_words, lot_class_names, probability_column
from mfgtx.models import ClassLoss, SensorEncoder, SensorEncoderConfig, SensorEncoderEnsemble
from mfgtx.train import fit, predict

__all__ = ["SENSOR", "SensorKind", "SensorPredictor", "SensorSection", "SensorSpec"]


@dataclass(frozen=True)
class SensorSection:
    """The ``model`` section of a sensor job: the settings of
    :class:`~mfgtx.models.SensorEncoderConfig` (same names, same meaning) but ``n_channels``,
    ``max_len`` and ``n_outputs``, which come from the data (sensors, ``windows.window``,
    targets or classes), and ``clip`` (keep a regressor's predictions within its training
    targets' range). A classifier trains with class weights from the training lots' class
    balance (:class:`~mfgtx.models.ClassLoss`, beside the model config).

    Each key's default is the encoder config's (:func:`~mfgtx._config.default_of`, written
    once in :class:`~mfgtx.models.SensorEncoderConfig`), sized for plant data sets of a few
    dozen lots (``d_model`` 32, 2 layers, ``d_ff`` 64). The encoder's rules that no data
    decides (``d_model`` divisible by ``n_heads``, ``tokens: sensor`` without patches ...)
    refuse a value when the job file is read (the model config's own
    :meth:`~mfgtx.models.SensorEncoderConfig.check`); every value is passed to the model
    config (:meth:`model_config`), which checks it again beside the window length and sensors
    it must fit. One key keeps a default of its own: ``task`` is ``classification`` in a job
    file (a plant's lots pass or fail; the classes come from the data) and ``regression`` in
    the library, where a config without ``task`` is a one-output regressor (``n_outputs`` 1,
    which a classifier cannot have).

    Attributes:
        clip: keep a regressor's predictions (and quantiles) within the range of its training
            targets (saved in the bundle); the other keys are the encoder config's.

    Example:
        >>> config = SensorSection(patch_len=4).model_config(n_channels=3, max_len=20)
        >>> config.d_model, config.n_outputs, config.task
        (32, 2, 'classification')
    """

    task: Literal["regression", "classification"] = "classification"
    quantiles: tuple[float, ...] = default_of(SensorEncoderConfig, "quantiles")
    tokens: Literal["time", "sensor"] = default_of(SensorEncoderConfig, "tokens")
    patch_len: int = default_of(SensorEncoderConfig, "patch_len")
    stride: int | None = default_of(SensorEncoderConfig, "stride")
    channel_independent: bool = default_of(SensorEncoderConfig, "channel_independent")
    d_model: int = default_of(SensorEncoderConfig, "d_model")
    n_heads: int = default_of(SensorEncoderConfig, "n_heads")
    n_layers: int = default_of(SensorEncoderConfig, "n_layers")
    d_ff: int = default_of(SensorEncoderConfig, "d_ff")
    dropout: float = default_of(SensorEncoderConfig, "dropout")
    positional: Literal["sinusoidal", "learned", "rotary"] = default_of(
        SensorEncoderConfig, "positional"
    )
    norm_first: bool = default_of(SensorEncoderConfig, "norm_first")
    pooling: Literal["mean", "cls"] = default_of(SensorEncoderConfig, "pooling")
    target_scale: float = default_of(SensorEncoderConfig, "target_scale")
    clip: bool = False

    def __post_init__(self) -> None:
        # the encoder's own rules, refused when the job file is read (not after the data)
        SensorEncoderConfig.check(self)

    def model_config(
        self,
        *,
        n_channels: int,
        max_len: int,
        n_outputs: int | None = None,
    ) -> SensorEncoderConfig:
        """The :class:`~mfgtx.models.SensorEncoderConfig` of this section and the data's
        values (``n_outputs``: classes or targets; default 2 for a classifier, else 1).

        Raises:
            ValueError: a setting the encoder cannot take, or that does not fit the data.
        """
        if n_outputs is None:
            n_outputs = 2 if self.task == "classification" else 1
        return SensorEncoderConfig(
            n_channels=n_channels,
            max_len=max_len,
            task=self.task,
            n_outputs=n_outputs,
            quantiles=self.quantiles,
            tokens=self.tokens,
            patch_len=self.patch_len,
            stride=self.stride,
            channel_independent=self.channel_independent,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            positional=self.positional,
            norm_first=self.norm_first,
            pooling=self.pooling,
            target_scale=self.target_scale,
        )


def _columns_dict(c: ColumnMap) -> dict[str, Any]:
    return {
        "lot": c.lot,
        "time": c.time,
        "sensors": list(c.sensors or ()),
        "targets": list(c.targets),
        "label_time": c.label_time,
        "keys": list(c.keys),
        "layout": c.layout,
        "sensor_name": c.sensor_name,
        "value": c.value,
        **({"categories": list(c.categories)} if c.categories else {}),  # a text grade
        **({"time_format": c.time_format} if c.time_format else {}),
        **({"time_zone": c.time_zone} if c.time_zone else {}),
    }


def read_options_from(state: dict[str, Any], columns: ColumnMap) -> ReadOptions:
    """The read options an input spec saved (``read``), or for a bundle written before
    they were saved, today's defaults with the time format of its columns."""
    if state.get("read"):
        return ReadOptions.from_dict(state["read"])
    return ReadOptions(time_format=columns.time_format, time_zone=columns.time_zone)


def with_recorded_read(bundle: Bundle) -> dict[str, Any]:
    """``bundle``'s input spec; one written before read options were saved takes the CSV
    options of the job it records (``extra.job_file``), where they are valid."""
    state = dict(bundle.input_spec or {})
    if state.get("read"):
        return state
    job = (bundle.manifest.get("extra") or {}).get("job_file") or {}
    source = (job.get("data") or {}).get("source") if isinstance(job, dict) else None
    if not isinstance(source, dict):
        return state
    keys = ("delimiter", "decimal", "encoding")
    given = {k: source[k] for k in keys if isinstance(source.get(k), str)}
    try:
        state["read"] = ReadOptions(**given).to_dict() | {"time_format": None}
    except ValueError:  # written for another mfgtx: the defaults
        return state
    columns = state.get("columns") or {}
    state["read"].update(time_format=columns.get("time_format"))
    return state


def columns_from(state: dict[str, Any]) -> ColumnMap:
    """A :class:`~mfgtx.data.ColumnMap` from its JSON form (lists become tuples)."""
    fields: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in state.items()}
    return ColumnMap(**fields)


@dataclass(frozen=True)
class SensorSpec:
    """What a sensor model reads, and how: saved in its bundle (``input_spec``, version 2;
    version 1, without regimes, still reads).

    Attributes:
        columns: the columns of its data (with the targets and label time it trained on).
        windowing: window length, stride and ``min_rows``.
        task: ``classification`` or ``regression``.
        targets: the target columns (one per regression output; a classifier's label).
        time_kind: the time axis it trained on (``utc``, ``naive`` or ``number``); lots
            written another way are refused when scoring. ``None``: not recorded.
        scaler: the per-sensor scaler fitted on the training rows (of the windows as the
            model reads them: normalised per regime with ``regimes``).
        clip: per target, the ``(low, high)`` range of its training values that predictions
            are kept within, or ``None`` (not clipped).
        regimes: the operating regimes (:class:`~mfgtx.data.Regimes`, ``data.regimes``)
            fitted on the training rows, or ``None``: the model reads each sensor
            normalised within its row's regime and one channel per regime.
        read: how the training source's files were written (CSV dialect, time format and
            zone, pass/fail words: :class:`~mfgtx.data.read_options.ReadOptions`); scoring
            another source reads with them unless told otherwise. A bundle written before
            they were saved reads with the defaults.
    """

    VERSION: ClassVar[int] = 2

    columns: ColumnMap
    windowing: Windowing
    task: Literal["classification", "regression"]
    targets: tuple[str, ...]
    time_kind: str | None
    scaler: SensorScaler
    clip: tuple[tuple[float, float], ...] | None = None
    regimes: Regimes | None = None
    read: ReadOptions = field(default_factory=ReadOptions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read.to_dict(),
            "clip": None if self.clip is None else [list(c) for c in self.clip],
            "kind": "sensor",
            "version": self.VERSION,
            "columns": _columns_dict(self.columns),
            "windowing": self.windowing.to_dict(),
            "task": self.task,
            "targets": list(self.targets),
            "time_kind": self.time_kind,
            "scaler": self.scaler.to_dict(),
            "regimes": None if self.regimes is None else self.regimes.to_dict(),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> SensorSpec:
        """Rebuild from :meth:`to_dict` (version 2, or 1 of bundles written before regimes)."""
        if state.get("version") not in (1, cls.VERSION):
            raise ValueError(f"input_spec version {state.get('version')!r}, expected 1 or 2")
        regimes = state.get("regimes") if state["version"] >= 2 else None
        columns = columns_from(state["columns"])
        return cls(
            columns=columns,
            windowing=Windowing(**state["windowing"]),
            task=state["task"],
            targets=tuple(state["targets"]),
            time_kind=state["time_kind"],
            scaler=SensorScaler.from_dict(state["scaler"]),
            clip=None if state.get("clip") is None else tuple(tuple(c) for c in state["clip"]),
            regimes=None if regimes is None else Regimes.from_dict(regimes),
            read=read_options_from(state, columns),
        )


def spec_clip(
    spec: SensorSpec, out: np.ndarray, q: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Outputs ``(n, K)`` and quantiles ``(n, K, Q)`` within the training targets' range
    where the bundle clips (``model.clip``), else as they are."""
    if spec.clip is None:
        return out, q
    low, high = np.array([c[0] for c in spec.clip]), np.array([c[1] for c in spec.clip])
    out = np.clip(out, low, high)
    if q is not None:
        q = np.clip(q, low[None, :, None], high[None, :, None])
    return out, q


def band_columns(coverage: float) -> tuple[str, str]:
    """The suffixes of a calibrated band's columns: ``q10``, ``q90`` at 80 % coverage."""
    low = (1.0 - coverage) / 2.0
    return f"q{round(low * 100):02d}", f"q{round((1.0 - low) * 100):02d}"


def _band(
    predictor: SensorPredictor, cols: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray, float, str, int | None] | None:
    """A regressor's band in the columns it scores: ``(low, high)`` ``(n, K)``, the
    nominal coverage, how it was made (``conformal``, ``cqr``, or the model's own
    ``quantiles`` for a bundle without an interval calibration) and on how many validation
    lots; ``None`` without a band."""
    if predictor.task == "classification":
        return None
    targets, cal = predictor.input_spec.targets, predictor.intervals

    def edge(suffix: str) -> np.ndarray:
        return np.stack([cols[f"{t}_{suffix}"] for t in targets], axis=1)

    if cal is not None:
        lo, hi = band_columns(cal.coverage)
        return edge(lo), edge(hi), cal.coverage, cal.method, cal.lots
    levels = tuple(predictor.model.config.quantiles or ())
    if len(levels) < 2:
        return None
    lo, hi = (f"q{round(q * 100):02d}" for q in (min(levels), max(levels)))
    return edge(lo), edge(hi), float(max(levels) - min(levels)), "quantiles", None


def _uncalibrated_band(
    predictor: SensorPredictor, out: np.ndarray, q: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray, float] | None:
    """A calibrated regressor's own outermost quantiles ``(low, high)`` ``(n, K)`` as an
    uncalibrated bundle would score them, and what they span; ``None`` for a model without
    a calibration or a band."""
    levels = tuple(predictor.model.config.quantiles or ())
    if predictor.intervals is None or q is None or len(levels) < 2:
        return None
    _, clipped = spec_clip(predictor.input_spec, out, q)
    assert clipped is not None  # quantiles in, quantiles out
    j_low, j_high = int(np.argmin(levels)), int(np.argmax(levels))
    return clipped[:, :, j_low], clipped[:, :, j_high], float(max(levels) - min(levels))


def _lower(predictor: SensorPredictor) -> tuple[float | None, ...] | None:
    """The targets' physical floor the bundle's band is clipped to (``calibration.bounds``),
    so the baseline's band is clipped the same way; ``None`` without one."""
    cal = predictor.intervals
    return tuple(cal.lower) if cal is not None and cal.lower else None


def _train_member(
    member: Member,
    *,
    windows: Windows,
    scaler: SensorScaler,
    config: SensorEncoderConfig,
    loss: ClassLoss,
    target: Literal["class", "float"],
    on_step: Any,
) -> Any:
    """One encoder of the job (an ensemble member, or the one model) trained on its lots
    from its own seed: the task an engine runs (:func:`~mfgtx.kinds._members.run_members`),
    in this process or on a Ray worker. ``(encoder, fit result)``, or the member's next
    turn (:func:`~mfgtx.kinds._members.end_turn`)."""
    train = start_member(member)
    torch.manual_seed(train.seed)
    encoder = SensorEncoder(config, loss=loss)
    result = fit(
        encoder,
        WindowDataset(windows, member.fit_on, scaler, target=target),
        WindowDataset(windows, member.val, scaler, target=target),
        train,
        on_step=on_step,
        run_key=member.run_key,
        turn_seconds=member.turn_seconds,
    )
    return end_turn(member, encoder, result)


def _target_range(windows: Windows, idx: np.ndarray) -> tuple[tuple[float, float], ...]:
    y = target_values(windows)[idx]
    return tuple((float(np.nanmin(y[:, k])), float(np.nanmax(y[:, k]))) for k in range(y.shape[1]))


@dataclass(frozen=True)
class Explanation:
    """Attention maps of one window (non-causal diagnostics) and their deletion test.

    Attributes:
        maps: :class:`~mfgtx.explain.AttentionMaps` (with the predictions).
        deletion: :class:`~mfgtx.explain.DeletionResult`, or ``None`` when not asked for.
        x, observed: the model's input ``(1, T, C)`` and its mask.
        window_end: the window's last time (ISO 8601 text or a cycle number).
    """

    maps: Any
    deletion: Any
    x: torch.Tensor
    observed: torch.Tensor
    window_end: str


class SensorPredictor(WindowPredictor[SensorSpec]):
    """The :class:`~mfgtx.kinds.Predictor` of a SensorEncoder bundle (see the module
    docstring for its output columns)."""

    def cut(self, table: SensorTable, *, stride: int | None = None) -> Windows:
        """The windows of ``table`` as the model reads them (normalised per regime).

        Raises:
            DataError: a lot runs a regime the model never saw in training.
        """
        windows = self.windowing.cut(table, stride=stride, on_short="error")
        regimes = self.input_spec.regimes
        if regimes is None:
            return windows
        unseen = regimes.unseen(windows)
        if unseen:
            lot, value, n = unseen[0]
            raise DataError(
                f"lot {lot} runs {regimes.plan.column} {value} in {n} row(s), a regime the "
                f"model never saw in training (it knows {', '.join(regimes.known)}); it was not "
                "scored: retrain with lots of that regime",
                column=regimes.plan.column,
                lot=lot,
            )
        return regimes.apply(windows)

    def model_windows(self, windows: Windows) -> Windows:
        """``windows`` as the model reads them: raw windows (the data's columns) normalised
        per regime; windows already so (from :meth:`cut`) as they are."""
        regimes = self.input_spec.regimes
        if regimes is not None and tuple(windows.sensors) == regimes.inputs:
            return regimes.apply(windows)
        return windows

    def outputs(
        self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Raw outputs ``(n, K)`` (logits or predictions) and quantiles ``(n, K, Q)``."""
        model, quantiles = self.model, tuple(self.model.config.quantiles or ())
        windows = self.model_windows(windows)
        points, qs = [], []
        model.eval()
        with torch.no_grad():
            for part in batches(idx, batch_size):
                x, observed = windows.features(part, self.input_spec.scaler)
                xt, mt = torch.from_numpy(x), torch.from_numpy(observed)
                points.append(model(xt, mt).float().numpy())
                if quantiles:
                    qs.append(model.forward_quantiles(xt, mt).float().numpy())
        k = model.config.n_outputs
        out = np.concatenate(points) if points else np.zeros((0, k), np.float32)
        q = np.concatenate(qs) if qs else None
        return out, q

    def columns_of(self, out: np.ndarray, q: np.ndarray | None) -> dict[str, np.ndarray]:
        """The output columns for raw outputs (see :meth:`outputs`)."""
        cols: dict[str, np.ndarray] = {}
        if self.task == "classification":
            finite = np.isfinite(out).all(axis=1)
            safe = np.where(finite[:, None], out, 0.0)
            cal = self.calibration
            prob = class_probabilities(safe, cal)
            names = self.class_names
            # binary: P(bad) only (P(good) is 1 - P(bad)); multi-class: one per class
            for k in range(1, 2) if prob.shape[1] == 2 else range(prob.shape[1]):
                p = np.where(finite, prob[:, k], np.nan).astype(np.float64)
                cols[probability_column(names[k])] = p
            if cal is not None and cal.threshold is not None:  # flagged at the threshold
                cols["decision"] = decision_words(cal.decide(safe), (GOOD, BAD), scored=finite)
            else:
                cols["decision"] = decision_words(prob.argmax(axis=1), names, scored=finite)
            return cols
        targets = self.input_spec.targets
        out, q = spec_clip(self.input_spec, out, q)
        intervals = self.intervals
        if intervals is not None:  # point and quantiles within the target's physical range
            out = intervals.clip(out)
            if q is not None:  # (n, K, Q) -> (n, Q, K): the bounds run along the targets
                q = intervals.clip(q.transpose(0, 2, 1)).transpose(0, 2, 1)
        for k, name in enumerate(targets):
            cols[name] = out[:, k].astype(np.float64)
        levels = tuple(self.model.config.quantiles or ())
        if q is not None:
            for k, name in enumerate(targets):
                for j, level in enumerate(levels):
                    cols[f"{name}_q{round(level * 100):02d}"] = q[:, k, j].astype(np.float64)
        if intervals is not None:  # the calibrated band replaces (or adds) its two columns
            low_q = q[:, :, int(np.argmin(levels))] if q is not None else None
            high_q = q[:, :, int(np.argmax(levels))] if q is not None else None
            low, high = intervals.apply(out, low_q, high_q)
            lo_name, hi_name = band_columns(intervals.coverage)
            for k, name in enumerate(targets):
                cols[f"{name}_{lo_name}"] = low[:, k].astype(np.float64)
                cols[f"{name}_{hi_name}"] = high[:, k].astype(np.float64)
        return cols

    @property
    def class_names(self) -> tuple[str, ...]:
        """A classifier's class names as its output columns use them (:mod:`mfgtx.kinds._words`):
        ``good``, ``bad`` for two classes, else ``<target>_<k>``."""
        return lot_class_names(self.input_spec.targets[0], self.model.config.n_outputs)

    @property
    def channel_names(self) -> tuple[str, ...]:
        """The model's input channels in words, in the order it reads them (what a sensor
        attention map's bars are): the sensors, then with regimes one channel per regime,
        ``regime S355`` (a column regime's names or values) or ``regime 1`` ... (regimes
        grouped by settings). From the bundle's scaler, which holds the channels' names."""
        channels = tuple(self.input_spec.scaler.sensors)
        regimes = self.input_spec.regimes
        if regimes is None:
            return channels
        if regimes.plan.column is not None:
            named = regimes.names or tuple(f"{v:g}" for v in regimes.labels)
        else:
            named = tuple(str(k + 1) for k in range(regimes.n_regimes))
        words = {f"regime_{k}": f"regime {n}" for k, n in enumerate(named)}
        return tuple(words.get(c, c) for c in channels)

    def rows(self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256) -> pd.DataFrame:
        out, q = self.outputs(windows, idx, batch_size=batch_size)
        return pd.DataFrame(
            {
                "lot": windows.lot[idx].astype(str),
                "window_end": time_text(windows.end[idx]),
                "window_start": time_text(windows.start[idx]),
                "bundle_id": self.bundle_id,
                **self.columns_of(out, q),
            }
        )

    def defect_probability(self, windows: Windows, idx: np.ndarray) -> np.ndarray:
        """A classifier's calibrated P(bad) (binary) or probabilities ``(n, K)``."""
        out, _ = self.outputs(windows, idx)
        prob = class_probabilities(out, self.calibration)
        return prob[:, 1] if prob.shape[1] == 2 else prob

    def explain(
        self,
        data: pd.DataFrame | Windows,
        *,
        window: int = -1,
        deletion: bool = True,
        fraction: float = 0.1,
    ) -> Explanation:
        """Attention maps of one window of ``data`` (rows of one lot, or windows) and the
        deletion test beside them, watching P(bad) or the first target."""
        from mfgtx.explain import attention_maps, deletion_test

        windows, i = self._window_to_explain(data, window)
        x, observed = windows.features(i, self.input_spec.scaler)
        xt, ot = torch.from_numpy(x), torch.from_numpy(observed)
        maps = attention_maps(self.model, xt, mask=ot)
        check = None
        if deletion:
            target = 1 if self.task == "classification" else None
            check = deletion_test(self.model, xt, maps, mask=ot, fraction=fraction, target=target)
        return Explanation(maps, check, xt, ot, time_text(windows.end[i])[0])


class SensorKind(WindowKind[SensorSection, SensorSpec]):
    """The ``sensor`` kind (see the module docstring)."""

    name = "sensor"
    model_name = "mfgtx.SensorEncoder"
    model_class = SensorEncoder
    ensemble_name = "mfgtx.SensorEncoderEnsemble"
    ensemble_class = SensorEncoderEnsemble
    section_key = "model"
    Section = SensorSection
    default = True
    takes_regimes = True
    labelled = True

    def cut(self, windowing: Windowing, section: SensorSection) -> Any:
        """How training cuts a table into windows."""
        return lambda table: windowing.cut(table)

    def need(self, windowing: Windowing, section: SensorSection) -> int:
        """Rows a lot needs for one training window."""
        return windowing.need

    def fit(
        self,
        windows: Windows,
        columns: ColumnMap,
        windowing: Windowing,
        request: FitRequest[SensorSection],
    ) -> Fitted:
        """Split and audit ``windows``, train the encoder (or ``members`` encoders
        cross-fitted by lot, :func:`~mfgtx.kinds.cross_fit`), calibrate a classifier on
        the validation lots (an ensemble: on each member's own validation lots), and compare
        it with the baselines on the test lots. With ``regimes`` the regimes and per-regime
        statistics are fitted on the training rows and the model (and the baselines) read
        the sensors normalised per regime with one channel per regime.

        Raises:
            LeakageError: the split fails its audit.
            ValueError: settings that do not fit the data (naming them).
        """
        section, members = request.section, request.members
        task = section.task
        ls = learning_split(windows, request.plan, members, regimes=request.regimes)
        windows, fitted_regimes, splits, learn, test = (
            ls.windows, ls.regimes, ls.splits, ls.learn, ls.test,
        )  # fmt: skip
        scaler, report_audit, counts = ls.scaler, ls.report, ls.counts
        n_targets = len(windows.targets)
        class_weights, n_outputs = None, n_targets
        if task == "classification":
            if n_targets != 1:
                raise ValueError(
                    f"data.columns.targets: classification takes one target column, found "
                    f"{list(windows.targets)}"
                )
            y = target_values(windows)
            n_outputs = max(2, int(np.nanmax(y[:, 0])) + 1)
            counts_y = np.bincount(y[learn, 0].astype(int), minlength=n_outputs)
            class_weights = tuple(
                float(min(10.0, counts_y.sum() / (n_outputs * max(c, 1.0))))
                for c in counts_y.astype(float)
            )
        try:
            config = section.model_config(
                n_channels=len(windows.sensors), max_len=windows.window, n_outputs=n_outputs
            )
            loss = ClassLoss(class_weights=class_weights)  # the training lots' class balance
        except ValueError as e:  # settings that do not fit the data, e.g. patch sizes
            raise ValueError(f"{self.section_key}: {e}") from e
        target: Literal["class", "float"] = "class" if task == "classification" else "float"
        ones = members_of(request, splits)
        done = run_members(
            request, _train_member, ones, member_names(windows.lot, ones),
            shared={"windows": windows, "scaler": scaler, "config": config, "loss": loss,
                    "target": target, "on_step": request.on_step},
        )  # fmt: skip
        trained, fits = [encoder for encoder, _ in done], [f for _, f in done]
        model = SensorEncoderEnsemble.of(trained).eval() if members else trained[0]
        spec = SensorSpec(
            columns=columns,
            windowing=replace(windowing, stride=windows.stride),
            task=task,
            targets=tuple(windows.targets),
            time_kind=windows.time_kind,
            scaler=scaler,
            clip=_target_range(windows, learn) if section.clip else None,
            regimes=fitted_regimes,
            read=request.read,
        )
        result = Fitted(
            model=model,
            spec=spec,
            fit=merged_fit(fits) if members else fits[0],
            report=None,
            audit=report_audit,
            split={
                **request.plan.to_dict(),
                **({"ensemble_members": members} if members else {}),
            },
            counts=counts,
            train_config=request.train,
            extra_metrics={"ensemble_members": float(members)} if members else {},
        )
        if not request.judge:  # other processes under torchrun: rank 0 judges and writes
            return result
        calibration = None
        if task == "classification":  # on validation lots none of the judged models trained on
            last = request.plan.evaluate_on == "last_per_lot"
            logits, labels = [], []
            for member, (_, val) in zip(trained, splits, strict=True):
                val = windows.last_per_lot(val) if last else val
                ds = WindowDataset(windows, val, scaler, target="none")
                logits.append(predict(member, ds).numpy())
                labels.append(target_values(windows)[val, 0])
            calibration = fit_calibration(
                np.concatenate(logits), np.concatenate(labels), cost_ratio=request.cost_ratio
            )
        intervals = None
        if task == "regression" and request.intervals is not None:
            intervals = self._fit_intervals(trained, splits, windows, spec, request)
        predictor = SensorPredictor(self, Trained(model, calibration, intervals=intervals), spec)
        report, extra = self.judge(predictor, windows, learn, test, scaler=scaler, splits=splits)
        extra = {**result.extra_metrics, **extra}
        return replace(
            result, report=report, calibration=calibration, intervals=intervals,
            extra_metrics=extra,
        )  # fmt: skip

    def _fit_intervals(
        self,
        members: list[SensorEncoder],
        splits: Sequence[tuple[np.ndarray, np.ndarray]],
        windows: Windows,
        spec: SensorSpec,
        request: FitRequest[SensorSection],
    ) -> IntervalCalibration | None:
        """A regressor's conformal calibration on the validation lots, or ``None``.

        Each member is scored on its own validation lots (none of which it trained on), the
        windows pooled, each lot weighing 1 (:mod:`mfgtx.calibration.conformal`); an
        ensemble's mean is then given the members' margin (members are scored alone, so the
        margin is that of one member: conservative where the ensemble is better). The
        targets' physical range (``calibration.bounds``) is checked against the training
        targets and kept with the margin.
        """
        settings = request.intervals
        assert settings is not None  # checked by the caller
        quantiles = tuple(members[0].config.quantiles or ())
        method = settings.resolve(bool(quantiles))
        y_all = target_values(windows)
        lower, upper = settings.bound(tuple(windows.targets), y_all)
        if method is None:
            return None
        last = request.plan.evaluate_on == "last_per_lot"
        ys, points, lows, highs, lots = [], [], [], [], []
        for member, (_, val) in zip(members, splits, strict=True):
            val = windows.last_per_lot(val) if last else val
            one = SensorPredictor(self, Trained(member), spec)
            out, q = one.outputs(windows, val)
            out, q = spec_clip(spec, out, q)
            ys.append(y_all[val])
            points.append(out)
            if q is not None:
                lows.append(q[:, :, int(np.argmin(quantiles))])
                highs.append(q[:, :, int(np.argmax(quantiles))])
            lots.append(windows.lot[val])
        y, g = np.concatenate(ys), np.concatenate(lots)
        coverage = settings.coverage_for(quantiles)
        point, labelled = np.concatenate(points), np.isfinite(y).all(axis=1)
        bins = settings.bins or bins_for(point[labelled], g[labelled], coverage)
        if method == "cqr":
            return fit_cqr(
                y, np.concatenate(lows), np.concatenate(highs), g, coverage,
                lower=lower, upper=upper, bins=bins, point=point,
            )  # fmt: skip
        return fit_split(y, point, g, coverage, lower=lower, upper=upper, bins=bins)

    def judge(
        self,
        predictor: SensorPredictor,
        windows: Windows,
        train_idx: np.ndarray,
        test_idx: np.ndarray,
        *,
        scaler: SensorScaler,
        model_name: str = "SensorEncoder",
        splits: Splits | None = None,
    ) -> tuple[Any, dict[str, float]]:
        """The :class:`~mfgtx.baselines.EvaluationReport` of ``predictor`` on ``test_idx``
        beside the baselines fitted on ``train_idx`` (the same rule in train and evaluate);
        for a regressor with an interval, its coverage on the test lots beside the ridge
        baseline's conformal interval (``splits``: :meth:`WindowKind.judge`) in the report
        and as the extra figures (:func:`~mfgtx.kinds._intervals.interval_figures`)."""
        task = predictor.task
        windows = predictor.model_windows(windows)  # baselines read what the model reads
        cols: dict[str, np.ndarray] = {}
        raw = None
        if task == "classification":
            pred = predictor.defect_probability(windows, test_idx)
        else:  # the predictions score writes (clipped where the bundle clips)
            out, q = predictor.outputs(windows, test_idx)
            cols = predictor.columns_of(out, q)
            pred = np.stack([cols[t] for t in predictor.input_spec.targets], axis=1)
            raw = _uncalibrated_band(predictor, out, q)
        with summary_cache():  # the baselines summarise overlapping windows: once each
            baselines = fit_baselines(windows, train_idx, task, scaler=scaler)
            rul = any("rul" in t.lower() for t in windows.targets)
            report = compare(
                task, windows, test_idx, pred, baselines, model_name=model_name, rul=rul
            )
            band = _band(predictor, cols)
            if band is None:
                return report, {}
            low, high, nominal, method, lots = band
            found = judged_intervals(
                name=model_name, task=task, windows=windows, test_idx=test_idx,
                y=target_values(windows)[test_idx], low=low, high=high, nominal=nominal,
                method=method, calibration_lots=lots, splits=splits, scaler=scaler,
                lower=_lower(predictor), uncalibrated=raw,
            )  # fmt: skip
        return replace(report, intervals=found), interval_figures(found)

    def spec_from_bundle(self, bundle: Bundle) -> SensorSpec:
        if bundle.input_spec is not None:
            try:
                return SensorSpec.from_dict(with_recorded_read(bundle))
            except (KeyError, TypeError, ValueError) as e:
                raise BundleError(f"{bundle.path}: bad input_spec: {e}", file=bundle.path) from e
        job = self.old_layout(bundle, "window", "targets", "task")  # format 2
        schema = dict(bundle.manifest.get("data_schema") or {})
        if not schema or bundle.scaler is None:
            self.too_old(bundle, "data_schema", "scaler")
        window = int(job["window"])
        columns = columns_from(schema)
        return SensorSpec(
            columns=columns,
            windowing=Windowing(
                window=window, stride=int(job.get("stride") or window), min_rows=job.get("min_rows")
            ),
            task=job["task"],
            targets=tuple(job["targets"]),
            time_kind=job.get("time_kind"),
            scaler=bundle.scaler,
            read=read_options_from({}, columns),
        )

    def predictor(self, bundle: Bundle) -> SensorPredictor:
        return SensorPredictor(self, bundle, self.spec_from_bundle(bundle))

    def onnx_signature(self, predictor: Any) -> tuple[tuple[str, ...], tuple[str, ...], Any]:
        q = bool(graph_config(predictor.model).quantiles)
        outputs = ("prediction", "quantiles") if q else ("prediction",)
        return ("x", "mask"), outputs, Sensor(predictor.model, q)

    def onnx_inputs(
        self, predictor: Any, data: Any, idx: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        idx = np.arange(len(data)) if idx is None else np.asarray(idx)
        x, observed = data.features(idx, predictor.input_spec.scaler)
        return {"x": x.astype(np.float32), "mask": observed.astype(bool)}

    def onnx_example(self, predictor: Any, names: tuple[str, ...]) -> dict[str, Any]:
        c = graph_config(predictor.model)
        x, mask, _ = masked_example((2, predictor.input_spec.windowing.window, c.n_channels))
        return {"x": x, "mask": mask}


SENSOR = register_kind(SensorKind())
