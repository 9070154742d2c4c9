"""A decoder-only token model and autoregressive generation with a KV cache.

Shape legend: ``B`` batch, ``T`` length, ``V`` vocabulary size, ``D`` ``d_model``.

:func:`generate` works with any module following :class:`Generative`: ``forward(idx,
cache=...)`` returning logits ``(B, T, V)`` and ``new_cache()``. With the cache each step
feeds one new position; without it every step recomputes the whole sequence (the reference
the cached path is tested against).
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor, nn

from mfgtx.nn.cache import KVCache
from mfgtx.nn.config import TransformerConfig
from mfgtx.nn.init import init_weights
from mfgtx.nn.stacks import Decoder

__all__ = ["CausalLM", "Generative", "generate"]


class Generative(Protocol):
    """What :func:`generate` needs from a model."""

    training: bool

    def __call__(self, idx: Tensor, *, cache: KVCache | None = None) -> Tensor: ...

    def new_cache(self) -> KVCache: ...

    def train(self, mode: bool = True) -> nn.Module: ...


class CausalLM(nn.Module):
    """Token embedding, a decoder-only stack and a linear head over the vocabulary.

    Useful for discrete event sequences (alarm codes, machine states) and as the reference
    decoder-only model of the package.

    Args:
        vocab_size: number of token ids ``V``.
        config: a :class:`~mfgtx.nn.TransformerConfig` for the decoder stack.

    Example:
        >>> lm = CausalLM(11, TransformerConfig(d_model=16, n_heads=2, d_ff=32))
        >>> lm(torch.randint(0, 11, (2, 5))).shape
        torch.Size([2, 5, 11])
    """

    def __init__(self, vocab_size: int, config: TransformerConfig) -> None:
        super().__init__()
        if vocab_size <= 0:
            raise ValueError(f"vocab_size must be positive, found {vocab_size}")
        self.vocab_size = vocab_size
        self.embed = nn.Embedding(vocab_size, config.d_model)
        self.decoder = Decoder(config, cross_attention=False)  # initialises itself
        self.head = nn.Linear(config.d_model, vocab_size, bias=False)
        init_weights(self.embed, n_layers=config.n_layers)
        init_weights(self.head, n_layers=config.n_layers)

    def new_cache(self) -> KVCache:
        return self.decoder.new_cache()

    def forward(self, idx: Tensor, *, cache: KVCache | None = None) -> Tensor:
        """Token ids ``(B, T)`` -> next-token logits ``(B, T, V)``."""
        if idx.dim() != 2 or idx.dtype not in (torch.int64, torch.int32):
            raise ValueError(
                f"idx must be integer token ids (B, T), found {idx.dtype} {tuple(idx.shape)}"
            )
        if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= self.vocab_size):
            raise ValueError(
                f"token ids must be in [0, {self.vocab_size}), found "
                f"[{int(idx.min())}, {int(idx.max())}]"
            )
        x = self.embed(idx)  # (B, T, D)
        return self.head(self.decoder(x, cache=cache).output)  # (B, T, V)


def _next_token(
    logits: Tensor,
    *,
    do_sample: bool,
    temperature: float,
    top_k: int | None,
    generator: torch.Generator | None,
) -> Tensor:
    """``logits (B, V)`` -> ``(B, 1)`` token ids."""
    if not do_sample:
        return logits.argmax(dim=-1, keepdim=True)
    logits = logits.float() / temperature
    if top_k is not None:
        kth = torch.topk(logits, min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    probs = torch.softmax(logits, dim=-1)
    return torch.multinomial(probs, 1, generator=generator)


@torch.no_grad()
def generate(
    model: Generative,
    idx: Tensor,
    max_new_tokens: int,
    *,
    do_sample: bool = False,
    temperature: float = 1.0,
    top_k: int | None = None,
    use_cache: bool = True,
    generator: torch.Generator | None = None,
) -> Tensor:
    """Extend ``idx (B, T0)`` by ``max_new_tokens`` tokens; returns ``(B, T0 + N)``.

    Greedy (argmax) unless ``do_sample``; sampling divides logits by ``temperature`` and keeps
    the ``top_k`` most likely tokens. The model runs in eval mode (no dropout) and is put back
    in its previous mode afterwards.

    Example:
        >>> lm = CausalLM(11, TransformerConfig(d_model=16, n_heads=2, d_ff=32))
        >>> prompt = torch.zeros(2, 3, dtype=torch.long)
        >>> generate(lm, prompt, 4).shape
        torch.Size([2, 7])
    """
    if max_new_tokens < 0:
        raise ValueError(f"max_new_tokens must be >= 0, found {max_new_tokens}")
    if do_sample and temperature <= 0:
        raise ValueError(f"temperature must be positive when sampling, found {temperature}")
    if top_k is not None and top_k <= 0:
        raise ValueError(f"top_k must be positive, found {top_k}")
    if idx.dim() != 2 or idx.shape[1] == 0:
        raise ValueError(f"idx must be a non-empty (B, T0) prompt, found shape {tuple(idx.shape)}")
    was_training = model.training
    model.train(False)
    try:
        cache = model.new_cache() if use_cache else None
        step_input = idx
        for _ in range(max_new_tokens):
            logits = model(step_input if use_cache else idx, cache=cache)[:, -1]  # (B, V)
            nxt = _next_token(
                logits,
                do_sample=do_sample,
                temperature=temperature,
                top_k=top_k,
                generator=generator,
            )
            idx = torch.cat([idx, nxt], dim=1)
            step_input = nxt
    finally:
        model.train(was_training)
    return idx
