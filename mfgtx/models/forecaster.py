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

This module holds the model and its public API; inputs become tokens in
:mod:`~mfgtx.models.forecaster_tokens`, the heads and their losses are in
:mod:`~mfgtx.models.forecaster_heads`, the linear skip and its ridge fit in
:mod:`~mfgtx.models.forecaster_skip`, generation in :mod:`~mfgtx.models.forecaster_generate`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
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
from mfgtx.models.forecaster_skip import LinearSkip
from mfgtx.models.forecaster_tokens import (
    Layout,
    PatchEmbedding,
    Series,
    normalised,
    position_stats,
    prepare,
)
from mfgtx.models.revin import denormalize, instance_stats, normalize, prefix_stats
from mfgtx.nn import Decoder, Dropout, init_weights

__all__ = ["CausalForecaster", "ForecasterConfig"]


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

    #: how :mod:`mfgtx.explain` draws its attention maps (the ``forecast`` module there)
    explained_as = "forecast"

    def __init__(self, config: ForecasterConfig) -> None:
        super().__init__()
        self.config = c = config
        k = 1 if c.channel_independent else c.n_channels
        s, H, Q = c.patch_stride, c.horizon, len(c.quantiles)
        self.embed = PatchEmbedding(c)
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
        self._layout = Layout.of(c)

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
                values, _, stats = normalised(
                    c, past[part], None if observed is None else observed[part]
                )
                X = self._layout.to_series(values).transpose(1, 2).reshape(-1, L).double()  # (R, L)
                Y = self._layout.to_series(normalize(future[part], stats)).transpose(1, 2)
                Y = Y.reshape(-1, H).double()  # (R, H)
                w = (  # (R, 1): a row's error in the input's units is its scale times its own
                    self._layout.to_series(stats.std).transpose(1, 2).reshape(-1, 1).double() ** 2
                    if weighted
                    else torch.ones(X.shape[0], 1, dtype=torch.float64, device=past.device)
                )
                yield X, Y, w

        self.skip.fit_ridge(rows(), alpha=alpha, device=past.device)
        self.skip.requires_grad_(not freeze)

    # ------------------------------------------------------------------ direct head

    def _direct(self, x: Series, weights: list[Tensor] | None = None) -> Tensor:
        """``(B, H, C, 1 + Q)`` in the context's units: the point forecast, then quantiles.

        With a ``weights`` list, the explicit attention path runs and the per-layer
        weights ``(B', heads, N, N)`` are appended to it.
        """
        assert self.direct is not None
        c = self.config
        B = x.stats.mean.shape[0]
        tokens = self.embed(x.values, x.observed, x.past_cov, x.future_cov)
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
        return denormalize(self._layout.from_series(non_crossing(out), B), x.stats)

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
        x = prepare(c, past, observed, past_covariates, future_covariates, c.horizon)
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
        x = prepare(c, past, observed, past_covariates, future_covariates, c.horizon)
        weights: list[Tensor] = []
        if c.head == "direct":
            return self._direct(x, weights)[..., 0], tuple(weights)
        tokens = self.embed(x.values, x.observed, x.past_cov, x.future_cov, x.context)
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
            x = prepare(c, past, observed, past_covariates, future_covariates, c.horizon)
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
            x = prepare(c, past, observed, past_covariates, future_covariates, c.horizon)
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
        x = prepare(c, past, observed, past_covariates, future_covariates, max(extra, s))
        B = past.shape[0]
        values, seen = x.values, x.observed
        if future is not None and extra > s:
            fut = torch.nan_to_num(normalize(future[:, : extra - s], x.stats))
            values = torch.cat([values, self._layout.to_series(fut)], dim=1)
            seen = torch.cat([seen, torch.ones_like(self._layout.to_series(fut))], dim=1)
        h = self.decoder(self.embed(values, seen, x.past_cov, x.future_cov, x.context)).output
        assert self.next_patch is not None  # checked above: head="autoregressive"
        mean, scale = self.next_patch(h)  # (B', N', s, k) in each position's units
        loc, spread = position_stats(c, x, h.shape[1])  # (B', N', 1, k)
        flat = (h.shape[0], -1, mean.shape[-1])  # (B', N'*s, k) to map back per step
        out_mean = self._layout.from_series((mean * spread + loc).reshape(flat), B)  # (B, N'*s, C)
        out_mean = out_mean.reshape(B, -1, s, c.n_channels)
        if scale is None:
            return out_mean, None
        out_scale = self._layout.from_series((scale * spread).reshape(flat), B)
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
            x = prepare(c, past, observed, past_covariates, future_covariates, steps * s)
            out = generate_patches(
                self.decoder,
                self.next_patch,
                self.embed,
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
            return denormalize(self._layout.from_series(out, B), x.stats)
        T = out.shape[1]
        if self.config.channel_independent:  # rows (b*C + ch)*S + sample
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
            out = self._direct(prepare(c, past, *args, c.horizon)).float()  # (B, H, C, 1+Q)
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
