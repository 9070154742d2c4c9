"""Decoder-only Transformer forecaster over patches of the past: where a signal is heading.

Shape legend: ``B`` batch, ``L`` context length, ``H`` horizon, ``C`` forecast channels,
``P`` patch length, ``s`` stride, ``N`` patches (tokens), ``D`` ``d_model``, ``Q``
quantiles, ``S`` samples. ``B' = B * C`` (channel-independent) or ``B``, ``k = 1`` or ``C``
channels per token.

The past is normalised per sample and channel with statistics of the context only
(:mod:`mfgtx.models.revin`), cut into patches aligned to the context's end, and each patch
becomes one token: its values, which of them were observed, the past-observed covariates with
a flag saying they are available, and the known-future covariates of the patch and of the
``s`` steps it predicts. A causal decoder (:class:`mfgtx.nn.Decoder`, mask True = may
attend, a position sees itself and the past) runs over the tokens.

Leakage by construction: past-observed covariates are accepted for the context only (``(B,
L, ·)``) and read as unavailable for every later step; the target's future reaches the model
only as teacher-forcing input behind the causal mask; the normalisation never sees it.
Known-future covariates are a separate input, so a target column cannot pass as one.

Causal RevIN (autoregressive head): every position of the decoder predicts the ``s`` steps
after its patch, so a context position is trained to predict context steps. Normalising it
with the whole context's statistics would show it the level and spread of the very steps it
predicts. So each context token is normalised, and its prediction mapped back, with the
statistics of the context up to the end of its patch (:func:`~mfgtx.models.revin.prefix_stats`);
the last context token and every token after the context use those of the whole context,
which is what generation sees. The direct head forecasts only the horizon, from the whole
context: it keeps one set of statistics per window.

This module holds the inputs, the tokens and the public API; the heads and their losses are
in :mod:`~mfgtx.models.forecaster_heads`, the linear skip and its ridge fit in
:mod:`~mfgtx.models.forecaster_skip`, generation in :mod:`~mfgtx.models.forecaster_generate`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models.forecaster_config import ForecasterConfig
from mfgtx.models.forecaster_generate import generate_patches
from mfgtx.models.forecaster_heads import (
    DirectHead,
    NextPatchHead,
    PlanHead,
    direct_loss,
    next_patch_loss,
    non_crossing,
    shift_point,
)
from mfgtx.models.forecaster_inputs import checked_covariates, observed_mask
from mfgtx.models.forecaster_skip import LinearSkip
from mfgtx.models.revin import (
    InstanceStats,
    denormalize,
    instance_stats,
    normalize,
    prefix_stats,
)
from mfgtx.nn import Decoder, Dropout, init_weights

__all__ = ["CausalForecaster", "ForecasterConfig"]


class _Context(NamedTuple):
    """Causal RevIN of the context's ``N`` tokens (autoregressive head): token ``j`` in the
    units of the context up to the end of its patch."""

    patches: Tensor  # (B', N, P, k) patch values in each token's units, 0 where missing
    mean: Tensor  # (B', N, 1, k) the statistics that undo them
    std: Tensor  # (B', N, 1, k)


class _Series(NamedTuple):
    """Normalised inputs as token sequences, each ``(B', T, ·)``."""

    values: Tensor  # (B', L, k) normalised, 0 where missing
    observed: Tensor  # (B', L, k) float 0/1
    past_cov: Tensor | None  # (B', L, Cp)
    future_cov: Tensor | None  # (B', L + future, F)
    stats: InstanceStats  # (B, 1, C)
    context: _Context | None  # causal RevIN of the context tokens, autoregressive head only


class CausalForecaster(nn.Module):
    """Decoder-only patch Transformer: direct or autoregressive multi-step forecasts.

    Args:
        config: a :class:`ForecasterConfig`.

    Example:
        >>> cfg = ForecasterConfig(n_channels=2, context_length=32, horizon=8, patch_len=8,
        ...                        stride=4, d_model=16, n_heads=2, n_layers=1, d_ff=32)
        >>> model = CausalForecaster(cfg).eval()
        >>> model(torch.randn(3, 32, 2)).shape
        torch.Size([3, 8, 2])
    """

    def __init__(self, config: ForecasterConfig) -> None:
        super().__init__()
        self.config = c = config
        k = 1 if c.channel_independent else c.n_channels
        P, s, H, Q = c.patch_len, c.patch_stride, c.horizon, len(c.quantiles)
        per_step = 2 * k + (c.n_past_covariates + 1 if c.n_past_covariates else 0)
        self.embed = nn.Linear(P * per_step + (P + s) * c.n_future_covariates, c.d_model)
        self.decoder = Decoder(c.transformer, cross_attention=False)  # initialises itself
        self.head_dropout = Dropout(c.head_dropout)
        self.direct: DirectHead | None = None
        self.future_head: PlanHead | None = None
        self.next_patch: NextPatchHead | None = None
        self.skip: LinearSkip | None = None  # starts at zero: the Transformer alone
        if c.linear_skip:
            self.skip = LinearSkip(c.context_length, H)
        if c.head == "direct":
            self.direct = DirectHead(c.n_patches, c.d_model, horizon=H, k=k, n_quantiles=Q)
            if c.n_future_covariates:
                self.future_head = PlanHead(horizon=H, n_future=c.n_future_covariates, k=k)
        else:
            self.next_patch = NextPatchHead(c.d_model, stride=s, k=k, with_scale=bool(Q))
        for m in (self.embed, self.direct, self.future_head, self.next_patch):
            if m is not None:
                init_weights(m, n_layers=c.n_layers)

    # ------------------------------------------------------------------ inputs and tokens

    def _series(
        self,
        past: Tensor,
        observed: Tensor | None,
        past_covariates: Tensor | None,
        future_covariates: Tensor | None,
        future: int,
    ) -> _Series:
        """Check and normalise the inputs; ``future`` steps of known-future inputs needed."""
        c = self.config
        L = c.context_length
        values, seen, stats = self._normalised(past, observed)
        B = past.shape[0]
        pc = checked_covariates("past_covariates", past_covariates, c.n_past_covariates, B, L)
        fc = checked_covariates(
            "future_covariates", future_covariates, c.n_future_covariates, B, L + future
        )
        if self._ci:  # every channel's sequence gets the sample's covariates
            pc, fc = (None if t is None else t.repeat_interleave(c.n_channels, 0) for t in (pc, fc))
        context = self._causal_context(past, seen, stats)
        observed = self._to_series(seen.to(past.dtype))
        return _Series(self._to_series(values), observed, pc, fc, stats, context)

    def _causal_context(self, past: Tensor, seen: Tensor, stats: InstanceStats) -> _Context | None:
        """Causal RevIN of the context tokens (autoregressive head with ``revin``), else None.

        Token ``j`` covers steps ``[e_j - P, e_j)``; its values are normalised with the
        statistics of the observed context steps ``[0, e_j)``. The last token ends at ``L``
        and takes the whole context's ``stats``, exactly as generation does.
        """
        c = self.config
        if c.head != "autoregressive" or not c.revin:
            return None
        L, P, s, N = c.context_length, c.patch_len, c.patch_stride, c.n_patches
        start = (L - P) % s
        mean, std = stats  # (B, 1, C): the last token sees the whole context
        if N > 1:  # the earlier tokens: statistics of the context up to their patch's end
            ends = start + P + s * torch.arange(N - 1, device=past.device)  # (N-1,)
            early = prefix_stats(past, seen, ends)  # (B, N-1, C) each
            mean, std = torch.cat([early.mean, mean], dim=1), torch.cat([early.std, std], dim=1)
        raw = torch.where(seen, past, past.new_zeros(()))[:, start:]  # (B, L', C)
        patches = raw.unfold(1, P, s).transpose(-1, -2)  # (B, N, P, C)
        ok = seen[:, start:].unfold(1, P, s).transpose(-1, -2)  # (B, N, P, C)
        patches = torch.where(ok, (patches - mean[:, :, None]) / std[:, :, None], 0.0)
        return _Context(
            self._tokens_to_series(patches),
            self._tokens_to_series(mean[:, :, None]),  # (B', N, 1, k)
            self._tokens_to_series(std[:, :, None]),
        )

    def _tokens_to_series(self, x: Tensor) -> Tensor:
        """``(B, N, P, C)`` -> ``(B', N, P, k)``."""
        if not self._ci:
            return x
        B, N, P, C = x.shape
        return x.permute(0, 3, 1, 2).reshape(B * C, N, P, 1)  # (B*C, N, P, 1)

    def _normalised(
        self, past: Tensor, observed: Tensor | None
    ) -> tuple[Tensor, Tensor, InstanceStats]:
        """``past (B, L, C)`` in the model's units (RevIN or as given; 0 where missing), the
        observed mask and the statistics that undo it."""
        L, C = self.config.context_length, self.config.n_channels
        if past.dim() != 3 or tuple(past.shape[1:]) != (L, C):
            raise ValueError(
                f"past must have shape (B, context_length={L}, n_channels={C}), found "
                f"{tuple(past.shape)}"
            )
        B = past.shape[0]
        seen = observed_mask(past, observed)
        stats = (
            instance_stats(past, seen)
            if self.config.revin
            else InstanceStats(
                torch.zeros(B, 1, C, dtype=past.dtype, device=past.device),
                torch.ones(B, 1, C, dtype=past.dtype, device=past.device),
            )
        )
        return torch.where(seen, normalize(past, stats), past.new_zeros(())), seen, stats

    @torch.no_grad()
    def fit_linear_skip(
        self,
        past: Tensor,
        future: Tensor,
        observed: Tensor | None = None,
        *,
        alpha: float = 1.0,
        freeze: bool = True,
        chunk: int = 4096,
        weighted: bool = False,
    ) -> None:
        """Set the linear skip (``linear_skip=True``) to the ridge regression of the horizon
        on the context, in the model's normalised units, over training windows.

        Training then starts from that linear forecast and the Transformer learns what it
        misses; ``freeze`` keeps the map fixed while it does.

        With RevIN every window is divided by its own scale, so an unweighted fit counts a
        quiet window's errors as much as a lively one's, though a forecast is judged in the
        input's units. ``weighted`` weights each window's rows by its scale squared, so the
        fit minimises the squared error in the input's units, as
        :class:`~mfgtx.baselines.LinearRidge` does (without RevIN every weight is 1). On
        ETTh1 the weighted map alone validates better at 3 of 4 horizons, but the
        Transformer then adds nothing to it, and the unweighted map with the Transformer on
        top validates better at 3 of 4: so the default is unweighted.

        Args:
            past: ``(N, L, C)`` training contexts.
            future: ``(N, H, C)`` the horizons that followed them.
            observed: ``(N, L, C)`` bool, ``False`` where a context value is missing.
            alpha: ridge penalty on the map's weights (not on its bias).
            freeze: stop gradients to the map.
            chunk: windows normalised at a time (the fit keeps sums of products only).
            weighted: fit in the input's units (default: in the normalised units).
        """
        if self.skip is None:
            raise ValueError("fit_linear_skip needs a model built with linear_skip=True")
        c = self.config
        if future.dim() != 3 or tuple(future.shape[1:]) != (c.horizon, c.n_channels):
            raise ValueError(
                f"future must have shape (N, horizon={c.horizon}, n_channels={c.n_channels}), "
                f"found {tuple(future.shape)}"
            )
        if not torch.isfinite(future).all():
            raise ValueError("future holds NaN or infinite values: the ridge fit needs targets")
        if future.shape[0] != past.shape[0]:
            raise ValueError(f"past has {past.shape[0]} windows but future {future.shape[0]}")
        L, H = c.context_length, c.horizon

        def rows() -> Iterator[tuple[Tensor, Tensor, Tensor]]:
            """``(X (R, L), Y (R, H), w (R, 1))`` per chunk of windows, normalised."""
            for a in range(0, past.shape[0], chunk):
                part = slice(a, a + chunk)
                values, _, stats = self._normalised(
                    past[part], None if observed is None else observed[part]
                )
                X = self._to_series(values).transpose(1, 2).reshape(-1, L).double()  # (R, L)
                Y = self._to_series(normalize(future[part], stats)).transpose(1, 2)
                Y = Y.reshape(-1, H).double()  # (R, H)
                w = (  # (R, 1): a row's error in the input's units is its scale times its own
                    self._to_series(stats.std).transpose(1, 2).reshape(-1, 1).double() ** 2
                    if weighted
                    else torch.ones(X.shape[0], 1, dtype=torch.float64, device=past.device)
                )
                yield X, Y, w

        self.skip.fit_ridge(rows(), alpha=alpha, device=past.device)
        self.skip.requires_grad_(not freeze)

    @property
    def _ci(self) -> bool:
        return self.config.channel_independent

    def _to_series(self, x: Tensor) -> Tensor:
        """``(B, T, C)`` -> ``(B', T, k)``."""
        B, T, C = x.shape
        return x.permute(0, 2, 1).reshape(B * C, T, 1) if self._ci else x  # (B*C, T, 1)

    def _from_series(self, y: Tensor, B: int) -> Tensor:
        """``(B', T, k, ...)`` -> ``(B, T, C, ...)``."""
        if not self._ci:
            return y
        C = self.config.n_channels
        y = y.reshape(B, C, *y.shape[1:])  # (B, C, T, 1, ...)
        return y.squeeze(3).movedim(1, 2)  # (B, T, C, ...)

    def _embed(
        self,
        values: Tensor,
        observed: Tensor,
        past_cov: Tensor | None,
        future_cov: Tensor | None,
        context: _Context | None = None,
    ) -> Tensor:
        """Tokens ``(B', N, D)`` of the patches of a ``(B', T, k)`` sequence, aligned to its end.

        ``past_cov (B', T_c, Cp)`` covers the first ``T_c <= T`` steps (the context); later
        steps read as unavailable. ``future_cov`` covers at least ``T + s`` steps. With a
        ``context`` (the sequence starts with the whole context), the context's tokens take
        its causally normalised patch values instead of ``values``.
        """
        c = self.config
        P, s = c.patch_len, c.patch_stride
        Bp, T, k = values.shape
        start = (T - P) % s
        parts = [values, observed]
        if past_cov is not None:
            known = past_cov.shape[1]
            avail = torch.zeros(Bp, T, 1, dtype=values.dtype, device=values.device)
            avail[:, :known] = 1.0
            cov = F.pad(past_cov[:, :T], (0, 0, 0, max(T - known, 0)))  # (B', T, Cp)
            parts += [cov, avail]
        steps = torch.cat(parts, dim=-1)[:, start:]  # (B', T', f)
        patches = steps.unfold(1, P, s).transpose(-1, -2)  # (B', N, P, f)
        if context is not None:
            n = context.patches.shape[1]
            vals = torch.cat([context.patches, patches[:, n:, :, :k]], dim=1)  # (B', N, P, k)
            patches = torch.cat([vals, patches[..., k:]], dim=-1)
        feats = [patches.flatten(2)]  # (B', N, P*f)
        if future_cov is not None:
            fut = future_cov[:, start : T + s].unfold(1, P + s, s)  # (B', N, F, P+s)
            feats.append(fut.transpose(-1, -2).flatten(2))  # (B', N, (P+s)*F)
        return self.embed(torch.cat(feats, dim=-1))  # (B', N, D)

    def _position_stats(self, x: _Series, n: int) -> tuple[Tensor, Tensor]:
        """Centre and spread ``(B', n, 1, k)`` that map position ``j``'s outputs back: the
        context token's own (causal RevIN), the whole context's for every later position."""
        mean = self._to_series(x.stats.mean)[:, :, None]  # (B', 1, 1, k)
        std = self._to_series(x.stats.std)[:, :, None]
        mean, std = mean.expand(-1, n, -1, -1), std.expand(-1, n, -1, -1)
        if x.context is None:
            return mean, std
        m = min(n, x.context.mean.shape[1])
        return (
            torch.cat([x.context.mean[:, :m], mean[:, m:]], dim=1),
            torch.cat([x.context.std[:, :m], std[:, m:]], dim=1),
        )

    # ------------------------------------------------------------------ direct head

    def _direct(self, x: _Series, weights: list[Tensor] | None = None) -> Tensor:
        """``(B, H, C, 1 + Q)`` in the context's units: the point forecast, then quantiles.

        With a ``weights`` list, the explicit attention path runs and the per-layer
        weights ``(B', heads, N, N)`` are appended to it.
        """
        assert self.direct is not None
        c = self.config
        B = x.stats.mean.shape[0]
        tokens = self._embed(x.values, x.observed, x.past_cov, x.future_cov)
        out_stack = self.decoder(tokens, need_weights=weights is not None)
        if weights is not None:
            weights.extend(out_stack.weights or ())
        h = out_stack.output  # (B', N, D)
        out = self.direct(self.head_dropout(h.flatten(1)))  # (B', H, k, 1+Q)
        delta = None  # shifts the point forecast and the first quantile (the others follow it)
        if self.skip is not None:
            delta = self.skip(x.values)  # (B', H, k, 1)
        if self.future_head is not None and x.future_cov is not None:
            planned = self.future_head(x.future_cov[:, c.context_length :])  # (B', H, k, 1)
            delta = planned if delta is None else delta + planned
        if delta is not None:
            out = shift_point(out, delta)
        return denormalize(self._from_series(non_crossing(out), B), x.stats)

    # ------------------------------------------------------------------ public API

    def forward(
        self,
        past: Tensor,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
    ) -> Tensor:
        """Point forecast ``(B, H, C)`` from ``past (B, L, C)``.

        Args:
            past: the last ``L`` values of every forecast channel.
            observed: ``(B, L, C)`` bool, ``False`` where a value is missing (NaN allowed
                there); without it ``past`` must be complete.
            past_covariates: ``(B, L, Cp)`` observed-only covariates, context only.
            future_covariates: ``(B, L + H, F)`` known-future inputs.

        The autoregressive head generates ``H / s`` patches greedily (the mean), without
        gradients; it trains through :meth:`loss` (teacher forcing).
        """
        c = self.config
        if c.head == "autoregressive":
            steps = c.horizon // c.patch_stride
            return self.generate(
                past,
                steps,
                observed=observed,
                past_covariates=past_covariates,
                future_covariates=future_covariates,
            )
        x = self._series(past, observed, past_covariates, future_covariates, c.horizon)
        return self._direct(x)[..., 0]

    def forward_with_attention(
        self,
        past: Tensor,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, ...]]:
        """Point forecast (as :meth:`forward`) and the causal self-attention weights over the
        context's patches, per layer ``(B', heads, N, N)`` (``B' = B * C`` channel-independent).

        Direct head: one pass on the explicit attention path (the forecast equals
        :meth:`forward`'s to float rounding). Autoregressive head: the forecast is
        :meth:`forward`'s generation and the weights come from the context pass that starts it.
        """
        c = self.config
        x = self._series(past, observed, past_covariates, future_covariates, c.horizon)
        weights: list[Tensor] = []
        if c.head == "direct":
            return self._direct(x, weights)[..., 0], tuple(weights)
        tokens = self._embed(x.values, x.observed, x.past_cov, x.future_cov, x.context)
        context = self.decoder(tokens, need_weights=True).weights or ()
        return self(past, observed, past_covariates, future_covariates), tuple(context)

    def forecast_with_quantiles(
        self,
        past: Tensor,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """The point forecast ``(B, H, C)`` and the quantiles ``(B, H, C, Q)`` (``None``
        without quantiles): :meth:`forward` and :meth:`predict_quantiles` together, in one
        pass of the direct head (the autoregressive head runs both)."""
        c = self.config
        if c.head == "direct":
            x = self._series(past, observed, past_covariates, future_covariates, c.horizon)
            out = self._direct(x)
            return out[..., 0], (out[..., 1:] if c.quantiles else None)
        point = self(past, observed, past_covariates, future_covariates)
        if not c.quantiles:
            return point, None
        return point, self.predict_quantiles(past, observed, past_covariates, future_covariates)

    def predict_quantiles(
        self,
        past: Tensor,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
        *,
        num_samples: int = 200,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Forecast quantiles ``(B, H, C, Q)`` at ``config.quantiles`` (never crossing).

        Direct head: the quantile outputs. Autoregressive head: empirical quantiles of
        ``num_samples`` sampled trajectories.
        """
        c = self.config
        if not c.quantiles:
            raise ValueError("this model was built without quantiles (ForecasterConfig.quantiles)")
        if c.head == "direct":
            x = self._series(past, observed, past_covariates, future_covariates, c.horizon)
            return self._direct(x)[..., 1:]
        paths = self.generate(
            past,
            c.horizon // c.patch_stride,
            observed=observed,
            past_covariates=past_covariates,
            future_covariates=future_covariates,
            num_samples=num_samples,
            generator=generator,
        )  # (B, S, H, C)
        levels = torch.tensor(c.quantiles, dtype=paths.dtype, device=paths.device)
        return torch.quantile(paths, levels, dim=1).permute(1, 2, 3, 0)  # (B, H, C, Q)

    def next_patches(
        self,
        past: Tensor,
        future: Tensor | None = None,
        *,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
    ) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: every position's prediction of its next ``s`` steps, in parallel.

        The input is ``past`` followed by all but the last ``s`` steps of ``future (B, H',
        C)`` (``H'`` a multiple of ``s``, default none); position ``i`` sees patches ``0..i``
        only (causal mask). Returns mean and scale (``None`` without quantiles), each
        ``(B, N', s, C)`` in the units of ``past``; the targets are the ``s`` steps that follow
        each patch. With RevIN, a context position is normalised and mapped back with the
        statistics of the context up to the end of its patch (causal RevIN), later positions
        with the whole context's, as in :meth:`generate`.
        """
        c = self.config
        if c.head != "autoregressive":
            raise ValueError("next_patches needs a model built with head='autoregressive'")
        s = c.patch_stride
        extra = 0 if future is None else future.shape[1]
        if future is not None and (
            future.dim() != 3 or future.shape[2] != c.n_channels or extra % s
        ):
            raise ValueError(
                f"future must have shape (B, H', {c.n_channels}) with H' a multiple of "
                f"stride={s}, found {tuple(future.shape)}"
            )
        x = self._series(past, observed, past_covariates, future_covariates, max(extra, s))
        B = past.shape[0]
        values, seen = x.values, x.observed
        if future is not None and extra > s:
            fut = torch.nan_to_num(normalize(future[:, : extra - s], x.stats))
            values = torch.cat([values, self._to_series(fut)], dim=1)
            seen = torch.cat([seen, torch.ones_like(self._to_series(fut))], dim=1)
        h = self.decoder(self._embed(values, seen, x.past_cov, x.future_cov, x.context)).output
        assert self.next_patch is not None  # checked above: head="autoregressive"
        mean, scale = self.next_patch(h)  # (B', N', s, k) in each position's units
        loc, spread = self._position_stats(x, h.shape[1])  # (B', N', 1, k)
        flat = (h.shape[0], -1, mean.shape[-1])  # (B', N'*s, k) to map back per step
        out_mean = self._from_series((mean * spread + loc).reshape(flat), B)  # (B, N'*s, C)
        out_mean = out_mean.reshape(B, -1, s, c.n_channels)
        if scale is None:
            return out_mean, None
        out_scale = self._from_series((scale * spread).reshape(flat), B)
        return out_mean, out_scale.reshape(B, -1, s, c.n_channels)

    @torch.no_grad()
    def generate(
        self,
        past: Tensor,
        steps: int,
        *,
        observed: Tensor | None = None,
        past_covariates: Tensor | None = None,
        future_covariates: Tensor | None = None,
        num_samples: int = 0,
        use_cache: bool = True,
        generator: torch.Generator | None = None,
    ) -> Tensor:
        """Generate ``steps`` patches of ``s`` steps, each fed back in as the next input.

        Args:
            past: ``(B, L, C)``; observed, past_covariates as in :meth:`forward`.
            steps: patches to generate (``steps * s`` time steps).
            future_covariates: ``(B, L + steps * s, F)`` known-future inputs.
            num_samples: ``0``: greedy, the mean of every step. ``S > 0``: ``S`` sampled
                trajectories (Gaussian steps; needs a model built with quantiles).
            use_cache: keep keys and values (:class:`mfgtx.nn.KVCache`) so that each step
                runs one new position; ``False`` recomputes the whole sequence (reference).
            generator: random numbers for sampling.

        Returns:
            ``(B, steps * s, C)`` greedy, or ``(B, S, steps * s, C)`` sampled.
        """
        c = self.config
        if c.head != "autoregressive":
            raise ValueError("generate needs a model built with head='autoregressive'")
        if not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive integer, found {steps!r}")
        if num_samples < 0 or (num_samples and not c.quantiles):
            raise ValueError(
                f"num_samples={num_samples}: sampling needs num_samples > 0 and a model built "
                "with quantiles (it learns a scale per step)"
            )
        assert self.next_patch is not None  # checked above: head="autoregressive"
        s, B = c.patch_stride, past.shape[0]
        was_training = self.training
        self.eval()
        try:
            x = self._series(past, observed, past_covariates, future_covariates, steps * s)
            out = generate_patches(
                self.decoder,
                self.next_patch,
                self._embed,
                x.values,
                x.observed,
                x.past_cov,
                x.future_cov,
                x.context,
                steps=steps,
                patch_len=c.patch_len,
                num_samples=num_samples,
                use_cache=use_cache,
                generator=generator,
            )  # (B'', steps*s, k)
        finally:
            self.train(was_training)
        if not num_samples:
            return denormalize(self._from_series(out, B), x.stats)
        T = out.shape[1]
        if self._ci:  # rows (b*C + ch)*S + sample
            out = out.reshape(B, c.n_channels, num_samples, T).permute(0, 2, 3, 1)
        else:
            out = out.reshape(B, num_samples, T, c.n_channels)
        return out * x.stats.std.unsqueeze(1) + x.stats.mean.unsqueeze(1)  # (B, S, T, C)

    # ------------------------------------------------------------------ training protocol

    def predict(self, batch: dict[str, Any]) -> Tensor:
        return self(
            batch["x"],
            batch.get("observed"),
            batch.get("past_covariates"),
            batch.get("future_covariates"),
        )

    def loss(self, batch: dict[str, Any]) -> Tensor:
        """Direct: MSE (+ pinball) over the horizon. Autoregressive: teacher-forced MSE (or
        Gaussian NLL with quantiles) of every position's next patch. Missing targets (NaN)
        are left out."""
        c = self.config
        past, y = batch["x"], batch["y"]
        if y.dim() != 3 or tuple(y.shape[1:]) != (c.horizon, c.n_channels):
            raise ValueError(
                f"y must have shape (B, horizon={c.horizon}, n_channels={c.n_channels}), found "
                f"{tuple(y.shape)}"
            )
        args = (batch.get("observed"), batch.get("past_covariates"), batch.get("future_covariates"))
        if c.head == "direct":
            out = self._direct(self._series(past, *args, c.horizon)).float()  # (B, H, C, 1+Q)
            return direct_loss(out, y, c.quantiles)
        mean, scale = self.next_patches(
            past, y, observed=args[0], past_covariates=args[1], future_covariates=args[2]
        )
        seen = self._seen(batch)
        full = torch.cat([torch.where(seen, past, torch.nan), y], dim=1)
        start = (c.context_length - c.patch_len) % c.patch_stride
        target = full[:, start + c.patch_len :].reshape(mean.shape)  # (B, N', s, C)
        std = instance_stats(past, seen).std if c.revin else torch.ones_like(past[:, :1])
        w = (~torch.isnan(target)).float()
        if c.revin:  # a position that saw no value of a series cannot be asked for its level
            N = c.n_patches
            ends = start + c.patch_len + c.patch_stride * torch.arange(N, device=past.device)
            saw = (prefix_stats(past, seen, ends).count > 0).float()  # (B, N, C)
            w[:, :N] = w[:, :N] * saw[:, :, None]
        return next_patch_loss(mean, scale, torch.nan_to_num(target), std, w)

    def _seen(self, batch: dict[str, Any]) -> Tensor:
        obs = batch.get("observed")
        return ~torch.isnan(batch["x"]) if obs is None else obs.bool()
