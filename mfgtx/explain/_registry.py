"""Per-model-class functions of mfgtx.explain, and the pieces the model modules share."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn


class Registry:
    """Functions keyed by model class; :meth:`call` runs the one for ``type(model)`` (or a
    base class) with the model in eval mode, and restores its mode afterwards."""

    def __init__(self, what: str) -> None:
        self.what, self._fns = what, {}

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


def observed_of(x: Tensor, mask: Tensor | None) -> Tensor:
    """``(B, T, C)`` bool: observed values (``mask`` if given) that are not NaN."""
    return ~torch.isnan(x) if mask is None else mask.bool() & ~torch.isnan(x)


def unobserve_spans(seen: Tensor, keep: Tensor, spans: Tensor) -> Tensor:
    """A copy of ``seen (B, T, C)`` with the steps of every token not kept marked missing.

    ``keep (B, M)`` says which tokens stay; ``spans (M, 2)`` holds each token's steps.
    """
    seen = seen.clone()
    for m, (start, stop) in enumerate(spans.tolist()):
        seen[~keep[:, m], start:stop, :] = False
    return seen
