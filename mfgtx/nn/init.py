"""Weight initialisation, in one place."""

from __future__ import annotations

import math

from torch import nn

__all__ = ["RESIDUAL_PROJECTIONS", "init_weights"]

#: Names of linear layers that write into the residual stream; scaled by 1/sqrt(2 n_layers)
#: as in GPT-2 so that the residual variance does not grow with depth.
RESIDUAL_PROJECTIONS = ("out_proj", "linear2")


def init_weights(module: nn.Module, *, n_layers: int, std: float = 0.02) -> None:
    """Initialise every Linear, Embedding and LayerNorm inside ``module`` (GPT-2 scheme).

    Linear and Embedding weights ~ N(0, std), residual projections ~ N(0, std/sqrt(2 L)),
    biases 0, LayerNorm weight 1 and bias 0. Call it once, on the module that owns the layers.
    """
    residual_std = std / math.sqrt(2 * n_layers)
    for name, m in module.named_modules():
        if isinstance(m, nn.Linear):
            s = residual_std if name.rsplit(".", 1)[-1] in RESIDUAL_PROJECTIONS else std
            nn.init.normal_(m.weight, mean=0.0, std=s)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.Embedding):
            nn.init.normal_(m.weight, mean=0.0, std=std)
        elif isinstance(m, nn.LayerNorm):
            if m.weight is not None:
                nn.init.ones_(m.weight)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
