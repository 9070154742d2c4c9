"""Rare defect classes: when and how training is rebalanced.

Shape legend: ``N`` training samples (tiles or patches), ``K`` classes.

Pitting may be 1 % of the tiles of a photo set. A model trained on such data with a plain
loss learns to call every tile good and scores 99 % accuracy. :func:`plan_balancing` looks at
the training labels (never validation or test ones) and, when a class present in them is under
:data:`RARE_SHARE` of the samples, rebalances by one of two means:

* ``"weights"`` (default): inverse-frequency class weights for the loss
  (:func:`~mfgtx.images.class_weights`), so each class weighs the same in total;
* ``"sampler"``: a :class:`torch.utils.data.WeightedRandomSampler` that draws every class
  equally often (each sample with weight ``1 / count of its class``, with replacement).

Never both: that would count the imbalance twice. When no class is rare nothing is changed
(``method == "none"``), and a class absent from the training labels is listed in
:attr:`Balancing.absent`, since no weight can teach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch.utils.data import WeightedRandomSampler

from mfgtx.images.dataset import class_weights

__all__ = ["RARE_SHARE", "Balancing", "plan_balancing"]

#: A class under this share of the training samples is rare and gets rebalanced.
RARE_SHARE = 0.05


@dataclass(frozen=True)
class Balancing:
    """The rebalancing decided for one training set.

    Attributes:
        method: ``"none"`` (no class is rare), ``"weights"`` or ``"sampler"``.
        counts: training samples per class.
        rare: classes present under ``rare_share`` of the samples.
        absent: classes with no training sample.
        class_weights: loss weight per class for ``"weights"`` (mean 1 over the classes
            present), else ``None`` (a plain loss).
        rare_share: the threshold used.
    """

    method: Literal["none", "weights", "sampler"]
    counts: tuple[int, ...]
    rare: tuple[int, ...]
    absent: tuple[int, ...]
    class_weights: tuple[float, ...] | None
    rare_share: float

    def sample_weights(self, labels: Sequence[int] | np.ndarray) -> np.ndarray:
        """``(N,)`` draw weight of each sample: ``1 / count`` of its class (every class drawn
        equally often), for ``labels`` of the training set the plan was made on."""
        y = np.asarray(labels, dtype=np.int64)
        counts = np.asarray(self.counts, dtype=np.float64)
        if y.size and (y.min() < 0 or y.max() >= counts.size or (counts[y] == 0).any()):
            raise ValueError("labels hold a class the plan has no training sample of")
        return 1.0 / counts[y]

    def sampler(
        self,
        labels: Sequence[int] | np.ndarray,
        *,
        num_samples: int | None = None,
        generator: torch.Generator | None = None,
    ) -> WeightedRandomSampler | None:
        """A class-balanced sampler for ``"sampler"`` (``None`` for the other methods).

        Args:
            labels: the training labels, in dataset order.
            num_samples: draws per epoch (default: the number of samples).
            generator: torch random generator (seed it for a repeatable run).
        """
        if self.method != "sampler":
            return None
        w = torch.as_tensor(self.sample_weights(labels), dtype=torch.double)
        n = len(w) if num_samples is None else num_samples
        return WeightedRandomSampler(w.tolist(), n, replacement=True, generator=generator)


def plan_balancing(
    labels: Sequence[int] | np.ndarray,
    num_classes: int,
    *,
    rare_share: float = RARE_SHARE,
    method: Literal["weights", "sampler"] = "weights",
) -> Balancing:
    """Decide whether and how to rebalance training (see the module docstring).

    Args:
        labels: ``(N,)`` training labels ``0..K-1`` (ambiguous tiles already left out).
        num_classes: ``K``.
        rare_share: a present class under this share of ``N`` is rare, in ``(0, 1)``.
        method: ``"weights"`` or ``"sampler"``, used only when a class is rare.

    Example (3 pitting tiles in 100):
        >>> plan = plan_balancing([0] * 97 + [1] * 3, 2)
        >>> plan.method, plan.rare, [round(w, 4) for w in plan.class_weights]
        ('weights', (1,), [0.06, 1.94])
        >>> plan_balancing([0] * 90 + [1] * 10, 2).method  # 10 %: left alone
        'none'
    """
    if method not in ("weights", "sampler"):
        raise ValueError(f"method must be 'weights' or 'sampler', found {method!r}")
    if isinstance(rare_share, bool) or not 0 < rare_share < 1:
        raise ValueError(f"rare_share must lie in (0, 1), found {rare_share!r}")
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 2:
        raise ValueError(f"num_classes must be an integer >= 2, found {num_classes!r}")
    y = np.asarray(labels)
    if y.ndim != 1 or y.size == 0:
        raise ValueError(f"labels must be a non-empty 1-D array, found shape {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= num_classes:
        raise ValueError(
            f"labels must be class numbers 0..{num_classes - 1}, found values from "
            f"{y.min()} to {y.max()} ({y.dtype})"
        )
    counts = np.bincount(y.astype(np.int64), minlength=num_classes)
    share = counts / y.size
    rare = tuple(int(k) for k in np.flatnonzero((counts > 0) & (share < rare_share)))
    absent = tuple(int(k) for k in np.flatnonzero(counts == 0))
    chosen = "none" if not rare else method
    weights = class_weights(y, num_classes) if chosen == "weights" else None
    return Balancing(
        chosen, tuple(int(c) for c in counts), rare, absent, weights, float(rare_share)
    )
