"""The faithfulness check shown beside every attention map: a deletion test.

Shape legend: ``B`` batch, ``M`` input tokens (time steps, patches, sensors), ``R`` random
draws.

Remove the ``k`` most-attended input tokens and see how far the predicted score moves; do
the same with ``k`` tokens drawn at random, several times. If the attended tokens matter more
than random ones, the map points at something the prediction depends on; if not, the map
should not be read as pointing at anything.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

__all__ = ["DeletionResult", "run_deletion"]


@dataclass(frozen=True, eq=False)
class DeletionResult:
    """What removing the most-attended inputs did, next to removing random ones.

    Attributes:
        fraction: share of the real input tokens removed, e.g. ``0.1``.
        unit: what was removed (``"time steps"``, ``"patches"``, ``"sensors"``).
        score_name: the score watched (``"predicted RUL"``, ``"defect probability"`` ...).
        removed: tokens removed per sample ``(B,)``.
        attended_change: ``|score(deleted) - score(full)|`` per sample ``(B,)`` for the
            most-attended tokens.
        random_change: the same for random tokens ``(R, B)``.
    """

    fraction: float
    unit: str
    score_name: str
    removed: Tensor
    attended_change: Tensor
    random_change: Tensor

    @property
    def attended(self) -> float:
        """Mean change over the batch when the most-attended tokens are removed."""
        return float(self.attended_change.mean())

    @property
    def random_mean(self) -> float:
        """Mean over the draws of the batch-mean change for random tokens."""
        return float(self.random_change.mean(1).mean())

    @property
    def random_std(self) -> float:
        """Standard deviation over the draws of the batch-mean change for random tokens."""
        per_draw = self.random_change.mean(1)
        return float(per_draw.std()) if per_draw.numel() > 1 else 0.0

    def sentence(self) -> str:
        """E.g. "masking the 10% most-attended patches moved the defect probability by
        0.21; random 10% moved it by 0.03 +/- 0.01 (10 draws)"."""
        pct = f"{100 * self.fraction:g}%"
        return (
            f"masking the {pct} most-attended {self.unit} moved the {self.score_name} by "
            f"{_fmt(self.attended)}; random {pct} moved it by {_fmt(self.random_mean)} "
            f"+/- {_fmt(self.random_std)} ({self.random_change.shape[0]} draws)"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": "faithfulness check (deletion test)",
            "fraction": self.fraction,
            "unit": self.unit,
            "score_name": self.score_name,
            "attended_change": self.attended,
            "random_change_mean": self.random_mean,
            "random_change_std": self.random_std,
            "draws": int(self.random_change.shape[0]),
            "samples": int(self.attended_change.shape[0]),
            "sentence": self.sentence(),
        }


def _fmt(v: float) -> str:
    return f"{v:.3g}" if math.isfinite(v) else "nan"


@torch.no_grad()
def run_deletion(
    score: Callable[[Tensor], Tensor],
    importance: Tensor,
    valid: Tensor | None = None,
    *,
    fraction: float = 0.1,
    n_random: int = 10,
    seed: int = 0,
    unit: str = "tokens",
    score_name: str = "score",
) -> DeletionResult:
    """Deletion test for any model: ``score(keep)`` gives the watched score ``(B,)`` with
    only the tokens where ``keep (B, M)`` is ``True`` left in.

    Args:
        score: the model with tokens removed, e.g. marked missing or replaced by the mean.
        importance: ``(B, M)`` attention map; the top ``k`` real tokens are removed.
        valid: ``(B, M)`` real tokens (default: all); only these are ranked or drawn.
        fraction: share of each sample's real tokens to remove (at least one).
        n_random: random draws for the comparison.
        seed: seeds the random draws.

    Example:
        >>> x = torch.tensor([[5.0, 1.0, 0.0, 0.0]])  # the score is the sum of kept inputs
        >>> r = run_deletion(lambda keep: (x * keep).sum(1), x, fraction=0.25)
        >>> r.attended, r.sentence().startswith("masking the 25% most-attended tokens")
        (5.0, True)
    """
    if not 0 < fraction < 1:
        raise ValueError(f"fraction must be in (0, 1), found {fraction}")
    if n_random < 1:
        raise ValueError(f"n_random must be at least 1, found {n_random}")
    B, M = importance.shape
    valid = torch.ones(B, M, dtype=torch.bool) if valid is None else valid.bool()
    if valid.shape != (B, M):
        raise ValueError(f"valid must have shape {(B, M)}, found {tuple(valid.shape)}")
    n_valid = valid.sum(1)  # (B,)
    k = torch.clamp(torch.round(fraction * n_valid.double()).long(), min=1)
    k = torch.minimum(k, n_valid)
    base = score(valid).double()  # (B,)

    def remove(order: Tensor) -> Tensor:
        """Keep mask with the first k[b] tokens of ``order`` (B, M) removed."""
        ranks = torch.empty_like(order)
        ranks.scatter_(1, order, torch.arange(M).expand(B, M))
        return valid & ~(ranks < k[:, None])

    ranked = importance.double().masked_fill(~valid, -math.inf)
    attended = (score(remove(ranked.argsort(1, descending=True))).double() - base).abs()
    g = torch.Generator().manual_seed(seed)
    draws = []
    for _ in range(n_random):
        noise = torch.rand(B, M, generator=g, dtype=torch.float64).masked_fill(~valid, -1.0)
        draws.append((score(remove(noise.argsort(1, descending=True))).double() - base).abs())
    return DeletionResult(
        fraction, unit, score_name, k, attended.float(), torch.stack(draws).float()
    )
