"""Which explainer serves which model: the model class says, or a program registers one.

:func:`attention_maps` and :func:`deletion_test` find the function for a model in two
places: a function registered for ``type(model)`` (or a base class) with
:func:`register_explainer` / :func:`register_deleter`, else the model class's own
``explained_as`` attribute, which names the module of :mod:`mfgtx.explain` that knows its
architecture (``"sensor"``, ``"forecast"``, ``"vit"``, ``"ensemble"``). No list of model
classes is kept here: the models (and so the kinds that register them,
:mod:`mfgtx.kinds`) declare how they are explained. Nothing registers itself when a module
is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch import Tensor, nn

from mfgtx.explain import ensemble, forecast, sensor, vit
from mfgtx.explain.deletion import DeletionResult
from mfgtx.explain.maps import AttentionMaps

__all__ = ["attention_maps", "deletion_test", "register_deleter", "register_explainer"]

#: The modules a model class may name in ``explained_as``: each has ``maps`` and
#: ``deletion`` for the architecture it is named after.
FAMILIES: dict[str, ModuleType] = {
    m.__name__.rsplit(".", 1)[-1]: m for m in (sensor, forecast, vit, ensemble)
}


class Registry:
    """Functions keyed by model class; :meth:`call` runs the one for ``type(model)`` (or a
    base class), else the function ``attr`` of the module the class names in
    ``explained_as``, with the model in eval mode, and restores its mode afterwards."""

    def __init__(self, what: str, attr: str) -> None:
        self.what, self.attr = what, attr
        self._fns: dict[type, Callable] = {}

    def register(self, model_class: type) -> Callable[[Callable], Callable]:
        def wrap(fn: Callable) -> Callable:
            self._fns[model_class] = fn
            return fn

        return wrap

    def find(self, model_class: type) -> Callable:
        """The function for ``model_class``.

        Raises:
            TypeError: none is registered and the class names no module of mfgtx.explain.
        """
        for cls in model_class.__mro__:
            if cls in self._fns:
                return self._fns[cls]
        family = getattr(model_class, "explained_as", None)
        if family in FAMILIES:
            return getattr(FAMILIES[family], self.attr)
        known = sorted(c.__name__ for c in self._fns)
        raise TypeError(
            f"no {self.what} for {model_class.__name__}: its class names none of "
            f"{sorted(FAMILIES)} in `explained_as` (found {family!r}) and none is "
            f"registered for it (registered: {known})"
        )

    def call(self, model: nn.Module, *args: Any, **kwargs: Any) -> Any:
        fn = self.find(type(model))
        was_training = model.training
        model.eval()
        try:
            return fn(model, *args, **kwargs)
        finally:
            model.train(was_training)


_EXPLAINERS = Registry("attention maps", "maps")
_DELETERS = Registry("deletion test", "deletion")

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
