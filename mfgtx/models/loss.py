"""The training loss of a classifier: cross-entropy with class weights and label smoothing.

Shape legend: ``B`` batch, ``K`` classes.

A classifier (:class:`~mfgtx.models.SensorEncoder` with ``task="classification"``,
:class:`~mfgtx.models.DefectViT`) is built from its config and trained with a
:class:`ClassLoss` given beside it (``SensorEncoder(config, loss=ClassLoss(...))``): the
weights and the smoothing shape training, not the model, so they are not part of the model's
config and a bundle does not keep them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["ClassLoss"]


@dataclass(frozen=True)
class ClassLoss:
    """Cross-entropy settings of a classifier's training loss.

    Args:
        class_weights: loss weight per class (rare defects and failures weigh more), or
            ``None`` (every class weighs 1).
        label_smoothing: cross-entropy label smoothing in ``[0, 1)``.

    Example:
        >>> loss = ClassLoss(class_weights=(1.0, 4.0))
        >>> logits, y = torch.tensor([[2.0, 0.0], [0.0, 2.0]]), torch.tensor([1, 1])
        >>> round(float(loss(logits, y)), 4)
        1.1269
        >>> ClassLoss(label_smoothing=1.0)
        Traceback (most recent call last):
        ...
        ValueError: label_smoothing must be in [0, 1), found 1.0
    """

    class_weights: tuple[float, ...] | None = None
    label_smoothing: float = 0.0

    def __post_init__(self) -> None:
        if self.class_weights is not None:
            object.__setattr__(self, "class_weights", tuple(float(w) for w in self.class_weights))
            if not all(w > 0 for w in self.class_weights):
                raise ValueError(f"class_weights must be positive, found {self.class_weights}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), found {self.label_smoothing!r}")

    def __call__(self, logits: Tensor, y: Tensor) -> Tensor:
        """The mean loss of logits ``(B, K)`` against class indices ``(B,)``."""
        weight = None
        if self.class_weights is not None:
            weight = torch.tensor(self.class_weights, dtype=logits.dtype, device=logits.device)
        return F.cross_entropy(logits, y, weight=weight, label_smoothing=self.label_smoothing)
