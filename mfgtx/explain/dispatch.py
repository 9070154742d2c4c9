"""Which explainer serves which model: mfgtx's own models built in, others registered.

:func:`attention_maps` and :func:`deletion_test` find the function for ``type(model)`` (or a
base class): mfgtx's SensorEncoder, CausalForecaster, DefectViT and their ensembles are listed
here; a program adds its own model classes with :func:`register_explainer` and
:func:`register_deleter`. Nothing registers itself when a module is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from mfgtx.explain import ensemble, forecast, sensor, vit
from mfgtx.explain.deletion import DeletionResult
from mfgtx.explain.maps import AttentionMaps
from mfgtx.models import (
    CausalForecaster,
    DefectViT,
    ForecasterEnsemble,
    SensorEncoder,
    SensorEncoderEnsemble,
)

__all__ = ["attention_maps", "deletion_test", "register_deleter", "register_explainer"]


class Registry:
    """Functions keyed by model class; :meth:`call` runs the one for ``type(model)`` (or a
    base class) with the model in eval mode, and restores its mode afterwards."""

    def __init__(self, what: str, builtin: dict[type, Callable]) -> None:
        self.what, self._fns = what, dict(builtin)

    def register(self, model_class: type) -> Callable[[Callable], Callable]:
        def wrap(fn: Callable) -> Callable:
            self._fns[model_class] = fn
            return fn

        return wrap

    def call(self, model: nn.Module, *args: Any, **kwargs: Any) -> Any:
        for cls in type(model).__mro__:
            if cls in self._fns:
                was_training = model.training
                model.eval()
                try:
                    return self._fns[cls](model, *args, **kwargs)
                finally:
                    model.train(was_training)
        known = sorted(c.__name__ for c in self._fns)
        raise TypeError(f"no {self.what} for {type(model).__name__}; supported: {known}")


_EXPLAINERS = Registry(
    "attention maps",
    {
        SensorEncoder: sensor.maps,
        CausalForecaster: forecast.maps,
        DefectViT: vit.maps,
        SensorEncoderEnsemble: ensemble.maps,
        ForecasterEnsemble: ensemble.maps,
    },
)
_DELETERS = Registry(
    "deletion test",
    {
        SensorEncoder: sensor.deletion,
        CausalForecaster: forecast.deletion,
        DefectViT: vit.deletion,
        SensorEncoderEnsemble: ensemble.deletion,
        ForecasterEnsemble: ensemble.deletion,
    },
)

#: Register ``fn(model, inputs, **kwargs) -> AttentionMaps`` for a model class.
register_explainer = _EXPLAINERS.register


@torch.no_grad()
def attention_maps(model: torch.nn.Module, inputs: Tensor, **kwargs: Any) -> AttentionMaps:
    """Attention maps and predictions of a trained mfgtx model, in one pass.

    The model is neither rebuilt nor changed: the same weights run once on the explicit
    attention path (the fused kernel returns no weights), in eval mode, and the predictions
    in the result equal ``model(inputs)`` to float rounding. Ordinary inference keeps the
    fused kernel.

    Args:
        model: a :class:`~mfgtx.models.SensorEncoder`, :class:`~mfgtx.models.DefectViT` or
            :class:`~mfgtx.models.CausalForecaster` (any registered model class).
        inputs: what the model's ``forward`` takes first (windows or images).
        **kwargs: passed on, e.g. ``mask=`` (observed values) for the sensor encoder.

    Returns:
        :class:`AttentionMaps` (``kind == "non-causal diagnostic"``).
    """
    return _EXPLAINERS.call(model, inputs, **kwargs)


#: Register ``fn(model, inputs, importance, valid, **kwargs) -> DeletionResult``.
register_deleter = _DELETERS.register


@torch.no_grad()
def deletion_test(
    model: torch.nn.Module,
    inputs: Tensor,
    maps: Any,
    *,
    which: str = "rollout",
    layer: int = -1,
    **kwargs: Any,
) -> DeletionResult:
    """Deletion test of a model's attention map (see :func:`run_deletion`).

    Args:
        model: the model the maps came from.
        inputs: the same inputs.
        maps: its :class:`~mfgtx.explain.AttentionMaps`.
        which: rank tokens by the ``"rollout"`` or by one ``"layer"``'s head-mean weights.
        layer: that layer (default: the last).
        **kwargs: ``fraction``, ``n_random``, ``seed``, and model options (``mask=`` for
            the sensor encoder, ``target=`` output or class to watch).
    """
    if which == "rollout":
        importance = maps.rollout
    elif which == "layer":
        importance = maps.head_mean(layer)
    else:
        raise ValueError(f"which must be 'rollout' or 'layer', found {which!r}")
    return _DELETERS.call(model, inputs, importance, maps.key_mask, **kwargs)
