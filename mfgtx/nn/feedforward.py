"""Position-wise feed-forward network.

Shape legend: ``B`` batch, ``T`` length, ``D`` ``d_model``, ``F`` ``d_ff``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.nn.dropout import Dropout

__all__ = ["FeedForward"]

Activation = Literal["relu", "gelu"]
_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}


class FeedForward(nn.Module):
    """``linear2(dropout(act(linear1(x))))``, ``(B, T, D) -> (B, T, D)``.

    The layout matches :class:`torch.nn.TransformerEncoderLayer` so weights copy across.

    Args:
        d_model: model width ``D``.
        d_ff: hidden width ``F``.
        activation: ``"relu"`` (original paper) or ``"gelu"`` (exact, erf-based).
        dropout: dropout after the activation.
        bias: biases in both linear layers.

    Example:
        >>> FeedForward(8, 32, activation="gelu")(torch.zeros(2, 3, 8)).shape
        torch.Size([2, 3, 8])
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        *,
        activation: Activation = "relu",
        dropout: float = 0.0,
        bias: bool = True,
    ) -> None:
        super().__init__()
        if activation not in _ACTIVATIONS:
            raise ValueError(f"activation must be 'relu' or 'gelu', found {activation!r}")
        if d_model <= 0 or d_ff <= 0:
            raise ValueError(f"d_model and d_ff must be positive, found {d_model}, {d_ff}")
        self.activation = activation
        self.linear1 = nn.Linear(d_model, d_ff, bias=bias)
        self.linear2 = nn.Linear(d_ff, d_model, bias=bias)
        self.dropout = Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:
        return self.linear2(self.dropout(_ACTIVATIONS[self.activation](self.linear1(x))))
