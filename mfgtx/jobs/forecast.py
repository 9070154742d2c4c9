"""``train forecast``: a :class:`~mfgtx.models.CausalForecaster` from a job file.

Data -> forecast windows (``windows.window`` rows of context, ``forecast.horizon`` rows of
the forecast sensors as the label) -> lot- and time-safe split, training-only scaler and a
passing audit -> fit -> compared with the forecast baselines (Naive, SeasonalNaive when a
period is known, LinearRidge, TrainMeanForecast) on the same test windows, with the interval
coverage of the quantile band -> bundle.

Only test windows whose whole horizon was recorded are scored (the metrics take no missing
truth); training leaves missing horizon values out of the loss by itself.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from mfgtx.jobs.config import ConfigError, JobConfig
from mfgtx.jobs.prepare import load_forecast_windows, split_windows

if TYPE_CHECKING:
    from mfgtx.jobs.train import OnStep, TrainOutcome

__all__ = ["forecast_arrays", "train_forecast"]

log = logging.getLogger(__name__)


def forecast_arrays(
    model: torch.nn.Module,
    scaler: Any,
    windows: Any,
    idx: np.ndarray,
    targets: list[str] | tuple[str, ...],
    batch_size: int = 256,
) -> tuple[np.ndarray, np.ndarray | None]:
    """Forecasts of windows ``idx`` in the data's units: the point forecast ``(n, H, K)``
    and, for a model with two or more quantiles, the band ``(n, H, K, Q)`` (else ``None``).

    The forecast sensors ``targets`` are the model's series; every other sensor of the window
    is given as a past covariate when the model takes them. ``scaler``: the bundle's (``None``
    for a model trained on unscaled values).
    """
    c = model.config
    tcols = [windows.sensors.index(t) for t in targets]
    others = [j for j in range(len(windows.sensors)) if j not in tcols]
    if scaler is None:  # a model trained on unscaled values
        center, scale = np.zeros(len(tcols)), np.ones(len(tcols))
    else:
        center = np.asarray(scaler.center, dtype=np.float64)[tcols]
        scale = np.asarray(scaler.scale, dtype=np.float64)[tcols]
    with_band = len(c.quantiles or ()) >= 2
    points, bands = [], []
    model.eval()
    with torch.no_grad():
        for a in range(0, len(idx), batch_size):
            x, observed = windows.features(idx[a : a + batch_size], scaler)
            past = torch.from_numpy(x[:, :, tcols])
            obs = torch.from_numpy(observed[:, :, tcols])
            cov = torch.from_numpy(x[:, :, others]) if c.n_past_covariates else None
            point, band = model.forecast_with_quantiles(past, obs, cov)
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


def train_forecast(
    config: JobConfig, resume: bool = False, on_step: OnStep | None = None
) -> TrainOutcome:
    """Train, compare and save a forecaster (the ``train forecast`` command)."""
    from mfgtx.artifacts import save_bundle
    from mfgtx.baselines import compare, fit_baselines
    from mfgtx.jobs.train import _fingerprint, outcome, rank, run_key
    from mfgtx.models import CausalForecaster, ForecasterConfig, ForecastWindows, interval_coverage
    from mfgtx.train import fit

    t0 = time.perf_counter()
    config.require("bundle", "forecast")
    fc = config.forecast
    assert fc is not None  # require() raised otherwise
    bundle = Path(str(config.bundle))
    windows, cols, covariates = load_forecast_windows(config)
    prep = split_windows(config, windows)
    sets, scaler = prep.sets, prep.scaler
    targets = tuple(windows.targets)
    try:
        model_config = ForecasterConfig(
            n_channels=len(targets),
            context_length=windows.window,
            horizon=fc.horizon,
            patch_len=fc.patch_len,
            stride=fc.patch_stride,
            d_model=fc.d_model,
            n_heads=fc.n_heads,
            n_layers=fc.n_layers,
            d_ff=fc.d_ff,
            dropout=fc.dropout,
            head=fc.head,
            channel_independent=fc.channel_independent,
            quantiles=fc.quantiles,
            n_past_covariates=len(covariates),
            linear_skip=fc.linear_skip != "off",
        )
    except ValueError as e:  # e.g. a window that is not a whole number of patches
        raise ConfigError(f"{config.source_file}: forecast: {e}") from e
    ckpt = config.train.checkpoint_dir or f"{bundle}.ckpt"
    train_config = config.train.train_config(ckpt, resume=resume)
    has_cov = bool(covariates)

    def dataset(idx: np.ndarray) -> ForecastWindows:
        return ForecastWindows(windows, idx, scaler, covariates=has_cov)

    torch.manual_seed(config.train.seed)
    model = CausalForecaster(model_config)
    if fc.linear_skip == "ridge":  # the linear forecast first; training learns the rest
        items = dataset(sets.train).batch(sets.train)
        whole = torch.isfinite(items["y"]).flatten(1).all(1)  # horizons fully recorded
        if not bool(whole.any()):
            raise ConfigError(
                f"{config.source_file}: forecast.linear_skip: ridge needs training windows "
                "whose whole horizon is recorded; none has it"
            )
        model.fit_linear_skip(items["x"][whole], items["y"][whole], items["observed"][whole])
    fitted = fit(
        model,
        dataset(sets.train),
        dataset(sets.val),
        train_config,
        on_step=on_step,
        run_key=run_key(config, "forecast", *_fingerprint(windows, sets)),
    )
    labelled = windows.labelled()
    test = np.intersect1d(prep.test, labelled)
    counts = {"train": len(sets.train), "val": len(sets.val), "test": len(test)}
    counts["purged"] = len(sets.purged)
    if rank() != 0:
        return outcome("forecast", "forecast", fitted, t0, counts, prep.report.passed)
    if len(test) == 0:
        raise ConfigError(
            f"{config.source_file}: split: no test window has its whole horizon recorded; "
            "use a larger split.test_size or a shorter forecast.horizon"
        )
    pred, band = forecast_arrays(model, scaler, windows, test, targets)
    train_labelled = np.intersect1d(sets.train, labelled)
    baselines = fit_baselines(windows, train_labelled, "forecast", scaler=scaler)
    report = compare("forecast", windows, test, pred, baselines, model_name="CausalForecaster")
    metrics = {key: round(float(v), 6) for key, v in report.rows[0].metrics.items()}
    if band is not None:
        cover = interval_coverage(windows.y[test], band, fc.quantiles)  # type: ignore[index]
        metrics["interval_coverage"] = round(float(cover["coverage"]), 4)
        metrics["interval_nominal"] = round(float(cover["nominal"]), 4)
        log.info(
            "forecast band %.0f%%: covers %.1f%% of test values",
            100 * cover["nominal"],
            100 * cover["coverage"],
        )
    interval = {key: v for key, v in metrics.items() if key.startswith("interval")}
    split = {
        "method": "LotTimeSplit",
        "test_size": config.split.test_size,
        "val_size": config.split.val_size,
        "gap": config.split.gap,
    }
    job = {
        "kind": "forecast",
        "task": "forecast",
        "window": windows.window,
        "stride": windows.stride,
        "time_kind": windows.time_kind,
        "context_length": windows.window,
        "horizon": fc.horizon,
        "targets": list(targets),
        "covariates": list(covariates),
        "config": config.to_dict(),
    }
    path = save_bundle(
        bundle,
        model,
        data_schema=cols,
        scaler=scaler,
        split=split,
        audit=prep.report,
        metrics={**report.to_dict(), "interval": interval},
        train_config=train_config,
        precision=fitted.precision,
        extra={"job": job},
        overwrite=True,
    )
    return outcome(
        "forecast", "forecast", fitted, t0, counts, prep.report.passed,
        path=path, checkpoint_dir=ckpt, report=report, metrics=metrics,
    )  # fmt: skip
