"""Attention maps and the deletion test of an ensemble of mfgtx models.

Shape legend: ``E`` members (every other dimension as the members' maps have them).

The ensemble's maps are its members' maps averaged, layer by layer (the members share one
architecture and read the same inputs, so their maps line up token for token); its
prediction is the members' mean, as :class:`~mfgtx.models.SensorEncoderEnsemble` and
:class:`~mfgtx.models.ForecasterEnsemble` predict. The deletion test removes tokens from
the ensemble's input and watches the ensemble's own prediction, by the members' rule.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from torch import Tensor, nn

from mfgtx.explain import forecast, sensor
from mfgtx.explain.deletion import DeletionResult
from mfgtx.explain.maps import AttentionMaps
from mfgtx.models import ForecasterEnsemble, SensorEncoderEnsemble

__all__ = ["deletion", "maps"]


def _member_rule(model: nn.Module) -> Any:
    return sensor if isinstance(model, SensorEncoderEnsemble) else forecast


def _mean(parts: list[Tensor]) -> Tensor:
    return torch.stack(parts).mean(0)  # (E, ...) -> (...)


def maps(
    model: SensorEncoderEnsemble | ForecasterEnsemble, x: Tensor, *args: Any, **kwargs: Any
) -> AttentionMaps:
    """The members' maps averaged, and the ensemble's prediction."""
    rule = _member_rule(model)
    each = [rule.maps(m.eval(), x, *args, **kwargs) for m in model.members]
    first = each[0]
    layers = tuple(_mean([e.layers[k] for e in each]) for k in range(len(first.layers)))
    return replace(
        first,
        model=type(model).__name__,
        layers=layers,
        query=_mean([e.query for e in each]),
        rollout=_mean([e.rollout for e in each]),
        rollout_matrix=_mean([e.rollout_matrix for e in each]),
        prediction=_mean([e.prediction for e in each]),
    )


@dataclass(frozen=True)
class _AsMember:
    """The ensemble seen through its members' config: what the members' deletion rule reads
    (``config``) and calls (the ensemble's own forward)."""

    ensemble: SensorEncoderEnsemble | ForecasterEnsemble

    @property
    def config(self) -> Any:
        return self.ensemble.config.member

    def __call__(self, *args: Any) -> Tensor:
        return self.ensemble(*args)


def deletion(
    model: SensorEncoderEnsemble | ForecasterEnsemble,
    x: Tensor,
    importance: Tensor,
    valid: Tensor,
    **kwargs: Any,
) -> DeletionResult:
    """The members' deletion rule, watching the ensemble's prediction."""
    return _member_rule(model).deletion(_AsMember(model), x, importance, valid, **kwargs)
