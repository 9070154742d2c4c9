"""An exponential moving average of a model's weights, for validation and the weights kept.

The weights at the end of any one step carry that step's noise; their moving average over the
last few hundred steps is a smoother model, often a more accurate one where the training set
is small (Polyak averaging; timm's ``ModelEmaV3``, used in its ViT recipes). With
``TrainConfig(ema_decay=0.999)``, :func:`mfgtx.train.fit` keeps such an average beside the
model, validates it instead of the raw weights, and restores the best epoch's average.

After optimizer step ``n`` (counted from 1 for the whole run) every floating-point parameter
``a`` of the average moves towards the model's ``w``:

    a = d * a + (1 - d) * w,    d = min(decay, (1 + n) / (10 + n))

The warm-up of ``d`` (timm's) keeps the first steps from being dominated by the initial
weights. Buffers (batch-norm statistics) are copied, not averaged.
"""

from __future__ import annotations

import copy

import torch
from torch import Tensor, nn

__all__ = ["WeightAverage"]


class WeightAverage:
    """The moving average of ``model``'s weights (a copy of the model, never trained).

    Args:
        model: the model being trained.
        decay: the long-run decay ``d`` in ``(0, 1)``.

    Example:
        >>> model = nn.Linear(2, 1)
        >>> avg = WeightAverage(model, decay=0.5)
        >>> with torch.no_grad():
        ...     _ = model.weight.add_(1.0)
        >>> before = avg.model.weight.clone()
        >>> avg.update(model, step=1)  # d = min(0.5, 2 / 11)
        >>> bool(torch.allclose(avg.model.weight, before + (1 - 2 / 11)))
        True
    """

    def __init__(self, model: nn.Module, decay: float) -> None:
        if not 0.0 < decay < 1.0:
            raise ValueError(f"decay must be in (0, 1), found {decay!r}")
        self.decay = decay
        self.model = copy.deepcopy(model).eval().requires_grad_(False)
        self._pairs = self._float_pairs(model)

    def _float_pairs(self, model: nn.Module) -> tuple[list[Tensor], list[Tensor]]:
        ours = dict(self.model.named_parameters())
        pairs = [(ours[k], p) for k, p in model.named_parameters() if p.is_floating_point()]
        return [a for a, _ in pairs], [p for _, p in pairs]

    @torch.no_grad()
    def update(self, model: nn.Module, step: int) -> None:
        """Move the average towards ``model`` after optimizer step ``step`` (from 1)."""
        d = min(self.decay, (1.0 + step) / (10.0 + step))
        averaged, current = self._pairs
        torch._foreach_lerp_(averaged, [p.detach() for p in current], 1.0 - d)
        ours = dict(self.model.named_buffers())
        for k, b in model.named_buffers():
            ours[k].copy_(b)

    def state_dict(self) -> dict[str, Tensor]:
        return self.model.state_dict()

    def load_state_dict(self, state: dict[str, Tensor]) -> None:
        self.model.load_state_dict(state)
