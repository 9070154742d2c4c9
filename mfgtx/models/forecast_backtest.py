"""Rolling-origin backtesting of a forecaster on :mod:`mfgtx.split`, leakage rules included.

Shape legend: ``N`` windows, ``T`` window length, ``H`` horizon, ``K`` forecast columns,
``Cp`` other sensors (past-observed covariates).

Every fold of a :class:`~mfgtx.split.LotTimeSplit` gets a fresh model, a scaler fitted on
that fold's training windows only, and an :func:`~mfgtx.split.audit` that must pass (a
:class:`~mfgtx.split.LeakageError` otherwise). The model is trained with
:func:`mfgtx.train.fit` and scored on every test window of the fold, the last partial batch
included, in the scaler's units; baselines are fitted on the same training windows and scored
on the same test windows.

The forecast columns must be sensors: their past is the model's input ``x``; the other
sensors become past-observed covariates when the model was built for them
(``n_past_covariates``), so their horizon values are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn
from torch.utils.data import Dataset

from mfgtx.data import SensorScaler, Windows, evaluation_batches
from mfgtx.metrics import forecast_metrics
from mfgtx.split import AuditReport, LotTimeSplit, audit
from mfgtx.train import TrainConfig, fit

__all__ = ["FoldScore", "ForecastWindows", "interval_coverage", "rolling_backtest"]


def interval_coverage(
    y_true: np.ndarray | torch.Tensor, bands: np.ndarray | torch.Tensor, quantiles: Sequence[float]
) -> dict[str, float]:
    """How often ``y_true`` falls between the lowest and highest predicted quantile.

    Args:
        y_true: ``(N, H, C)`` actual values (NaN entries are left out).
        bands: ``(N, H, C, Q)`` predicted quantiles at ``quantiles`` (ascending).
        quantiles: the ``Q`` levels; the interval is ``[first, last]``.

    Returns:
        ``coverage`` (share inside), ``nominal`` (``last - first`` level), ``width`` (mean
        interval width) and ``n`` (values counted).

    Example:
        >>> y = np.array([[[0.0], [5.0]]])
        >>> q = np.array([[[[-1.0, 1.0]], [[-1.0, 1.0]]]])
        >>> interval_coverage(y, q, (0.1, 0.9))["coverage"]
        0.5
    """
    y, q = np.asarray(y_true, dtype=np.float64), np.asarray(bands, dtype=np.float64)
    if q.ndim != 4 or q.shape[:3] != y.shape or q.shape[3] != len(quantiles) or len(quantiles) < 2:
        raise ValueError(
            f"bands must have shape y_true + (Q={len(quantiles)},) with Q >= 2, found "
            f"{q.shape} for y_true {y.shape}"
        )
    seen = ~np.isnan(y)
    inside = (y >= q[..., 0]) & (y <= q[..., -1])
    return {
        "coverage": float(inside[seen].mean()),
        "nominal": float(quantiles[-1] - quantiles[0]),
        "width": float((q[..., -1] - q[..., 0])[seen].mean()),
        "n": float(seen.sum()),
    }


class ForecastWindows(Dataset):
    """Items ``{"x": (T, K), "observed": (T, K), "y": (H, K)[, "past_covariates": (T, Cp)]}``.

    All scaled with the training ``scaler``; ``y`` holds the forecast columns' horizon
    (NaN where missing), ``past_covariates`` the other sensors inside the window only.

    Args:
        windows: forecast windows (``horizon > 0``) whose forecast columns are sensors.
        indices: which windows.
        scaler: fitted on the training windows.
        covariates: also return the other sensors as ``past_covariates``.
    """

    def __init__(
        self,
        windows: Windows,
        indices: Sequence[int] | np.ndarray,
        scaler: SensorScaler,
        *,
        covariates: bool = False,
    ) -> None:
        if windows.horizon == 0 or windows.y is None:
            raise ValueError("forecast windows need horizon > 0 and targets (windows.y)")
        missing = [c for c in windows.targets if c not in windows.sensors]
        if missing:
            raise ValueError(
                f"forecast columns {missing} are not sensors (sensors: {list(windows.sensors)});"
                " the forecaster reads the past of what it forecasts"
            )
        self.windows, self.scaler, self.covariates = windows, scaler, covariates
        self.indices = np.asarray(indices, dtype=np.int64)
        self.cols = [windows.sensors.index(c) for c in windows.targets]
        self.others = [j for j in range(len(windows.sensors)) if j not in self.cols]
        center, scale = np.asarray(scaler.center), np.asarray(scaler.scale)
        self.center, self.scale = center[self.cols], scale[self.cols]

    def __len__(self) -> int:
        return int(self.indices.shape[0])

    def scaled_targets(self, idx: np.ndarray) -> np.ndarray:
        """``(n, H, K)`` horizons of windows ``idx`` in the scaler's units."""
        y = self.windows.y[idx].astype(np.float64)  # type: ignore[index]
        return ((y - self.center) / self.scale).astype(np.float32)

    def batch(self, idx: np.ndarray) -> dict[str, torch.Tensor]:
        """The items of windows ``idx`` (positions into the windows), stacked."""
        x, observed = self.windows.features(idx, self.scaler)  # (n, T, C)
        out = {
            "x": torch.from_numpy(x[:, :, self.cols]),
            "observed": torch.from_numpy(observed[:, :, self.cols]),
            "y": torch.from_numpy(self.scaled_targets(idx)),
        }
        if self.covariates:
            out["past_covariates"] = torch.from_numpy(x[:, :, self.others])
        return out

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {k: v[0] for k, v in self.batch(self.indices[i : i + 1]).items()}


@dataclass(frozen=True)
class FoldScore:
    """One fold of :func:`rolling_backtest`.

    Attributes:
        fold: fold number (0 = earliest test block).
        n_train, n_val, n_test: windows used; ``n_test`` were all scored.
        metrics: the model's ``mse`` and ``mae`` in the scaler's units; with quantiles also
            ``coverage`` of the outermost interval and its mean ``interval_width``.
        baseline_metrics: the same for every baseline, by name.
        audit: the fold's passed leakage audit (scaler included).
        best_epoch: the epoch whose weights were kept.
    """

    fold: int
    n_train: int
    n_val: int
    n_test: int
    metrics: dict[str, float]
    baseline_metrics: dict[str, dict[str, float]]
    audit: AuditReport
    best_epoch: int


def rolling_backtest(
    windows: Windows,
    splitter: LotTimeSplit,
    make_model: Callable[[], nn.Module],
    train_config: TrainConfig,
    *,
    baselines: Sequence[Callable[[], Any]] = (),
    scaler_method: str = "standard",
    batch_size: int = 256,
) -> list[FoldScore]:
    """Train and score a fresh forecaster on every fold of ``splitter``.

    Args:
        windows: forecast windows over lots (see :class:`ForecastWindows`).
        splitter: a :class:`~mfgtx.split.LotTimeSplit` with ``val_size > 0`` (early stopping
            needs a validation set that is not the test set).
        make_model: builds an untrained model with ``loss``/``predict`` (for example
            ``lambda: CausalForecaster(cfg)``); past covariates are given when its
            ``config.n_past_covariates`` is not 0.
        train_config: how each fold trains.
        baselines: factories of :mod:`mfgtx.baselines` forecasts (``lambda: Naive()``).
        scaler_method: ``"standard"`` or ``"robust"``.
        batch_size: scoring batch size (the last partial batch is scored too).

    Returns:
        One :class:`FoldScore` per fold, earliest first.

    Raises:
        LeakageError: a fold fails its audit. ValueError: no validation set, bad windows.
    """
    out = []
    for sets in splitter.split_sets(windows):
        if sets.val.size == 0:
            raise ValueError(
                f"fold {sets.fold} has no validation windows; build the splitter with val_size > 0"
            )
        scaler = SensorScaler.fit(windows, sets.train, scaler_method)  # type: ignore[arg-type]
        report = audit(windows, sets, scaler=scaler)  # raises LeakageError on any failed check
        model = make_model()
        covariates = bool(getattr(getattr(model, "config", None), "n_past_covariates", 0))

        def items(idx: np.ndarray, cov: bool = covariates, sc: SensorScaler = scaler) -> Any:
            return ForecastWindows(windows, idx, sc, covariates=cov)

        result = fit(model, items(sets.train), items(sets.val), train_config)
        test = items(sets.test)
        levels = tuple(getattr(getattr(model, "config", None), "quantiles", ()))
        preds, bands = [], []
        model.eval()
        with torch.no_grad():
            for idx in evaluation_batches(sets.test, batch_size):
                b = test.batch(idx)
                preds.append(model.predict(b).float().numpy())  # type: ignore[operator]
                if len(levels) >= 2:
                    q = model.predict_quantiles(  # type: ignore[operator]
                        b["x"], b["observed"], b.get("past_covariates")
                    )
                    bands.append(q.float().numpy())
        pred = np.concatenate(preds)
        y = test.scaled_targets(sets.test)
        if pred.shape != y.shape:
            raise ValueError(f"fold {sets.fold}: {pred.shape} predictions for {y.shape} targets")
        metrics = forecast_metrics(y, pred)
        if bands:
            cov = interval_coverage(y, np.concatenate(bands), levels)
            metrics |= {"coverage": cov["coverage"], "interval_width": cov["width"]}
        scores = {}
        for factory in baselines:
            b = factory().fit(windows, sets.train, scaler)
            scaled = (b.predict(windows, sets.test) - test.center) / test.scale
            scores[b.name] = forecast_metrics(y, scaled)
        out.append(
            FoldScore(
                fold=sets.fold,
                n_train=int(sets.train.size),
                n_val=int(sets.val.size),
                n_test=len(pred),
                metrics=metrics,
                baseline_metrics=scores,
                audit=report,
                best_epoch=result.best_epoch,
            )
        )
    return out
