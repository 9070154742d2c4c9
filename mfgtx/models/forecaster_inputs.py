"""Checks of what a forecaster is given: the context, its missing values, the covariates.

Shape legend: ``B`` batch, ``T`` steps, ``C`` channels, ``n`` covariates.

Every refusal is a ``ValueError`` that names the input, the first bad position and what to
do about it.
"""

from __future__ import annotations

import torch
from torch import Tensor

__all__ = ["checked_covariates", "observed_mask"]


def observed_mask(past: Tensor, observed: Tensor | None) -> Tensor:
    """The ``(B, T, C)`` bool mask of usable values of ``past``.

    Without ``observed`` the context must be complete (no NaN); with it, a NaN is allowed
    only where ``observed`` is ``False``.

    Example:
        >>> x = torch.tensor([[[1.0], [float("nan")]]])
        >>> observed_mask(x, torch.tensor([[[True], [False]]])).flatten().tolist()
        [True, False]
    """
    nan = torch.isnan(past)
    if observed is None:
        if nan.any():
            b, t, j = (int(i) for i in nan.nonzero()[0])
            raise ValueError(
                f"past holds {int(nan.sum())} NaN values (first at sample {b}, step {t}, "
                f"channel {j}) and no observed mask was given; pass observed (False where "
                "missing) to forecast from a context with gaps"
            )
        return torch.ones_like(past, dtype=torch.bool)
    if observed.shape != past.shape:
        raise ValueError(
            f"observed must have the shape of past {tuple(past.shape)}, found "
            f"{tuple(observed.shape)}"
        )
    seen = observed.bool()
    if (nan & seen).any():
        b, t, j = (int(i) for i in (nan & seen).nonzero()[0])
        raise ValueError(
            f"past is NaN where observed is True (sample {b}, step {t}, channel {j}); "
            "mark missing values False in observed"
        )
    return seen


def checked_covariates(name: str, x: Tensor | None, n: int, B: int, T: int) -> Tensor | None:
    """``x`` if it is a complete ``(B, T, n)`` tensor (``None`` when ``n == 0``), else raise."""
    if n == 0:
        if x is not None:
            raise ValueError(f"{name} were given but the model was built with n_{name}=0")
        return None
    if x is None or x.dim() != 3 or tuple(x.shape) != (B, T, n):
        found = None if x is None else tuple(x.shape)
        raise ValueError(f"{name} must have shape (B, {T}, {n}), found {found}")
    bad = ~torch.isfinite(x)
    if bad.any():
        b, t, j = (int(i) for i in bad.nonzero()[0])
        raise ValueError(
            f"{name} holds {int(bad.sum())} NaN/inf values (first at sample {b}, step {t}, "
            f"column {j}); covariates must be complete"
        )
    return x
