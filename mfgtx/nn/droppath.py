"""Stochastic depth: drop a residual update for a random share of the samples in a batch.

Shape legend: ``B`` batch; ``...`` any further dimensions (``(B, T, D)`` in a block).

Huang et al. (2016), "Deep networks with stochastic depth"; the per-sample form of timm's
``DropPath``: in training each sample's update is zeroed with probability ``p`` and a kept
update is scaled by ``1 / (1 - p)``, so the expected output is the deterministic one. In
evaluation, and at ``p = 0``, it is the identity.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["DropPath", "drop_path"]


def drop_path(update: Tensor, p: float, *, training: bool) -> Tensor:
    """Zero the whole ``update (B, ...)`` of each sample with probability ``p``; scale the
    kept ones by ``1 / (1 - p)``. The identity when not ``training`` or at ``p = 0``.

    Example:
        >>> u = torch.ones(1000, 3, 2)
        >>> kept = drop_path(u, 0.25, training=True)[:, 0, 0]
        >>> sorted(set(kept.tolist()))  # a sample is dropped, or kept and scaled, as a whole
        [0.0, 1.3333333730697632]
        >>> drop_path(u, 0.25, training=False) is u
        True
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"drop_path probability must be in [0, 1), found {p!r}")
    if p == 0.0 or not training:
        return update
    shape = (update.shape[0],) + (1,) * (update.dim() - 1)  # (B, 1, ..., 1)
    keep = torch.rand(shape, device=update.device) >= p
    return update * keep.to(update.dtype) / (1.0 - p)


class DropPath(nn.Module):
    """:func:`drop_path` as a module: active in training mode, the identity in eval mode.

    No parameters or buffers, so adding it to a module leaves its state dict unchanged.

    Args:
        p: probability of dropping a sample's update, in ``[0, 1)``.

    Example:
        >>> DropPath(0.1).eval()(torch.ones(2, 3)).tolist()
        [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]
    """

    def __init__(self, p: float = 0.0) -> None:
        super().__init__()
        if not isinstance(p, float | int) or isinstance(p, bool) or not 0.0 <= p < 1.0:
            raise ValueError(f"drop_path must be in [0, 1), found {p!r}")
        self.p = float(p)

    @property
    def active(self) -> bool:
        """Whether this call would drop anything (training mode and ``p > 0``)."""
        return self.training and self.p > 0.0

    def forward(self, update: Tensor) -> Tensor:
        return drop_path(update, self.p, training=self.training)

    def extra_repr(self) -> str:
        return f"p={self.p}"
