"""Sensor-window Transformer encoder for lot quality (classes) and remaining useful life.

Shape legend: ``B`` batch, ``T`` time steps, ``C`` sensors, ``P`` patch length, ``N``
patches (tokens), ``D`` ``d_model``, ``K`` outputs (targets or classes), ``Q`` quantiles.

A window ``(B, T, C)`` and its observation mask become tokens: one per time step
(``patch_len=1``) or one per patch of ``P`` steps. Each token sees the values (missing set
to 0) *and* the mask, so a gap is information, not a fake zero; a patch with no observed value
at all is masked out of attention. Patches are aligned to the end of the window (the most
recent steps are always used; up to ``stride - 1`` leading steps may be left out).
Channel-mixing tokens embed all sensors of a patch together; channel-independent tokens embed
each sensor on its own (PatchTST-style) and the per-sensor summaries are concatenated.

With ``tokens="sensor"`` the roles turn (iTransformer-style): each sensor's whole window is
one token, attention mixes sensors, and positions index sensors. A window shorter than
``max_len`` is padded at the start with missing values, so the token always covers
``max_len`` steps ending at the window's last step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from mfgtx.models._settings import StackSettings, stack_config
from mfgtx.models.loss import ClassLoss
from mfgtx.nn import Encoder, StackOutput, TransformerConfig, init_weights

__all__ = ["MaskedPretraining", "SensorEncoder", "SensorEncoderConfig"]


@dataclass(frozen=True)
class SensorEncoderConfig:
    """Configuration of a :class:`SensorEncoder`.

    Args:
        n_channels: number of sensors ``C``.
        max_len: longest window ``T`` the model accepts.
        task: ``"regression"`` (RUL, quality value) or ``"classification"`` (pass/fail,
            defect class).
        n_outputs: regression targets, or number of classes (>= 2) for classification.
        quantiles: regression only: also predict these quantiles (pinball loss) for an
            interval, e.g. ``(0.1, 0.9)``.
        tokens: ``"time"``: one token per time step or patch (``patch_len``, ``stride``,
            ``channel_independent`` apply); ``"sensor"``: one token per sensor holding its
            whole window (the three patch fields must stay at their defaults).
        patch_len: time steps per token (1 = one token per step).
        stride: steps between patch starts (default ``patch_len``: no overlap).
        channel_independent: embed each sensor separately (shared weights).
        d_model, n_heads, n_layers, d_ff, dropout: the Transformer encoder.
        positional: ``"sinusoidal"``, ``"learned"`` or ``"rotary"``.
        norm_first: Pre-LN (default) or Post-LN blocks.
        pooling: ``"mean"`` over observed tokens, or a ``"cls"`` token.
        target_scale: regression targets are divided by this inside the model (e.g. 125 for
            RUL capped at 125), so the network works in units near 1; predictions come back
            in target units.

    The defaults are the ``model`` section's of a sensor job (:class:`mfgtx.kinds.SensorSection`
    takes them from here), sized for plant data sets of a few dozen lots: ``d_model`` 32, 2
    layers, ``d_ff`` 64. One exception: ``task`` is ``"regression"`` here (with one output)
    and ``"classification"`` in a job file, where the classes come from the data. A
    classifier's class weights are its training loss's (:class:`~mfgtx.models.ClassLoss`,
    given to :class:`SensorEncoder`), not the config's.

    Example:
        >>> SensorEncoderConfig(n_channels=14, max_len=30, patch_len=5).n_patches(30)
        6
    """

    n_channels: int
    max_len: int = 512
    task: Literal["regression", "classification"] = "regression"
    n_outputs: int = 1
    quantiles: tuple[float, ...] = ()
    tokens: Literal["time", "sensor"] = "time"
    patch_len: int = 1
    stride: int | None = None
    channel_independent: bool = False
    d_model: int = 32
    n_heads: int = 4
    n_layers: int = 2
    d_ff: int = 64
    dropout: float = 0.1
    positional: Literal["sinusoidal", "learned", "rotary"] = "sinusoidal"
    norm_first: bool = True
    pooling: Literal["mean", "cls"] = "mean"
    target_scale: float = 1.0

    #: keys that configs saved by earlier versions hold and that no longer shape the model
    #: (``class_weights`` is the training loss's now): dropped when such a bundle loads
    RETIRED_KEYS: ClassVar[frozenset[str]] = frozenset({"class_weights"})

    def __post_init__(self) -> None:
        for name in ("n_channels", "max_len", "n_outputs"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive integer, found {v!r}")
        object.__setattr__(self, "quantiles", tuple(float(q) for q in self.quantiles))
        SensorEncoderConfig.check(self)
        if self.patch_len > self.max_len:
            raise ValueError(f"patch_len={self.patch_len} exceeds max_len={self.max_len}")
        if self.task == "classification" and self.n_outputs < 2:
            raise ValueError(f"classification needs n_outputs >= 2 classes, found {self.n_outputs}")

    @staticmethod
    def check(settings: EncoderSettings) -> None:
        """Refuse settings the encoder cannot take whatever the data: each field's range and
        the rules between fields that no data decides (the window length, sensors and
        outputs are checked by the config itself).

        The config calls it, and so does a sensor job's ``model`` section
        (:class:`mfgtx.kinds.SensorSection`, same names) when the job file is read: one copy
        of each rule, refused before any data is read.

        Raises:
            ValueError: naming the field, its value and what is expected.

        Example:
            >>> SensorEncoderConfig(n_channels=3, d_model=30, n_heads=4)
            Traceback (most recent call last):
            ...
            ValueError: d_model=30 is not divisible by n_heads=4
        """
        s = settings
        if not isinstance(s.patch_len, int) or isinstance(s.patch_len, bool) or s.patch_len < 1:
            raise ValueError(f"patch_len must be a positive integer, found {s.patch_len!r}")
        if s.stride is not None and (not isinstance(s.stride, int) or s.stride < 1):
            raise ValueError(f"stride must be a positive integer or None, found {s.stride!r}")
        if s.tokens not in ("time", "sensor"):
            raise ValueError(f"tokens must be 'time' or 'sensor', found {s.tokens!r}")
        if s.tokens == "sensor" and (
            s.patch_len != 1 or s.stride is not None or s.channel_independent
        ):
            raise ValueError(
                "tokens='sensor' makes one token per sensor: leave patch_len=1, stride=None and "
                f"channel_independent=False, found patch_len={s.patch_len}, "
                f"stride={s.stride}, channel_independent={s.channel_independent}"
            )
        if s.task not in ("regression", "classification"):
            raise ValueError(f"task must be 'regression' or 'classification', found {s.task!r}")
        if s.quantiles and (
            s.task != "regression" or not all(0 < float(q) < 1 for q in s.quantiles)
        ):
            raise ValueError(
                f"quantiles need task='regression' and values in (0, 1), found {s.quantiles}"
            )
        if s.pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', found {s.pooling!r}")
        if not s.target_scale > 0:
            raise ValueError(f"target_scale must be positive, found {s.target_scale}")
        _stack(s)  # the Transformer's own rules: d_model / n_heads / positional ...

    @property
    def patch_stride(self) -> int:
        return self.stride or self.patch_len

    def n_patches(self, length: int) -> int:
        """Tokens for a window of ``length`` steps."""
        if self.tokens == "sensor":
            return self.n_channels
        return (length - self.patch_len) // self.patch_stride + 1

    @property
    def transformer(self) -> TransformerConfig:
        return _stack(self, max_len=self.n_patches(self.max_len) + 1)


class EncoderSettings(StackSettings, Protocol):
    """The settings of a :class:`SensorEncoderConfig` that no data decides: the config's own,
    or those of a job section with the same names (:meth:`SensorEncoderConfig.check`)."""

    @property
    def task(self) -> str: ...
    @property
    def quantiles(self) -> tuple[float, ...]: ...
    @property
    def tokens(self) -> str: ...
    @property
    def patch_len(self) -> int: ...
    @property
    def stride(self) -> int | None: ...
    @property
    def channel_independent(self) -> bool: ...
    @property
    def positional(self) -> Literal["sinusoidal", "learned", "rotary"]: ...
    @property
    def norm_first(self) -> bool: ...
    @property
    def pooling(self) -> str: ...
    @property
    def target_scale(self) -> float: ...


def _stack(s: EncoderSettings, max_len: int = 2048) -> TransformerConfig:
    """The encoder stack's config of ``s`` (``max_len``: tokens, which the data decides)."""
    return stack_config(s, norm_first=s.norm_first, positional=s.positional, max_len=max_len)


class Tokens(NamedTuple):
    """Patches of one batch. ``B' = B`` (channel-mixing) or ``B * C`` (channel-independent);
    ``k`` channels per token. Sensor tokens: ``N = C`` and ``P*k = max_len``."""

    values: Tensor  # (B', N, P*k) patch values, missing set to 0
    seen: Tensor  # (B', N, P*k) bool, which of those values were observed
    emb: Tensor  # (B', N, D) patch embeddings
    key_mask: Tensor  # (B', N) bool, patches with at least one observed value


def _observed(x: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor]:
    """Zero the missing values and return ``(x, observed)``; ``None`` mask: NaN = missing."""
    observed = ~torch.isnan(x) if mask is None else mask.bool() & ~torch.isnan(x)
    return torch.where(observed, x, torch.zeros((), dtype=x.dtype, device=x.device)), observed


def _token_width(c: SensorEncoderConfig) -> int:
    """Values per token: ``P*k`` (time tokens) or ``max_len`` (sensor tokens)."""
    if c.tokens == "sensor":
        return c.max_len
    return c.patch_len * (1 if c.channel_independent else c.n_channels)


class SensorEncoder(nn.Module):
    """Transformer encoder over sensor windows with a regression or classification head.

    Args:
        config: a :class:`SensorEncoderConfig`.
        loss: a classifier's training loss (class weights); default: plain cross-entropy.
            It shapes training only: a bundle keeps the config, not the loss.

    Example:
        >>> cfg = SensorEncoderConfig(n_channels=3, max_len=20, patch_len=4, d_model=16,
        ...                           n_heads=2, n_layers=1, d_ff=32)
        >>> model = SensorEncoder(cfg).eval()
        >>> x = torch.randn(2, 20, 3)
        >>> x[0, 5:9, 1] = float("nan")          # a gap in one sensor
        >>> model(x).shape
        torch.Size([2, 1])
    """

    #: how :mod:`mfgtx.explain` draws its attention maps (the ``sensor`` module there)
    explained_as = "sensor"

    #: tensors that bundles saved by earlier versions hold and this model no longer has
    #: (the class weights, now the training loss's): ignored when such a bundle loads
    RETIRED_TENSORS: ClassVar[frozenset[str]] = frozenset({"class_weights"})

    def __init__(self, config: SensorEncoderConfig, *, loss: ClassLoss | None = None) -> None:
        super().__init__()
        self.config = c = config
        self.class_loss = loss or ClassLoss()  # how a classifier trains; not saved
        weights = self.class_loss.class_weights
        if weights is not None and (c.task != "classification" or len(weights) != c.n_outputs):
            raise ValueError(
                f"class_weights needs task='classification' and one weight per class "
                f"({c.n_outputs}), found {weights}"
            )
        per_token = 2 * _token_width(c)  # values and their observed flags
        self.embed = nn.Linear(per_token, c.d_model)
        self.cls = nn.Parameter(torch.zeros(1, 1, c.d_model)) if c.pooling == "cls" else None
        self.encoder = Encoder(c.transformer)  # initialises itself
        summary = c.d_model * (c.n_channels if c.channel_independent else 1)
        self.head = nn.Linear(summary, c.n_outputs)
        self.quantile_head = (
            nn.Linear(summary, c.n_outputs * len(c.quantiles)) if c.quantiles else None
        )
        init_weights(self.embed, n_layers=c.n_layers)
        init_weights(self.head, n_layers=c.n_layers)
        if self.quantile_head is not None:
            init_weights(self.quantile_head, n_layers=c.n_layers)

    # ------------------------------------------------------------------ tokens

    def tokens(self, x: Tensor, mask: Tensor | None = None) -> Tokens:
        """Cut ``x (B, T, C)`` into patch tokens (see :class:`Tokens`)."""
        c = self.config
        if x.dim() != 3 or x.shape[-1] != c.n_channels:
            raise ValueError(f"x must have shape (B, T, C={c.n_channels}), found {tuple(x.shape)}")
        if mask is not None and mask.shape != x.shape:
            raise ValueError(
                f"mask must have the shape of x {tuple(x.shape)}, found {tuple(mask.shape)}"
            )
        B, T, C = x.shape
        if T < c.patch_len or T > c.max_len:
            raise ValueError(
                f"window length {T} must be in [patch_len={c.patch_len}, max_len={c.max_len}]"
            )
        x, observed = _observed(x, mask)
        if c.tokens == "sensor":
            pad = c.max_len - T  # a short window: missing steps before its start
            values = F.pad(x.transpose(1, 2), (pad, 0))  # (B, C, max_len)
            seen = F.pad(observed.transpose(1, 2), (pad, 0))  # (B, C, max_len)
            emb = self.embed(torch.cat([values, seen.to(values.dtype)], dim=-1))  # (B, C, D)
            return Tokens(values, seen, emb, seen.any(-1))
        start = (T - c.patch_len) % c.patch_stride  # align patches to the window's end
        x, observed = x[:, start:], observed[:, start:]
        if c.channel_independent:
            x = x.permute(0, 2, 1).reshape(B * C, -1, 1)  # (B*C, T', 1)
            observed = observed.permute(0, 2, 1).reshape(B * C, -1, 1)
        values = x.unfold(1, c.patch_len, c.patch_stride)  # (B', N, k, P)
        seen = observed.unfold(1, c.patch_len, c.patch_stride)  # (B', N, k, P)
        values = values.transpose(-1, -2).flatten(2)  # (B', N, P*k)
        seen = seen.transpose(-1, -2).flatten(2)  # (B', N, P*k)
        emb = self.embed(torch.cat([values, seen.to(values.dtype)], dim=-1))  # (B', N, D)
        return Tokens(values, seen, emb, seen.any(-1))

    def encode(
        self, emb: Tensor, key_mask: Tensor, *, need_weights: bool = False
    ) -> tuple[Tensor, StackOutput]:
        """Run the encoder on patch embeddings; returns the pooled summary ``(B', D)`` too."""
        if self.cls is not None:
            cls = self.cls.expand(emb.shape[0], -1, -1)
            emb = torch.cat([cls, emb], dim=1)  # (B', 1+N, D)
            ones = torch.ones(key_mask.shape[0], 1, dtype=torch.bool, device=key_mask.device)
            key_mask = torch.cat([ones, key_mask], dim=1)
        # every token observed: pass no mask at all, so that CUDA can run FlashAttention (any
        # explicit mask sends it to the memory-efficient kernel); the CPU flash kernel takes both.
        # Traced or compiled (ONNX export, torch.compile), the mask always goes in: the check
        # reads the data, and a graph must not keep the answer of its example.
        tracing = torch.jit.is_tracing() or torch.compiler.is_compiling()
        attend = None if not tracing and bool(key_mask.all()) else key_mask
        out = self.encoder(emb, key_mask=attend, need_weights=need_weights)
        if self.cls is not None:
            return out.output[:, 0], out
        w = key_mask.unsqueeze(-1).to(out.output.dtype)  # (B', N, 1)
        pooled = (out.output * w).sum(1) / w.sum(1).clamp(min=1.0)  # mean over observed tokens
        return pooled, out

    def _summary(self, x: Tensor, mask: Tensor | None) -> Tensor:
        t = self.tokens(x, mask)
        pooled, _ = self.encode(t.emb, t.key_mask)
        if self.config.channel_independent:
            pooled = pooled.reshape(x.shape[0], -1)  # (B, C*D)
        return pooled

    # ------------------------------------------------------------------ outputs

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Windows ``(B, T, C)`` (and observed mask, or NaN for missing) -> predictions.

        Regression: ``(B, K)`` in target units. Classification: logits ``(B, K)``.
        """
        out = self.head(self._summary(x, mask))
        return out * self.config.target_scale if self.config.task == "regression" else out

    def forward_quantiles(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """Regression quantiles ``(B, K, Q)`` in target units (sorted along ``Q``)."""
        if self.quantile_head is None:
            raise ValueError("this model was built without quantiles")
        q = self.quantile_head(self._summary(x, mask)).view(x.shape[0], self.config.n_outputs, -1)
        return torch.sort(q, dim=-1).values * self.config.target_scale

    def forward_with_attention(
        self, x: Tensor, mask: Tensor | None = None
    ) -> tuple[Tensor, tuple[Tensor, ...], Tensor]:
        """Predictions (as :meth:`forward`) and attention weights from one pass.

        Runs the explicit attention path (the fused kernel returns no weights); the
        predictions equal :meth:`forward`'s to float rounding.

        Returns:
            ``(prediction (B, K), weights, key_mask)``: per-layer weights ``(B', H, N', N')``
            and the ``(B', N')`` mask of real tokens, where ``N' = N + 1`` with a CLS token
            (it comes first) and ``B' = B * C`` for channel-independent tokens.
        """
        t = self.tokens(x, mask)
        pooled, out = self.encode(t.emb, t.key_mask, need_weights=True)
        if self.config.channel_independent:
            pooled = pooled.reshape(x.shape[0], -1)  # (B, C*D)
        pred = self.head(pooled)
        if self.config.task == "regression":
            pred = pred * self.config.target_scale
        key_mask = t.key_mask
        if self.cls is not None:
            ones = torch.ones(key_mask.shape[0], 1, dtype=torch.bool, device=key_mask.device)
            key_mask = torch.cat([ones, key_mask], dim=1)
        return pred, out.weights or (), key_mask

    def attention_weights(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, ...]:
        """Per-layer attention weights ``(B', H, N', N')`` (see :meth:`forward_with_attention`)."""
        return self.forward_with_attention(x, mask)[1]

    # ------------------------------------------------------------------ training protocol

    def predict(self, batch: dict[str, Any]) -> Tensor:
        return self(batch["x"], batch.get("observed"))

    def loss(self, batch: dict[str, Any]) -> Tensor:
        c = self.config
        x, mask, y = batch["x"], batch.get("observed"), batch["y"]
        summary = self._summary(x, mask)
        if c.task == "classification":
            logits = self.head(summary).float()
            return self.class_loss(logits, y.long().view(-1))
        target = y.float().view(x.shape[0], -1) / c.target_scale  # (B, K)
        loss = F.mse_loss(self.head(summary).float(), target)
        if self.quantile_head is not None:
            q = self.quantile_head(summary).float().view(x.shape[0], c.n_outputs, -1)
            levels = torch.tensor(c.quantiles, device=q.device)  # (Q,)
            err = target.unsqueeze(-1) - q  # (B, K, Q)
            loss = loss + torch.maximum(levels * err, (levels - 1) * err).mean()
        return loss


class MaskedPretraining(nn.Module):
    """Self-supervised pretraining of a :class:`SensorEncoder`: rebuild masked patches.

    A random ``mask_ratio`` of the observed patches (with ``tokens="sensor"``: of the
    sensors, each rebuilt from the others) is replaced by a learned mask token
    (BERT-style); a linear head reconstructs their values from the encoder output, and the
    loss is the squared error over the observed values of the masked patches only. The
    encoder (embedding, positions, blocks) is shared with ``model``, so fine-tuning
    ``model`` afterwards starts from the pretrained weights. Train it with
    :func:`mfgtx.train.fit` on unlabelled windows.

    Args:
        model: the encoder to pretrain (its weights are updated in place).
        mask_ratio: share of observed patches to hide, in (0, 1).
    """

    def __init__(self, model: SensorEncoder, mask_ratio: float = 0.4) -> None:
        super().__init__()
        if not 0 < mask_ratio < 1:
            raise ValueError(f"mask_ratio must be in (0, 1), found {mask_ratio}")
        c = model.config
        self.model, self.mask_ratio = model, mask_ratio
        self.mask_token = nn.Parameter(torch.zeros(1, 1, c.d_model))
        self.reconstruct = nn.Linear(c.d_model, _token_width(c))
        init_weights(self.reconstruct, n_layers=c.n_layers)

    def _run(self, batch: dict[str, Any]) -> tuple[Tensor, Tokens, Tensor]:
        t = self.model.tokens(batch["x"], batch.get("observed"))
        noise = torch.rand(t.key_mask.shape, device=t.emb.device)
        hidden = (noise < self.mask_ratio) & t.key_mask  # (B', N) patches to rebuild
        emb = torch.where(hidden.unsqueeze(-1), self.mask_token.to(t.emb.dtype), t.emb)
        _, out = self.model.encode(emb, t.key_mask)
        tokens = out.output[:, 1:] if self.model.cls is not None else out.output  # (B', N, D)
        return self.reconstruct(tokens), t, hidden

    def loss(self, batch: dict[str, Any]) -> Tensor:
        recon, t, hidden = self._run(batch)  # recon (B', N, P*k)
        weight = (t.seen & hidden.unsqueeze(-1)).to(torch.float32)
        err = (recon.float() - t.values.float()) ** 2 * weight
        return err.sum() / weight.sum().clamp(min=1.0)

    def predict(self, batch: dict[str, Any]) -> Tensor:
        return self._run(batch)[0]
