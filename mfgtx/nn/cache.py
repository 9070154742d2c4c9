"""Key/value caches for incremental decoding.

Shape legend: ``B`` batch, ``H`` heads, ``S`` cached length, ``Dh`` head dim.

A :class:`LayerKV` holds one attention layer's keys and values ``(B, H, S, Dh)`` in a buffer
that doubles when full, so appending one position is amortised O(1) instead of a full copy.
Keys are stored *after* any rotary rotation. :class:`KVCache` holds one :class:`LayerKV` per
layer for self-attention and, for encoder-decoder models, one per layer for cross-attention
(filled once from the encoder memory and then reused).

Caches are for inference: call the model under ``torch.no_grad()`` or
``torch.inference_mode()``.
"""

from __future__ import annotations

from torch import Tensor

__all__ = ["KVCache", "LayerKV"]


class LayerKV:
    """Keys and values of one attention layer.

    Example:
        >>> c = LayerKV()
        >>> k, v = c.append(torch.zeros(1, 2, 3, 4), torch.zeros(1, 2, 3, 4))
        >>> k, v = c.append(torch.ones(1, 2, 1, 4), torch.ones(1, 2, 1, 4))
        >>> c.length, tuple(k.shape)
        (4, (1, 2, 4, 4))
    """

    def __init__(self) -> None:
        self._k: Tensor | None = None
        self._v: Tensor | None = None
        self.length = 0

    def append(self, k: Tensor, v: Tensor) -> tuple[Tensor, Tensor]:
        """Append ``(B, H, T, Dh)`` keys and values; return all ``(B, H, S, Dh)`` so far."""
        if k.requires_grad or v.requires_grad:
            raise ValueError(
                "KVCache is for inference; run the model under torch.no_grad() or "
                "torch.inference_mode() when passing a cache"
            )
        if self._k is not None and (
            k.shape[:2] != self._k.shape[:2] or k.shape[-1] != self._k.shape[-1]
        ):
            raise ValueError(
                f"cache holds keys of shape (B, H, S, Dh) = {tuple(self._k.shape[:2])} x "
                f"{self._k.shape[-1]}, new keys have shape {tuple(k.shape)}"
            )
        end = self.length + k.shape[2]
        if self._k is None or self._v is None or end > self._k.shape[2]:
            self._k, self._v = self._grown(k, v, max(end, 2 * self.length, 16))
        self._k[:, :, self.length : end] = k
        self._v[:, :, self.length : end] = v
        self.length = end
        return self._k[:, :, :end], self._v[:, :, :end]

    def _grown(self, k: Tensor, v: Tensor, capacity: int) -> tuple[Tensor, Tensor]:
        """New buffers of ``capacity`` positions holding what is cached so far."""
        B, H, _, Dk = k.shape
        new_k = k.new_empty(B, H, capacity, Dk)  # (B, H, cap, Dh)
        new_v = v.new_empty(B, H, capacity, v.shape[-1])
        if self._k is not None and self._v is not None:
            new_k[:, :, : self.length] = self._k[:, :, : self.length]
            new_v[:, :, : self.length] = self._v[:, :, : self.length]
        return new_k, new_v

    def get(self) -> tuple[Tensor, Tensor]:
        """All cached keys and values; raises if the cache is empty."""
        if self._k is None or self._v is None:
            raise ValueError("the cache is empty")
        return self._k[:, :, : self.length], self._v[:, :, : self.length]

    def reset(self) -> None:
        self._k = self._v = None
        self.length = 0


class KVCache:
    """One :class:`LayerKV` per layer, for self-attention and optional cross-attention.

    Args:
        n_layers: number of decoder layers.

    Example:
        >>> cache = KVCache(n_layers=2)
        >>> cache.length
        0
    """

    def __init__(self, n_layers: int) -> None:
        if n_layers <= 0:
            raise ValueError(f"n_layers must be positive, found {n_layers}")
        self.self_attn = [LayerKV() for _ in range(n_layers)]
        self.cross_attn = [LayerKV() for _ in range(n_layers)]

    @property
    def n_layers(self) -> int:
        return len(self.self_attn)

    @property
    def length(self) -> int:
        """Number of positions already decoded (the offset of the next position)."""
        return self.self_attn[0].length

    def reset(self) -> None:
        for c in (*self.self_attn, *self.cross_attn):
            c.reset()
