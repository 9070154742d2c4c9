"""The ``toy`` kind: trains a :class:`~tests.kinds.toy.model.ToyModel` on sensor windows.

Output rows: ``lot``, ``window_end``, ``window_start``, ``bundle_id``, ``p_<k>`` per class
and ``decision`` (the most probable class).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import Tensor, nn

from mfgtx.artifacts import Bundle
from mfgtx.baselines import EvaluationReport, compare, fit_baselines
from mfgtx.data import (
    ColumnMap,
    SensorScaler,
    SensorTable,
    WindowDataset,
    Windowing,
    Windows,
)
from mfgtx.kinds import (
    FitRequest,
    Fitted,
    Trained,
    WindowKind,
    WindowPredictor,
    register_kind,
    split_windows,
)
from mfgtx.train import fit
from tests.kinds.toy.model import ToyModel
from tests.kinds.toy.section import ToySection
from tests.kinds.toy.spec import ToySpec


class ToyPredictor(WindowPredictor):
    """The predictor of a toy bundle."""

    input_spec: ToySpec

    def cut(self, table: SensorTable, *, stride: int | None = None) -> Windows:
        return self.windowing.cut(table, stride=stride, on_short="error")

    def probabilities(self, windows: Windows, idx: np.ndarray) -> np.ndarray:
        x, observed = windows.features(idx, self.input_spec.scaler)
        self.model.eval()
        with torch.no_grad():
            logits = self.model(torch.from_numpy(x), torch.from_numpy(observed))
        return torch.softmax(logits.float(), -1).numpy()  # (N, K)

    def rows(self, windows: Windows, idx: np.ndarray, *, batch_size: int = 256) -> pd.DataFrame:
        prob = self.probabilities(windows, np.asarray(idx))
        return pd.DataFrame(
            {
                "lot": windows.lot[idx].astype(str),
                "window_end": windows.end[idx].astype(str),
                "window_start": windows.start[idx].astype(str),
                "bundle_id": self.bundle_id,
                **{f"p_{k}": prob[:, k].astype(np.float64) for k in range(prob.shape[1])},
                "decision": prob.argmax(1).astype(np.int64),
            }
        )

    def explain(self, data: Any, **options: Any) -> Any:
        raise NotImplementedError("the toy model has no attention to explain")


class _Graph(nn.Module):
    """The toy model as its ONNX graph: outputs as a tuple."""

    def __init__(self, model: ToyModel) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor]:
        return (self.model(x, mask),)


class ToyKind(WindowKind[ToySection, ToySpec]):
    """The ``toy`` kind (see the module docstring)."""

    name = "toy"
    model_name = "tests.ToyModel"
    model_class = ToyModel
    section_key = "toy"
    Section = ToySection

    def cut(self, windowing: Windowing, section: ToySection) -> Callable[[SensorTable], Windows]:
        return lambda table: windowing.cut(table)

    def need(self, windowing: Windowing, section: ToySection) -> int:
        return windowing.need

    def fit(
        self,
        windows: Windows,
        columns: ColumnMap,
        windowing: Windowing,
        request: FitRequest[ToySection],
    ) -> Fitted:
        prep = split_windows(windows, request.plan)
        windows, learn = prep.windows, np.asarray(prep.sets.train)
        n_outputs = max(2, int(np.nanmax(windows.y[:, 0])) + 1)
        config = request.section.model_config(n_channels=len(windows.sensors), n_outputs=n_outputs)
        torch.manual_seed(request.train.seed)
        model = ToyModel(config)
        result = fit(
            model,
            WindowDataset(windows, learn, prep.scaler, target="class"),
            WindowDataset(windows, np.asarray(prep.sets.val), prep.scaler, target="class"),
            request.train,
            on_step=request.on_step,
            run_key=request.run_key,
        )
        spec = ToySpec(
            columns=columns,
            windowing=replace(windowing, stride=windows.stride),
            targets=tuple(windows.targets),
            scaler=prep.scaler,
            time_kind=windows.time_kind,
        )
        fitted = Fitted(
            model=model.eval(),
            spec=spec,
            fit=result,
            report=None,
            audit=prep.report,
            split=request.plan.to_dict(),
            counts=prep.counts,
            train_config=request.train,
        )
        if not request.judge:
            return fitted
        predictor = ToyPredictor(self, Trained(model), spec)
        report, _ = self.judge(predictor, windows, learn, prep.test, scaler=prep.scaler)
        return replace(fitted, report=report)

    def judge(
        self,
        predictor: Any,
        windows: Windows,
        train_idx: np.ndarray,
        test_idx: np.ndarray,
        *,
        scaler: SensorScaler,
        model_name: str = "ToyModel",
        splits: Any = None,  # (fit, validation) windows for an interval baseline: none here
    ) -> tuple[EvaluationReport, dict[str, float]]:
        pred = predictor.probabilities(windows, test_idx)[:, 1]
        baselines = fit_baselines(windows, train_idx, "classification", scaler=scaler)
        report = compare(
            "classification", windows, test_idx, pred, baselines, model_name=model_name
        )
        return report, {}

    def spec_from_bundle(self, bundle: Bundle) -> ToySpec:
        return ToySpec.from_dict(bundle.input_spec or {})

    def predictor(self, bundle: Bundle) -> ToyPredictor:
        return ToyPredictor(self, bundle, self.spec_from_bundle(bundle))

    def onnx_signature(self, predictor: Any) -> tuple[tuple[str, ...], tuple[str, ...], Any]:
        return ("x", "mask"), ("logits",), _Graph(predictor.model)

    def onnx_inputs(
        self, predictor: Any, data: Any, idx: np.ndarray | None = None
    ) -> dict[str, np.ndarray]:
        idx = np.arange(len(data)) if idx is None else np.asarray(idx)
        x, observed = data.features(idx, predictor.input_spec.scaler)
        return {"x": x.astype(np.float32), "mask": observed.astype(bool)}

    def onnx_example(self, predictor: Any, names: tuple[str, ...]) -> dict[str, Any]:
        window, c = predictor.input_spec.windowing.window, predictor.model.config.n_channels
        return {"x": torch.zeros(2, window, c), "mask": torch.ones(2, window, c, dtype=torch.bool)}


TOY = register_kind(ToyKind())
