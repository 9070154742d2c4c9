"""Ensembles of trained members: the mean of their predictions, their quantiles averaged.

Shape legend: ``B`` batch, ``T`` steps, ``C`` sensors, ``K`` outputs, ``H`` horizon, ``Q``
quantiles, ``M`` members.

An ensemble holds ``M`` members of one architecture (trained apart, e.g. cross-fitted by lot)
and answers with the interface of a single member: the point prediction is the mean of the
members' (for a classifier, the mean of their logits, calibrated afterwards as one model),
and each quantile is the mean of the members' same quantile (Vincentisation: averaging
quantile functions, which keeps the band's level and widens it where members disagree about
its place as well as its width).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

import torch
from torch import Tensor, nn

from mfgtx.models.forecaster import CausalForecaster
from mfgtx.models.forecaster_config import ForecasterConfig
from mfgtx.models.sensor_encoder import SensorEncoder, SensorEncoderConfig

__all__ = [
    "ForecasterEnsemble",
    "ForecasterEnsembleConfig",
    "SensorEncoderEnsemble",
    "SensorEncoderEnsembleConfig",
]


def _check_members(n: int) -> None:
    if not isinstance(n, int) or isinstance(n, bool) or n < 2:
        raise ValueError(f"an ensemble needs n_members >= 2, found {n!r}")


@dataclass(frozen=True)
class SensorEncoderEnsembleConfig:
    """``n_members`` SensorEncoders of one config (``member``)."""

    member: SensorEncoderConfig
    n_members: int

    def __post_init__(self) -> None:
        _check_members(self.n_members)

    @property
    def task(self) -> str:
        return self.member.task

    @property
    def n_outputs(self) -> int:
        return self.member.n_outputs

    @property
    def quantiles(self) -> tuple[float, ...]:
        return self.member.quantiles


class SensorEncoderEnsemble(nn.Module):
    """The mean of ``n_members`` :class:`SensorEncoder` predictions (see the module docstring).

    Example:
        >>> cfg = SensorEncoderConfig(n_channels=2, max_len=8, d_model=8, n_heads=2,
        ...                           n_layers=1, d_ff=16)
        >>> members = [SensorEncoder(cfg) for _ in range(3)]
        >>> ens = SensorEncoderEnsemble.of(members).eval()
        >>> x = torch.randn(4, 8, 2)
        >>> torch.allclose(ens(x), torch.stack([m.eval()(x) for m in members]).mean(0))
        True
    """

    #: how :mod:`mfgtx.explain` draws its attention maps (the ``ensemble`` module there)
    explained_as = "ensemble"

    def __init__(self, config: SensorEncoderEnsembleConfig) -> None:
        super().__init__()
        self.config = config
        self.members = nn.ModuleList(SensorEncoder(config.member) for _ in range(config.n_members))

    @classmethod
    def of(cls, members: list[SensorEncoder]) -> SensorEncoderEnsemble:
        """An ensemble holding (copies of the weights of) trained ``members``."""
        ens = cls(SensorEncoderEnsembleConfig(members[0].config, len(members)))
        for mine, theirs in zip(ens.members, members, strict=True):
            mine.load_state_dict(theirs.state_dict())
        return ens

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """The members' mean prediction (regression) or mean logits (classification)."""
        return torch.stack([m(x, mask) for m in self.members]).mean(0)

    def forward_quantiles(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Each quantile averaged over the members ``(B, K, Q)``."""
        members = cast(Iterable[SensorEncoder], self.members)
        return torch.stack([m.forward_quantiles(x, mask) for m in members]).mean(0)


@dataclass(frozen=True)
class ForecasterEnsembleConfig:
    """``n_members`` CausalForecasters of one config (``member``)."""

    member: ForecasterConfig
    n_members: int

    def __post_init__(self) -> None:
        _check_members(self.n_members)

    @property
    def horizon(self) -> int:
        return self.member.horizon

    @property
    def quantiles(self) -> tuple[float, ...]:
        return self.member.quantiles

    @property
    def n_channels(self) -> int:
        return self.member.n_channels

    @property
    def n_past_covariates(self) -> int:
        return self.member.n_past_covariates


class ForecasterEnsemble(nn.Module):
    """The mean of ``n_members`` :class:`CausalForecaster` forecasts, quantiles averaged."""

    #: how :mod:`mfgtx.explain` draws its attention maps (the ``ensemble`` module there)
    explained_as = "ensemble"

    def __init__(self, config: ForecasterEnsembleConfig) -> None:
        super().__init__()
        self.config = config
        self.members = nn.ModuleList(
            CausalForecaster(config.member) for _ in range(config.n_members)
        )

    @classmethod
    def of(cls, members: list[CausalForecaster]) -> ForecasterEnsemble:
        """An ensemble holding (copies of the weights of) trained ``members``."""
        ens = cls(ForecasterEnsembleConfig(members[0].config, len(members)))
        for mine, theirs in zip(ens.members, members, strict=True):
            mine.load_state_dict(theirs.state_dict())
        return ens

    def forward(self, past: Tensor, *args: Tensor | None) -> Tensor:
        return torch.stack([m(past, *args) for m in self.members]).mean(0)

    def forecast_with_quantiles(
        self, past: Tensor, *args: Tensor | None
    ) -> tuple[Tensor, Tensor | None]:
        """The mean point forecast ``(B, H, C)`` and each quantile averaged ``(B, H, C, Q)``."""
        members = cast(Iterable[CausalForecaster], self.members)
        out = [m.forecast_with_quantiles(past, *args) for m in members]
        point = torch.stack([p for p, _ in out]).mean(0)
        if out[0][1] is None:
            return point, None
        return point, torch.stack([q for _, q in out if q is not None]).mean(0)  # one config: all
