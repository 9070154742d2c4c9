"""The settings every model's encoder stack shares, as a model config or a job section names
them: the one protocol each model's own settings protocol extends."""

from __future__ import annotations

from typing import Protocol

__all__ = ["StackSettings"]


class StackSettings(Protocol):
    """``d_model``, ``n_heads``, ``n_layers``, ``d_ff`` and ``dropout`` of a Transformer stack
    (:class:`mfgtx.nn.TransformerConfig` checks them)."""

    @property
    def d_model(self) -> int: ...
    @property
    def n_heads(self) -> int: ...
    @property
    def n_layers(self) -> int: ...
    @property
    def d_ff(self) -> int: ...
    @property
    def dropout(self) -> float: ...
