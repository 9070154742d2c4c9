"""mfgtx.nn: a small, exact Transformer library on PyTorch's fused attention kernels.

Masks everywhere are boolean with ``True`` = may attend (the convention of
:func:`torch.nn.functional.scaled_dot_product_attention`). This subpackage imports nothing
else from mfgtx.
"""

from mfgtx.nn.attention import AttentionOutput, KernelWarning, attention, causal_mask
from mfgtx.nn.blocks import BlockOutput, DecoderBlock, EncoderBlock
from mfgtx.nn.cache import KVCache, LayerKV
from mfgtx.nn.config import TransformerConfig
from mfgtx.nn.dropout import Dropout
from mfgtx.nn.droppath import DropPath, drop_path
from mfgtx.nn.feedforward import FeedForward
from mfgtx.nn.generate import CausalLM, generate
from mfgtx.nn.init import init_weights
from mfgtx.nn.mha import MultiHeadAttention
from mfgtx.nn.positional import (
    ALiBiBias,
    LearnedPositionalEmbedding,
    RelativePositionBias,
    RotaryEmbedding,
    SinusoidalPositionalEncoding,
    alibi_slopes,
    sinusoidal_table,
)
from mfgtx.nn.stacks import Decoder, Encoder, EncoderDecoder, StackOutput

__all__ = [
    "ALiBiBias",
    "AttentionOutput",
    "BlockOutput",
    "CausalLM",
    "Decoder",
    "DecoderBlock",
    "DropPath",
    "Dropout",
    "Encoder",
    "EncoderBlock",
    "EncoderDecoder",
    "FeedForward",
    "KVCache",
    "KernelWarning",
    "LayerKV",
    "LearnedPositionalEmbedding",
    "MultiHeadAttention",
    "RelativePositionBias",
    "RotaryEmbedding",
    "SinusoidalPositionalEncoding",
    "StackOutput",
    "TransformerConfig",
    "alibi_slopes",
    "attention",
    "causal_mask",
    "drop_path",
    "generate",
    "init_weights",
    "sinusoidal_table",
]
