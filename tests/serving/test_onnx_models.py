"""The ONNX export of model configurations the sample bundles do not cover: the graph gives
PyTorch eager's outputs (<= 1e-4) on batches of another size, with missing readings."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from mfgtx.models import (
    CausalForecaster,
    DefectViT,
    ForecasterConfig,
    SensorEncoder,
    SensorEncoderConfig,
    ViTConfig,
)

pytest.importorskip("onnxruntime")
from mfgtx.kinds import kind_named
from mfgtx.serving.onnx import OnnxModel, onnx_bytes, torch_outputs


def _predictor(kind: str, model: torch.nn.Module, **spec: object) -> SimpleNamespace:
    """The parts of a :func:`mfgtx.load` predictor the exporter reads."""
    bundle = SimpleNamespace(manifest={"model": {"class": type(model).__name__}}, input_spec={})
    return SimpleNamespace(
        kind=kind_named(kind),  # the registered kind: it holds the export's signature
        model=model.eval(),
        input_spec=SimpleNamespace(**spec),
        bundle=bundle,
        bundle_id="0" * 64,
        members=1,
    )


def _run(predictor: SimpleNamespace, inputs: dict[str, np.ndarray], tmp_path) -> None:
    path = tmp_path / "m.onnx"
    path.write_bytes(onnx_bytes(predictor))
    got = OnnxModel(path).run(inputs)
    want = torch_outputs(predictor, inputs)
    assert set(got) == set(want)
    for key, value in want.items():
        assert got[key].shape == value.shape
        assert np.abs(got[key] - value).max() <= 1e-4, key


def _gaps(B: int, T: int, C: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(B, T, C)).astype(np.float32)
    mask = rng.random((B, T, C)) > 0.2
    mask[0, : T // 2] = False  # whole steps missing: tokens with no observed value
    return np.where(mask, x, np.nan).astype(np.float32), mask


@pytest.mark.parametrize(
    "extra",
    [
        {"tokens": "sensor"},
        {"patch_len": 4, "channel_independent": True, "pooling": "cls"},
        {"patch_len": 3, "stride": 2, "positional": "rotary", "norm_first": False},
    ],
)
def test_sensor_encoders_export_exactly(extra, tmp_path) -> None:
    cfg = SensorEncoderConfig(n_channels=3, max_len=24, d_model=16, n_heads=2, n_layers=2,
                              d_ff=32, task="regression", quantiles=(0.1, 0.9), **extra)  # fmt: skip
    torch.manual_seed(0)
    predictor = _predictor("sensor", SensorEncoder(cfg), windowing=SimpleNamespace(window=24))
    x, mask = _gaps(5, 24, 3)
    _run(predictor, {"x": x, "mask": mask}, tmp_path)


@pytest.mark.parametrize("head", ["autoregressive", "direct"])
def test_forecasters_export_exactly(head, tmp_path) -> None:
    """The autoregressive head exports its greedy generation (the point forecast), unrolled."""
    cfg = ForecasterConfig(n_channels=2, context_length=32, horizon=8, patch_len=8, stride=4,
                           d_model=16, n_heads=2, n_layers=1, d_ff=32, n_past_covariates=1,
                           quantiles=(0.1, 0.5, 0.9), head=head, dropout=0.2)  # fmt: skip
    torch.manual_seed(0)
    predictor = _predictor("forecast", CausalForecaster(cfg))
    past, observed = _gaps(3, 32, 2)
    past = np.where(observed, past, 0.0).astype(np.float32)
    cov = np.random.default_rng(1).normal(size=(3, 32, 1)).astype(np.float32)
    _run(predictor, {"past": past, "observed": observed, "covariates": cov}, tmp_path)


@pytest.mark.parametrize("extra", [{"stem": "conv", "pooling": "cls"}, {"positional": "learned"}])
def test_defect_vits_export_exactly(extra, tmp_path) -> None:
    cfg = ViTConfig(image_size=32, patch_size=8, num_classes=3, d_model=16, n_heads=2,
                    n_layers=2, d_ff=32, **({"dropout": 0.0, "stem": "linear"} | extra))  # fmt: skip
    torch.manual_seed(0)
    predictor = _predictor("vit", DefectViT(cfg), image_size=32)
    images = np.random.default_rng(0).normal(size=(3, 1, 32, 32)).astype(np.float32)
    _run(predictor, {"images": images}, tmp_path)
