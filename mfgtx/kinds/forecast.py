"""The ``forecast`` kind: a :class:`~mfgtx.models.CausalForecaster` of sensor series.

Shape legend: ``N`` windows, ``T`` context, ``H`` horizon, ``K`` forecast sensors, ``Q``
quantiles.

Job file: the ``forecast`` section (:class:`ForecastSection`: the forecaster's config minus
the series count, context length and covariate count, which come from the data; plus
``targets``, the sensors to forecast, and ``linear_skip``: ``off``, ``learned`` or
``ridge``, the linear map fitted on the training windows and then frozen). The context is
``windows.window``. Output rows: one per window, sensor and step ahead: ``lot``,
``window_end`` (the forecast origin), ``sensor``, ``step`` (1 = the next row; the key: these
four), ``window_start``, ``bundle_id``, ``forecast_at`` (the origin plus ``step`` rows at the
window's mean spacing), ``forecast`` and ``q<NN>`` per quantile of the band.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Literal, Protocol, TypedDict, runtime_checkable

import numpy as np
import pandas as pd
import torch

from mfgtx._config import ConfigError, default_of
from mfgtx.artifacts import Bundle, BundleError
from mfgtx.baselines import compare, fit_baselines, forecast_baseline
from mfgtx.calibration.conformal import (
    IntervalCalibration,
    fit_cqr,
    fit_split,
    horizon_block_for,
)
from mfgtx.data import (
    ColumnMap,
    ForecastWindows,
    SensorScaler,
    SensorTable,
    Windowing,
    Windows,
)
from mfgtx.data.read_options import ReadOptions
from mfgtx.kinds._fitting import Fitted, merged_fit
from mfgtx.kinds._intervals import Splits, interval_figures, judged_intervals
from mfgtx.kinds._job import FitRequest, JobSettings
from mfgtx.kinds._members import (
    Member,
    end_turn,
    member_names,
    members_of,
    run_members,
    start_member,
)
from mfgtx.kinds._onnx import Forecast, masked_example
from mfgtx.kinds._onnx import member_config as graph_config
from mfgtx.kinds._predictor import Trained, time_text
from mfgtx.kinds._registry import register_kind
from mfgtx.kinds._split import learning_split, target_values
from mfgtx.kinds._window_kind import WindowKind
from mfgtx.kinds._windows import WindowPredictor, batches
from mfgtx.kinds.sensor import _columns_dict, columns_from, read_options_from, with_recorded_read
from mfgtx.models import CausalForecaster, ForecasterConfig, ForecasterEnsemble
from mfgtx.train import fit

__all__ = ["FORECAST", "ForecastKind", "ForecastPredictor", "ForecastSection", "ForecastSpec"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ForecastSection:
    """The ``forecast`` section of a forecast job: the settings of
    :class:`~mfgtx.models.ForecasterConfig` (same names, same meaning) but ``n_channels``,
    ``context_length`` and the covariate counts, which come from the data (the ``targets``
    sensors, ``windows.window``, the other sensors); plus ``targets`` (sensors to forecast;
    default: all, the others become past covariates), ``linear_skip`` (``off``; ``learned``;
    ``ridge``: fitted by ridge on the training windows, then frozen) and ``pick`` (with
    ``linear_skip: ridge``: ``validation``, the default, ships the ridge map alone when it
    forecasts the validation windows better than the trained Transformer, and the report says
    so; ``transformer`` always ships the Transformer).

    Each key's default is the forecaster config's (:func:`~mfgtx._config.default_of`,
    written once in :class:`~mfgtx.models.ForecasterConfig`), sized for plant data. The
    forecaster's rules that no data decides (``d_model`` divisible by ``n_heads``, an
    autoregressive ``horizon`` a multiple of the stride, ``linear_skip`` only with
    ``head: direct`` ...) refuse a value when the job file is read (the model config's own
    :meth:`~mfgtx.models.ForecasterConfig.check`); every value is passed to the model config
    (:meth:`model_config`), which checks it again beside the window length it must fit. One
    key has a form of its own: ``linear_skip`` is ``off``, ``learned`` or ``ridge`` here (how
    the skip is trained) and a yes/no in the model config (whether the model has one);
    ``off`` is ``False``.

    Attributes:
        targets: the sensors to forecast (default: all); the others become past covariates.
        linear_skip: ``off``; ``learned`` (a linear map of each series' context added to the
            direct forecast, trained with it); ``ridge`` (that map fitted by ridge on the
            training windows, then frozen; needs ``head: direct``).
        pick: with ``linear_skip: ridge``: ``validation`` ships the ridge map alone when it
            forecasts the validation windows better than the trained Transformer (the report
            says so); ``transformer`` always ships the Transformer.

    Example:
        >>> config = ForecastSection(horizon=4).model_config(n_channels=2, context_length=64)
        >>> config.horizon, config.patch_len, config.quantiles
        (4, 8, (0.1, 0.5, 0.9))
    """

    horizon: int = default_of(ForecasterConfig, "horizon")
    patch_len: int = default_of(ForecasterConfig, "patch_len")
    stride: int | None = default_of(ForecasterConfig, "stride")
    d_model: int = default_of(ForecasterConfig, "d_model")
    n_heads: int = default_of(ForecasterConfig, "n_heads")
    n_layers: int = default_of(ForecasterConfig, "n_layers")
    d_ff: int = default_of(ForecasterConfig, "d_ff")
    dropout: float = default_of(ForecasterConfig, "dropout")
    head: Literal["direct", "autoregressive"] = default_of(ForecasterConfig, "head")
    channel_independent: bool = default_of(ForecasterConfig, "channel_independent")
    quantiles: tuple[float, ...] = default_of(ForecasterConfig, "quantiles")
    revin: bool = default_of(ForecasterConfig, "revin")
    positional: Literal["sinusoidal", "learned", "rotary"] = default_of(
        ForecasterConfig, "positional"
    )
    norm_first: bool = default_of(ForecasterConfig, "norm_first")
    head_dropout: float = default_of(ForecasterConfig, "head_dropout")
    targets: tuple[str, ...] = ()
    linear_skip: Literal["off", "learned", "ridge"] = "off"
    pick: Literal["validation", "transformer"] = "validation"

    def __post_init__(self) -> None:
        # the forecaster's own rules, refused when the job file is read (not after the data)
        ForecasterConfig.check(self, linear_skip=self.linear_skip != "off")

    def model_config(
        self,
        *,
        n_channels: int,
        context_length: int,
        n_past_covariates: int = 0,
        n_future_covariates: int = 0,
    ) -> ForecasterConfig:
        """The :class:`~mfgtx.models.ForecasterConfig` of this section and the data's values.

        Raises:
            ValueError: a setting the forecaster cannot take, or that does not fit the data.
        """
        return ForecasterConfig(
            n_channels=n_channels,
            context_length=context_length,
            horizon=self.horizon,
            patch_len=self.patch_len,
            stride=self.stride,
            d_model=self.d_model,
            n_heads=self.n_heads,
            n_layers=self.n_layers,
            d_ff=self.d_ff,
            dropout=self.dropout,
            head=self.head,
            channel_independent=self.channel_independent,
            quantiles=self.quantiles,
            n_past_covariates=n_past_covariates,
            n_future_covariates=n_future_covariates,
            revin=self.revin,
            positional=self.positional,
            norm_first=self.norm_first,
            head_dropout=self.head_dropout,
            linear_skip=self.linear_skip != "off",
        )


@dataclass(frozen=True)
class ForecastSpec:
    """What a forecaster reads, and how: saved in its bundle (``input_spec``, version 1).

    Attributes:
        columns: the columns of its data.
        windowing: the context (``window``) and the stride between forecast origins.
        horizon: rows forecast.
        targets: the sensors forecast (the model's series).
        covariates: the other sensors, given as past-observed covariates.
        time_kind: the time axis it trained on (``utc``, ``naive``, ``number``, or ``None``).
        scaler: fitted on the training rows.
        read: how the training source's files were written
            (:class:`~mfgtx.data.read_options.ReadOptions`; the defaults for a bundle
            written before they were saved).
    """

    VERSION: ClassVar[int] = 1
    task: ClassVar[str] = "forecast"

    columns: ColumnMap
    windowing: Windowing
    horizon: int
    targets: tuple[str, ...]
    covariates: tuple[str, ...]
    time_kind: str | None
    scaler: SensorScaler | None
    read: ReadOptions = field(default_factory=ReadOptions)

    def to_dict(self) -> dict[str, Any]:
        return {
            "read": self.read.to_dict(),
            "kind": "forecast",
            "version": self.VERSION,
            "columns": _columns_dict(self.columns),
            "windowing": self.windowing.to_dict(),
            "horizon": self.horizon,
            "targets": list(self.targets),
            "covariates": list(self.covariates),
            "time_kind": self.time_kind,
            "scaler": None if self.scaler is None else self.scaler.to_dict(),
        }

    @classmethod
    def from_dict(cls, state: dict[str, Any]) -> ForecastSpec:
        if state.get("version") != cls.VERSION:
            raise ValueError(f"input_spec version {state.get('version')!r}, expected 1")
        columns = columns_from(state["columns"])
        return cls(
            columns=columns,
            windowing=Windowing(**state["windowing"]),
            horizon=int(state["horizon"]),
            targets=tuple(state["targets"]),
            covariates=tuple(state["covariates"]),
            time_kind=state["time_kind"],
            scaler=None if state["scaler"] is None else SensorScaler.from_dict(state["scaler"]),
            read=read_options_from(state, columns),
        )


@runtime_checkable
class _Kept(Protocol):
    """A baseline a bundle can keep (every forecast baseline): its fitted state as JSON."""

    def state(self) -> dict[str, Any]: ...


class _Inputs(TypedDict):
    """The forecaster's inputs of some windows: the forecast sensors' past ``(n, T, K)``
    (scaled), where it was observed, and the other sensors ``(n, T, C - K)`` (``None``
    for a model without covariates)."""

    past: torch.Tensor
    observed: torch.Tensor
    covariates: torch.Tensor | None


@dataclass(frozen=True)
class ForecastExplanation:
    """Attention maps of one forecast (non-causal diagnostics) and their deletion test."""

    maps: Any
    deletion: Any
    window_end: str


class ForecastPredictor(WindowPredictor[ForecastSpec]):
    """The :class:`~mfgtx.kinds.Predictor` of a CausalForecaster bundle."""

    keys = ("lot", "window_end", "sensor", "step")

    def cut(self, table: SensorTable, *, stride: int | None = None) -> Windows:
        """Context windows of ``table`` (no horizon needed: forecasting looks ahead)."""
        return self.windowing.cut(table, stride=stride, on_short="error")

    def _inputs(self, windows: Windows, idx: np.ndarray) -> _Inputs:
        spec, c = self.input_spec, self.model.config
        tcols = [windows.sensors.index(t) for t in spec.targets]
        others = [j for j in range(len(windows.sensors)) if j not in tcols]
        x, observed = windows.features(idx, spec.scaler)
        return {
            "past": torch.from_numpy(x[:, :, tcols]),
            "observed": torch.from_numpy(observed[:, :, tcols]),
            "covariates": torch.from_numpy(x[:, :, others]) if c.n_past_covariates else None,
        }

    def arrays(
        self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """Forecasts in the data's units: the point ``(n, H, K)`` and, for a model with two
        or more quantiles, the band ``(n, H, K, Q)`` (else ``None``), with the bundle's
        conformal calibration."""
        return self._calibrated(*self.raw_arrays(windows, idx, batch_size=batch_size))

    def raw_arrays(
        self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """:meth:`arrays` as the network gives them, before the conformal calibration."""
        spec, c = self.input_spec, self.model.config
        tcols = [windows.sensors.index(t) for t in spec.targets]
        if spec.scaler is None:
            center, scale = np.zeros(len(tcols)), np.ones(len(tcols))
        else:
            center = np.asarray(spec.scaler.center, dtype=np.float64)[tcols]
            scale = np.asarray(spec.scaler.scale, dtype=np.float64)[tcols]
        with_band = len(c.quantiles or ()) >= 2
        points, bands = [], []
        self.model.eval()
        with torch.no_grad():
            for part in batches(idx, batch_size):
                b = self._inputs(windows, part)
                point, band = self.model.forecast_with_quantiles(
                    b["past"], b["observed"], b["covariates"]
                )
                points.append(point.double().numpy())
                if with_band:
                    bands.append(band.double().numpy())
        shape = (0, c.horizon, len(tcols))
        point = np.concatenate(points) * scale + center if points else np.zeros(shape)
        band = None
        if with_band:
            band = (
                np.concatenate(bands) * scale[:, None] + center[:, None]
                if bands
                else np.zeros((*shape, len(c.quantiles)))
            )
        return point, band

    def _calibrated(
        self, point: np.ndarray, band: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``point`` ``(n, H, K)`` and ``band`` ``(n, H, K, Q)`` with the bundle's conformal
        calibration: the outermost quantiles become the calibrated band (per step and
        channel), everything clipped to the channels' physical range; as they are without.
        Neither input is changed."""
        cal = self.intervals
        if cal is None or band is None:
            return point, band
        levels = self.model.config.quantiles
        j_low, j_high = int(np.argmin(levels)), int(np.argmax(levels))
        low, high = cal.apply(point, band[..., j_low], band[..., j_high])
        band = cal.clip(band.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2).copy()  # along K
        band[..., j_low], band[..., j_high] = low, high
        return cal.clip(point), band

    @property
    def best_baseline(self) -> str | None:
        """The name of the bundle's best baseline on its test windows, when the bundle keeps
        it (bundles written before mfgtx kept it: ``None``)."""
        state = self._best_baseline_state()
        return None if not state else str(state.get("name"))

    def _best_baseline_state(self) -> dict[str, Any] | None:
        """The kept baseline's saved state in the manifest (``None`` when not kept)."""
        return (self.bundle.manifest.get("extra") or {}).get("best_baseline") or None

    def baseline_arrays(self, windows: Windows, idx: np.ndarray) -> np.ndarray | None:
        """``(n, H, K)`` forecasts of the bundle's best baseline (fitted on the bundle's
        training windows, :attr:`best_baseline`) from the same windows as :meth:`arrays`, in
        the data's units; ``None`` when the bundle does not keep one.

        Raises:
            BundleError: the kept baseline cannot be read back.
        """
        state = self._best_baseline_state()
        if not state:
            return None
        try:
            baseline = forecast_baseline(state)
        except ValueError as e:
            raise BundleError(f"{self.path}: best_baseline: {e}", file=self.path) from e
        spec = self.input_spec
        ahead = replace(windows, horizon=spec.horizon, targets=tuple(spec.targets), y=None)
        return baseline.predict(ahead, np.asarray(idx))

    def rows(self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256) -> pd.DataFrame:
        c, targets = self.model.config, list(self.input_spec.targets)
        point, band = self.arrays(windows, idx, batch_size=batch_size)
        n, h, k = len(idx), c.horizon, len(targets)
        step = np.tile(np.arange(1, h + 1), n * k)  # order: window, sensor, step
        window_of = np.repeat(np.arange(n), h * k)
        end, start = windows.end[idx], windows.start[idx]
        spacing = (end - start) / max(windows.window - 1, 1)
        at = end[window_of] + spacing[window_of] * step
        cols: dict[str, Any] = {
            "lot": windows.lot[idx][window_of].astype(str),
            "window_end": np.asarray(time_text(end), dtype=object)[window_of],
            "sensor": np.tile(np.repeat(np.asarray(targets, dtype=object), h), n),
            "step": step.astype(np.int64),
            "window_start": np.asarray(time_text(start), dtype=object)[window_of],
            "bundle_id": self.bundle_id,
            "forecast_at": time_text(at),
            "forecast": point.transpose(0, 2, 1).reshape(-1).astype(np.float64),
        }
        if band is not None:
            for j, level in enumerate(c.quantiles):
                cols[f"q{round(level * 100):02d}"] = (
                    band[..., j].transpose(0, 2, 1).reshape(-1).astype(np.float64)
                )
        return pd.DataFrame(cols)

    def explain(
        self, data: pd.DataFrame | Windows, *, window: int = -1, deletion: bool = True
    ) -> ForecastExplanation:
        """Attention maps of the forecast from one window of ``data`` (rows of one lot, or
        windows), and the deletion test of the first forecast sensor."""
        from mfgtx.explain import attention_maps, deletion_test

        windows, i = self._window_to_explain(data, window)
        b = self._inputs(windows, i)
        maps = attention_maps(self.model, b["past"], observed=b["observed"])
        check = (
            deletion_test(self.model, b["past"], maps, observed=b["observed"]) if deletion else None
        )
        return ForecastExplanation(maps, check, time_text(windows.end[i])[0])


def ridge_map_alone(model: CausalForecaster) -> CausalForecaster:
    """A copy of ``model`` (``linear_skip: ridge``) whose point forecast is its frozen ridge
    map alone: the direct head's point outputs are zero, so the point is the map's forecast
    exactly; the quantile band is kept as trained."""
    if model.direct is None or model.skip is None:
        raise ValueError("ridge_map_alone needs a direct-head model with linear_skip")
    alone = copy.deepcopy(model)
    head = alone.direct
    assert head is not None  # a copy of model's, checked above
    per = 1 + len(alone.config.quantiles or ())  # (H, k, 1 + Q) outputs, flattened
    point = torch.arange(head.out_features) % per == 0
    with torch.no_grad():
        head.weight[point] = 0.0
        head.bias[point] = 0.0
    return alone


def _scaled_mse(predictor: ForecastPredictor, windows: Windows, idx: np.ndarray) -> float:
    """Mean squared error of ``predictor``'s point forecasts of windows ``idx`` in the
    training scaler's units (NaN without a window)."""
    if len(idx) == 0:
        return float("nan")
    point, _ = predictor.arrays(windows, idx)
    spec = predictor.input_spec
    cols = [windows.sensors.index(t) for t in spec.targets]
    scale = np.ones(len(cols)) if spec.scaler is None else np.asarray(spec.scaler.scale)[cols]
    return float(np.nanmean(((point - target_values(windows)[idx]) / scale) ** 2))


def _name(picks: list[dict[str, Any]]) -> str:
    """The report's name of the shipped model: the Transformer, or its ridge map alone."""
    n = sum(p["linear"] for p in picks)
    if not n:
        return "CausalForecaster"
    if n == len(picks):
        return "CausalForecaster's ridge map (picked on validation)"
    return f"CausalForecaster ({n} of {len(picks)} members their ridge map, picked on validation)"


def _train_member(
    member: Member,
    *,
    windows: Windows,
    scaler: SensorScaler,
    config: ForecasterConfig,
    covariates: bool,
    ridge: bool,
    on_step: Any,
) -> Any:
    """One forecaster of the job (an ensemble member, or the one model) trained on its lots
    from its own seed, after its frozen ridge map (``ridge``): the task an engine runs
    (:func:`~mfgtx.kinds._members.run_members`), in this process or on a Ray worker.
    ``(forecaster, fit result)``, or the member's next turn
    (:func:`~mfgtx.kinds._members.end_turn`).

    Raises:
        ValueError: ``ridge`` and no training window has its whole horizon recorded.
    """
    train = start_member(member)
    torch.manual_seed(train.seed)
    forecaster = CausalForecaster(config)
    fit_on = ForecastWindows(windows, member.fit_on, scaler, covariates=covariates)
    if ridge:  # the linear forecast first; training the rest
        items = fit_on.batch(member.fit_on)
        whole = torch.isfinite(items["y"]).flatten(1).all(1)  # horizons recorded
        if not bool(whole.any()):
            raise ValueError(
                "forecast.linear_skip: ridge needs training windows whose whole "
                "horizon is recorded; none has it"
            )
        forecaster.fit_linear_skip(items["x"][whole], items["y"][whole], items["observed"][whole])
    result = fit(
        forecaster,
        fit_on,
        ForecastWindows(windows, member.val, scaler, covariates=covariates),
        train,
        on_step=on_step,
        run_key=member.run_key,
        turn_seconds=member.turn_seconds,
    )
    return end_turn(member, forecaster, result)


class ForecastKind(WindowKind[ForecastSection, ForecastSpec]):
    """The ``forecast`` kind (see the module docstring)."""

    name = "forecast"
    model_name = "mfgtx.CausalForecaster"
    model_class = CausalForecaster
    ensemble_name = "mfgtx.ForecasterEnsemble"
    ensemble_class = ForecasterEnsemble
    section_key = "forecast"
    Section = ForecastSection

    #: training forecasts sensors: the data needs no targets
    labelled = False

    def need(self, windowing: Windowing, section: ForecastSection) -> int:
        """Rows a lot needs for one training window (context + horizon)."""
        return windowing.window + section.horizon

    def cut(self, windowing: Windowing, section: ForecastSection) -> Any:
        """How training cuts a table into forecast windows (context + horizon).

        Raises:
            ValueError: ``windows.min_rows`` is set (forecasts need every context row).
        """
        if windowing.min_rows is not None:
            raise ValueError(
                "windows.min_rows: forecasts need every context row of their lot; leave "
                f"min_rows out of a forecast job (found {windowing.min_rows})"
            )

        def cut(table: SensorTable) -> Windows:
            sensors = tuple(table.columns.sensors or ())
            unknown = [t for t in section.targets if t not in sensors]
            if unknown:
                raise ValueError(
                    f"forecast.targets: {unknown} are not sensors of the data (sensors: "
                    f"{list(sensors)})"
                )
            return windowing.cut(
                table, horizon=section.horizon, forecast=tuple(section.targets) or sensors
            )

        return cut

    def fit(
        self,
        windows: Windows,
        columns: ColumnMap,
        windowing: Windowing,
        request: FitRequest[ForecastSection],
    ) -> Fitted:
        """Split and audit the forecast ``windows``, train the forecaster (``members``:
        an ensemble cross-fitted by lot, :func:`~mfgtx.kinds.cross_fit`; after the frozen
        ridge map with ``linear_skip: ridge``), and compare it with the forecast baselines
        and the band's interval coverage on the test windows whose horizon was recorded.
        Operating ``regimes`` are for the sensor kind only (refused).

        Raises:
            LeakageError: the split fails its audit.
            ValueError: settings that do not fit the data (naming them).
        """
        section, members = request.section, request.members
        if request.regimes is not None:
            raise ValueError(
                "data.regimes: operating regimes are for sensor jobs (mfgtx train sensor), "
                "not forecast"
            )
        if windowing.min_rows is not None:
            raise ValueError(
                "windows.min_rows: forecasts need every context row of their lot; leave "
                f"min_rows out of a forecast job (found {windowing.min_rows})"
            )
        ls = learning_split(windows, request.plan, members)
        splits, scaler, report_audit = ls.splits, ls.scaler, ls.report
        test_all, learn, counts = ls.test, ls.learn, ls.counts
        targets = tuple(windows.targets)
        covariates = tuple(s for s in windows.sensors if s not in targets)
        try:
            config = section.model_config(
                n_channels=len(targets),
                context_length=windows.window,
                n_past_covariates=len(covariates),
                n_future_covariates=0,
            )
        except ValueError as e:  # settings that do not fit the data, e.g. patch sizes
            raise ValueError(f"{self.section_key}: {e}") from e

        spec = ForecastSpec(
            columns=columns,
            windowing=replace(windowing, stride=windows.stride),
            horizon=section.horizon,
            targets=targets,
            covariates=covariates,
            time_kind=windows.time_kind,
            scaler=scaler,
            read=request.read,
        )
        labelled = windows.labelled()
        ones = members_of(request, splits)
        done = run_members(
            request, _train_member, ones, member_names(windows.lot, ones),
            shared={"windows": windows, "scaler": scaler, "config": config,
                    "covariates": bool(covariates), "ridge": section.linear_skip == "ridge",
                    "on_step": request.on_step},
        )  # fmt: skip
        trained, fits, picks = [], [f for _, f in done], []
        for (forecaster, _), (_, val) in zip(done, splits, strict=True):
            if section.linear_skip == "ridge" and section.pick == "validation":
                forecaster, pick = self._pick(
                    forecaster, spec, windows, np.intersect1d(val, labelled)
                )
                picks.append(pick)
            trained.append(forecaster)
        model = ForecasterEnsemble.of(trained).eval() if members else trained[0]
        test = np.intersect1d(test_all, labelled)
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
            counts={**counts, "test": len(test)},
            train_config=request.train,
        )
        if not request.judge:
            return result
        intervals = None
        if request.intervals is not None:
            intervals = self._fit_intervals(trained, splits, windows, spec, labelled, request)
        predictor = ForecastPredictor(self, Trained(model, intervals=intervals), spec)
        learned = np.intersect1d(learn, labelled)
        baselines = fit_baselines(windows, learned, "forecast", scaler=scaler)
        report, extra = self.judge(
            predictor, windows, learned, test, scaler=scaler, model_name=_name(picks),
            baselines=baselines, splits=splits,
        )  # fmt: skip
        if members:
            extra = {**extra, "ensemble_members": float(members)}
        if picks:
            extra = {
                **extra,
                "ridge_map_members": float(sum(p["linear"] for p in picks)),
                "validation_mse_transformer": float(np.mean([p["transformer"] for p in picks])),
                "validation_mse_ridge_map": float(np.mean([p["ridge map"] for p in picks])),
            }
        best = report.best_baseline()  # kept, so its forecasts can be drawn beside the model's
        kept = next((b.state() for b in baselines if b.name == best and isinstance(b, _Kept)), None)
        return replace(
            result, report=report, extra_metrics=extra, best_baseline=kept, intervals=intervals
        )

    def _fit_intervals(
        self,
        members: list[CausalForecaster],
        splits: Sequence[tuple[np.ndarray, np.ndarray]],
        windows: Windows,
        spec: ForecastSpec,
        labelled: np.ndarray,
        request: FitRequest[ForecastSection],
    ) -> IntervalCalibration | None:
        """The band's conformal calibration per horizon step and channel (``horizon_block``
        steps pooled) on each member's own validation lots, or ``None``.

        Each lot weighs 1 however many overlapping windows it has
        (:mod:`mfgtx.calibration.conformal`); only windows whose horizon was recorded
        count. A forecaster calibrates the band it has (``cqr``, or ``conformal`` around the
        point), so it needs two or more quantiles whose outermost pair spans ``coverage``.

        Raises:
            ValueError: no band, or a coverage the band's columns would misname.
        """
        settings = request.intervals
        assert settings is not None  # checked by the caller
        if settings.bins not in (None, 1):
            raise ValueError(
                "calibration.bins: a forecaster's margins are per horizon step and channel "
                "(calibration.horizon_block); bins of the prediction are for regressors"
            )
        levels = tuple(members[0].config.quantiles or ())
        method = settings.resolve(len(levels) >= 2)
        y_all = target_values(windows)  # (N, H, K)
        lower, upper = settings.bound(tuple(spec.targets), y_all)
        if method is None:
            return None
        if len(levels) < 2:
            raise ValueError(
                "calibration.intervals: a forecaster calibrates its band; give "
                "forecast.quantiles (e.g. [0.1, 0.5, 0.9]) or calibration.intervals: off"
            )
        span, coverage = max(levels) - min(levels), settings.coverage_for(levels)
        if abs(span - coverage) > 1e-9:
            raise ValueError(
                f"calibration.coverage {coverage} but the band's outer quantiles "
                f"q{round(min(levels) * 100):02d}/q{round(max(levels) * 100):02d} span "
                f"{span:.2f}: set coverage to {span:.2f} or change forecast.quantiles"
            )
        ys, points, lows, highs, lots = [], [], [], [], []
        for member, (_, val) in zip(members, splits, strict=True):
            val = np.intersect1d(val, labelled)  # the whole horizon recorded
            point, band = ForecastPredictor(self, Trained(member), spec).arrays(windows, val)
            assert band is not None  # two or more quantiles
            ys.append(y_all[val])
            points.append(point)
            lows.append(band[..., int(np.argmin(levels))])
            highs.append(band[..., int(np.argmax(levels))])
            lots.append(windows.lot[val])
        if not sum(len(g) for g in lots):
            raise ValueError(
                "calibration.intervals: no validation window has its whole horizon recorded; "
                "use a larger split.val_size or a shorter forecast.horizon"
            )
        y, g = np.concatenate(ys), np.concatenate(lots)
        block = settings.horizon_block
        if block is None:  # thin data: steps share a margin (mfgtx.calibration.conformal)
            block = horizon_block_for(y.shape[1], len(np.unique(g)))
            log.info("calibration.horizon_block: %d step(s) per margin", block)
        if method == "cqr":
            return fit_cqr(
                y, np.concatenate(lows), np.concatenate(highs), g, coverage,
                lower=lower, upper=upper, horizon_block=block,
            )  # fmt: skip
        return fit_split(
            y, np.concatenate(points), g, coverage, lower=lower, upper=upper, horizon_block=block
        )

    def _pick(
        self, model: CausalForecaster, spec: ForecastSpec, windows: Windows, val: np.ndarray
    ) -> tuple[CausalForecaster, dict[str, Any]]:
        """The trained ``model`` or its frozen ridge map alone, whichever forecasts the
        validation windows ``val`` better (mean squared error in the training scaler's units,
        every target and step; a tie goes to the ridge map, the simpler model)."""
        ridge = ridge_map_alone(model)
        errors = {
            name: _scaled_mse(ForecastPredictor(self, Trained(m), spec), windows, val)
            for name, m in (("transformer", model), ("ridge map", ridge))
        }
        if not np.isfinite(list(errors.values())).all():
            log.info("no validation window with its whole horizon: shipping the Transformer")
            return model, {**errors, "linear": False}
        linear = errors["ridge map"] <= errors["transformer"]
        log.info(
            "validation MSE (scaled): Transformer %.4g, its frozen ridge map alone %.4g: "
            "shipping the %s",
            errors["transformer"],
            errors["ridge map"],
            "ridge map alone" if linear else "Transformer",
        )
        return (ridge if linear else model), {**errors, "linear": bool(linear)}

    def judge(
        self,
        predictor: ForecastPredictor,
        windows: Windows,
        train_idx: np.ndarray,
        test_idx: np.ndarray,
        *,
        scaler: SensorScaler,
        model_name: str = "CausalForecaster",
        baselines: tuple[Any, ...] | None = None,
        splits: Splits | None = None,
    ) -> tuple[Any, dict[str, float]]:
        """The report on the test windows beside the forecast baselines (``baselines``:
        already fitted on ``train_idx``; default: fitted here), and the band's coverage on
        the test lots beside the ridge baseline's conformal interval (``splits``:
        :meth:`WindowKind.judge`), in the report and as the extra figures
        (:func:`~mfgtx.kinds._intervals.interval_figures`: ``interval_coverage`` counted by
        lot, ``interval_nominal`` ...).

        Raises:
            ValueError: no test window has its whole horizon recorded.
        """
        if len(test_idx) == 0:
            raise ValueError(
                "split: no test window has its whole horizon recorded; use a larger "
                "split.test_size or a shorter forecast.horizon"
            )
        raw_point, raw_band = predictor.raw_arrays(windows, test_idx)
        pred, band = predictor._calibrated(raw_point, raw_band)
        if baselines is None:
            baselines = fit_baselines(windows, train_idx, "forecast", scaler=scaler)
        report = compare("forecast", windows, test_idx, pred, baselines, model_name=model_name)
        if band is None:
            return report, {}
        levels, cal = predictor.model.config.quantiles, predictor.intervals
        j_low, j_high = int(np.argmin(levels)), int(np.argmax(levels))  # the band drawn
        span = float(max(levels) - min(levels))
        raw = None
        if cal is not None and raw_band is not None:  # what the calibration changed
            raw = (raw_band[..., j_low], raw_band[..., j_high], span)
        found = judged_intervals(
            name=model_name, task="forecast", windows=windows, test_idx=test_idx,
            y=target_values(windows)[test_idx], low=band[..., j_low], high=band[..., j_high],
            nominal=cal.coverage if cal is not None else span,
            method=cal.method if cal is not None else "quantiles",
            calibration_lots=cal.lots if cal is not None else None, splits=splits,
            scaler=scaler, lower=tuple(cal.lower) if cal is not None and cal.lower else None,
            uncalibrated=raw,
        )  # fmt: skip
        return replace(report, intervals=found), interval_figures(found)

    def spec_from_bundle(self, bundle: Bundle) -> ForecastSpec:
        if bundle.input_spec is not None:
            try:
                return ForecastSpec.from_dict(with_recorded_read(bundle))
            except (KeyError, TypeError, ValueError) as e:
                raise BundleError(f"{bundle.path}: bad input_spec: {e}", file=bundle.path) from e
        job = self.old_layout(bundle, "window", "targets", "horizon")  # format 2
        schema = dict(bundle.manifest.get("data_schema") or {})
        if not schema:
            raise BundleError(f"{bundle.path}: no data_schema; retrain it", file=bundle.path)
        window = int(job["window"])
        return ForecastSpec(
            columns=columns_from(schema),
            windowing=Windowing(window=window, stride=int(job.get("stride") or window)),
            horizon=int(job["horizon"]),
            targets=tuple(job["targets"]),
            covariates=tuple(job.get("covariates") or ()),
            time_kind=job.get("time_kind"),
            scaler=bundle.scaler,
        )

    def predictor(self, bundle: Bundle) -> ForecastPredictor:
        return ForecastPredictor(self, bundle, self.spec_from_bundle(bundle))

    def check_windows(self, job: JobSettings, spec: ForecastSpec, windows: Windows) -> None:
        if tuple(windows.targets) != tuple(spec.targets) or windows.horizon != spec.horizon:
            raise ConfigError(
                f"{job.source_file}: forecast: the bundle forecasts {list(spec.targets)} "
                f"{spec.horizon} rows ahead; the job asks for {list(windows.targets)} "
                f"{windows.horizon} rows ahead"
            )

    def judged_windows(
        self, windows: Windows, train: np.ndarray, test: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Only windows whose whole horizon was recorded."""
        labelled = windows.labelled()
        return np.intersect1d(train, labelled), np.intersect1d(test, labelled)

    def check_external(self, job: JobSettings) -> None:
        if job.evaluate is not None and job.evaluate.truth is not None:
            raise ConfigError(
                f"{job.source_file}: evaluate.truth: a forecast's truth is the series itself; "
                "leave truth out and point evaluate.source at the later rows"
            )

    def onnx_signature(self, predictor: Any) -> tuple[tuple[str, ...], tuple[str, ...], Any]:
        c = graph_config(predictor.model)
        q = c.head == "direct" and bool(c.quantiles)
        inputs = ("past", "observed") + (("covariates",) if c.n_past_covariates else ())
        outputs = ("forecast", "quantiles") if q else ("forecast",)
        return inputs, outputs, Forecast(predictor.model, q)

    def onnx_inputs(
        self, predictor: Any, data: Any, idx: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        idx = np.arange(len(data)) if idx is None else np.asarray(idx)
        b = predictor._inputs(data, idx)  # the forecast predictor's own split of the sensors
        out = {"past": b["past"].numpy(), "observed": b["observed"].numpy().astype(bool)}
        if b["covariates"] is not None:
            out["covariates"] = b["covariates"].numpy()
        return {k: v.astype(np.float32) if v.dtype != bool else v for k, v in out.items()}

    def onnx_example(self, predictor: Any, names: tuple[str, ...]) -> dict[str, Any]:
        c = graph_config(predictor.model)
        shape = (2, c.context_length, c.n_channels)
        x, mask, g = masked_example(shape)
        out = {"past": x, "observed": mask}
        if "covariates" in names:
            out["covariates"] = torch.randn(shape[0], shape[1], c.n_past_covariates, generator=g)
        return out


FORECAST = register_kind(ForecastKind())
