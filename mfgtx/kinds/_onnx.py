"""Each kind's ONNX graph: its model wrapped to take named tensors and return a tuple.

Shape legend: ``B`` batch, ``T`` window rows, ``C`` sensors, ``K`` outputs, ``Q``
quantiles, ``L`` context, ``H`` horizon, ``S`` image side.

:mod:`mfgtx.serving.onnx` exports and runs the graph; what the graph takes and gives, and
the tensors a predictor feeds it, belong to the kind (:meth:`mfgtx.kinds.Kind.onnx_signature`,
:meth:`~mfgtx.kinds.Kind.onnx_inputs`, :meth:`~mfgtx.kinds.Kind.onnx_example`).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from mfgtx.models import (
    CausalForecaster,
    ForecasterEnsemble,
    SensorEncoder,
    SensorEncoderEnsemble,
)

__all__ = ["Forecast", "Sensor", "Vit", "masked_example", "member_config"]


def member_config(model: nn.Module) -> Any:
    """The config of a model, or of an ensemble's members."""
    config = model.config
    return getattr(config, "member", config)


class Sensor(nn.Module):
    """A sensor encoder: ``(x, mask) -> prediction[, quantiles]``."""

    def __init__(self, model: SensorEncoder | SensorEncoderEnsemble, quantiles: bool) -> None:
        super().__init__()
        self.model, self.quantiles = model, quantiles

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, ...]:
        point = self.model(x, mask)  # (B, K)
        if not self.quantiles:
            return (point,)
        return point, self.model.forward_quantiles(x, mask)  # (B, K, Q)


class Forecast(nn.Module):
    """A forecaster: ``(past, observed[, covariates]) -> forecast[, quantiles]``."""

    def __init__(self, model: CausalForecaster | ForecasterEnsemble, quantiles: bool) -> None:
        super().__init__()
        self.model, self.quantiles = model, quantiles

    def forward(self, past: Tensor, observed: Tensor, *cov: Tensor) -> tuple[Tensor, ...]:
        covariates = cov[0] if cov else None
        if not self.quantiles:
            return (self.model(past, observed, covariates),)  # (B, H, K)
        point, band = self.model.forecast_with_quantiles(past, observed, covariates)
        assert band is not None  # the graph has quantiles only for a model that gives them
        return point, band  # (B, H, K), (B, H, K, Q)


class Vit(nn.Module):
    """A defect ViT: ``images -> logits``."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, images: Tensor) -> tuple[Tensor, ...]:
        return (self.model(images),)  # (B, K)


def masked_example(shape: tuple[int, int, int]) -> tuple[Tensor, Tensor, torch.Generator]:
    """Two windows ``(2, T, C)``: the first with sensor 0 missing throughout and the others
    only at the last row (so the masked attention path is traced), the second complete;
    and the generator that drew them (for further inputs)."""
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(shape, dtype=torch.bool)
    mask[0, :-1] = False
    mask[0, :, 0] = False
    x = torch.randn(shape, generator=g).masked_fill(~mask, 0.0)
    return x, mask, g
