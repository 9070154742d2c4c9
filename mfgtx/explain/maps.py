"""Attention maps of a trained model, taken in the same call as its predictions.

Shape legend: ``B`` batch, ``L`` layers, ``H`` heads, ``N`` query tokens, ``S`` key tokens
(special tokens such as CLS included), ``M`` input tokens (special tokens left out).

Every :class:`AttentionMaps` carries ``kind = "non-causal diagnostic"`` and
:data:`~mfgtx.explain.NOTICE`: the weights say how each layer mixed values, not why the
output is what it is. Pair each map with :func:`~mfgtx.explain.deletion_test`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from mfgtx.explain.notice import KIND, NOTICE
from mfgtx.explain.rollout import attention_rollout

__all__ = ["AttentionMaps", "summary_query"]


@dataclass(frozen=True, eq=False)
class AttentionMaps:
    """Attention weights of one batch, read as a non-causal diagnostic.

    Attributes:
        model: the model class name.
        axis: what an input token is (``"time step"``, ``"patch"``, ``"sensor"``,
            ``"image patch"``, ``"past patch"``).
        layers: per-layer weights ``(B, H, N, S)``, every token (CLS first when there is one).
        query: the summary query's weights on the input tokens, per layer and head,
            ``(B, L, H, M)``: the CLS token (CLS pooling, ViT), the mean over real tokens
            (mean pooling) or the last position (forecaster).
        rollout: that query's row of the attention rollout over the input tokens ``(B, M)``.
        rollout_matrix: the whole rollout ``(B, N, S)`` (rows sum to 1).
        key_mask: ``(B, M)``, ``True`` = a real input token (missing ones hold no weight).
        prediction: the model's output computed in the same pass.
        spans: for each input token, the ``[start, stop)`` of input steps it covers
            ``(M, 2)`` (sequence models), or ``None``.
        grid: ``(rows, cols)`` of image patches (ViT), or ``None``.
        image_size: ``(height, width)`` of the input images (ViT), or ``None``.
        kind, notice: always :data:`~mfgtx.explain.KIND` and :data:`~mfgtx.explain.NOTICE`.
    """

    model: str
    axis: str
    layers: tuple[Tensor, ...]
    query: Tensor
    rollout: Tensor
    rollout_matrix: Tensor
    key_mask: Tensor
    prediction: Tensor
    spans: Tensor | None = None
    grid: tuple[int, int] | None = None
    image_size: tuple[int, int] | None = None
    kind: str = field(default=KIND, init=False)
    notice: str = field(default=NOTICE, init=False)

    def query_key(self, layer: int, head: int) -> Tensor:
        """The query-by-key matrix ``(B, N, S)`` of one layer and head."""
        return self.layers[layer][:, head]

    def head_mean(self, layer: int = -1) -> Tensor:
        """The summary query's weights averaged over heads ``(B, M)`` for one layer."""
        return self.query[:, layer].mean(1)

    def per_step(self, token_map: Tensor, length: int) -> Tensor:
        """Spread a token map ``(B, M)`` over input steps ``(B, length)`` using ``spans``.

        A step covered by several tokens gets their mean; a step no token covers gets 0.
        """
        if self.spans is None:
            raise ValueError(f"{self.model} maps have no step spans (axis {self.axis!r})")
        out = torch.zeros(token_map.shape[0], length, dtype=token_map.dtype)
        count = torch.zeros(length, dtype=token_map.dtype)
        for m, (start, stop) in enumerate(self.spans.tolist()):
            out[:, start:stop] += token_map[:, m : m + 1]
            count[start:stop] += 1
        return out / count.clamp(min=1)

    def upsampled(self, token_map: Tensor) -> Tensor:
        """An image-patch map ``(B, M)`` as an image ``(B, height, width)`` (ViT only)."""
        if self.grid is None or self.image_size is None:
            raise ValueError(f"{self.model} maps are not image maps (axis {self.axis!r})")
        grid = token_map.reshape(-1, 1, *self.grid)  # (B, 1, rows, cols)
        up = torch.nn.functional.interpolate(grid.float(), size=self.image_size, mode="nearest")
        return up[:, 0]

    def summary(self) -> dict[str, Any]:
        """JSON-friendly description (no tensors): model, axis, shapes, kind and notice."""
        return {
            "model": self.model,
            "axis": self.axis,
            "kind": self.kind,
            "notice": self.notice,
            "layers": len(self.layers),
            "shape": list(self.layers[0].shape) if self.layers else None,
        }


def summary_query(
    layers: tuple[Tensor, ...], key_mask: Tensor, *, first: int, how: str
) -> tuple[Tensor, Tensor, Tensor]:
    """The summary query's rows ``(B, L, H, M)``, its rollout ``(B, M)``, the full rollout.

    ``first`` input tokens start at this column (1 after a CLS token); ``how`` is
    ``"cls"`` (row 0), ``"mean"`` (mean of the real tokens' rows) or ``"last"`` (last row).
    """
    stacked = torch.stack(layers, dim=1)  # (B, L, H, N, S)
    full = attention_rollout(layers, key_mask)  # (B, N, S)
    if how == "cls":
        rows, roll = stacked[:, :, :, 0], full[:, 0]
    elif how == "last":
        rows, roll = stacked[:, :, :, -1], full[:, -1]
    elif how == "mean":
        w = key_mask.to(stacked.dtype)  # (B, N)
        n = w.sum(-1).clamp(min=1.0)  # (B,)
        rows = (stacked * w[:, None, None, :, None]).sum(3) / n[:, None, None, None]
        roll = (full * w[:, :, None]).sum(1) / n[:, None]
    else:
        raise ValueError(f"how must be 'cls', 'mean' or 'last', found {how!r}")
    return rows[..., first:], roll[..., first:], full
