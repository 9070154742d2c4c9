"""Rolling-origin backtesting of a forecaster on :mod:`mfgtx.split`, leakage rules included.

Shape legend: ``N`` windows, ``T`` window length, ``H`` horizon, ``K`` forecast columns,
``Cp`` other sensors (past-observed covariates).

Every fold of a :class:`~mfgtx.split.LotTimeSplit` gets a fresh model, a scaler fitted on
that fold's training windows only, and an :func:`~mfgtx.split.audit` that must pass (a
:class:`~mfgtx.split.LeakageError` otherwise). The model is trained with
:func:`mfgtx.train.fit` and scored on every test window of the fold, the last partial batch
included, in the scaler's units; baselines are fitted on the same training windows and scored
on the same test windows. This is evaluation, above the models: it trains them.

The forecast columns must be sensors: their past is the model's input ``x``; the other
sensors become past-observed covariates when the model was built for them
(``n_past_covariates``), so their horizon values are never read.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np
import torch
from torch import nn

from mfgtx.data import ForecastWindows, SensorScaler, Windows, evaluation_batches
from mfgtx.metrics import forecast_metrics, interval_coverage
from mfgtx.split import AuditReport, LotTimeSplit, audit
from mfgtx.train import Trainable, TrainConfig, fit

__all__ = ["FoldScore", "rolling_backtest"]


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
    scaler_method: Literal["standard", "robust"] = "standard",
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
        scaler = SensorScaler.fit(windows, sets.train, scaler_method)
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
                preds.append(cast(Trainable, model).predict(b).float().numpy())
                if len(levels) >= 2:
                    q = model.predict_quantiles(  # type: ignore[operator]  # quantile models only
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
