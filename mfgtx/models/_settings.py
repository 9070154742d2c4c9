"""The settings every model's encoder stack shares, as a model config or a job section names
them: the one protocol each model's own settings protocol extends."""

from __future__ import annotations

from typing import Any, Protocol

from mfgtx.nn import TransformerConfig

__all__ = ["StackSettings", "stack_config"]


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


def stack_config(s: StackSettings, **fields: Any) -> TransformerConfig:
    """The :class:`~mfgtx.nn.TransformerConfig` of ``s``'s shared settings plus ``fields``
    (what the model decides itself: positions, norm placement, ``max_len``...)."""
    return TransformerConfig(
        d_model=s.d_model,
        n_heads=s.n_heads,
        n_layers=s.n_layers,
        d_ff=s.d_ff,
        dropout=s.dropout,
        **fields,
    )
