"""Encoder/decoder blocks: parity with PyTorch's layers in both norm orders."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mfgtx.nn import DecoderBlock, EncoderBlock

B, T, S, D, H, F = 2, 6, 4, 16, 4, 32


def randomise(module: nn.Module) -> None:
    with torch.no_grad():
        for p in module.parameters():
            p.normal_(0, 0.3)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("activation", ["relu", "gelu"])
def test_encoder_block_matches_torch(norm_first: bool, activation: str) -> None:
    ref = nn.TransformerEncoderLayer(
        D, H, F, dropout=0.1, activation=activation, batch_first=True, norm_first=norm_first
    )
    randomise(ref)
    ref.eval()
    ours = EncoderBlock.from_torch(ref).eval()
    assert ours.norm_first is norm_first
    x = torch.randn(B, T, D)
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[1, 4:] = True  # torch: True = padding
    expected = ref(x, src_key_padding_mask=pad)
    torch.testing.assert_close(ours(x, key_mask=~pad).output, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ours(x).output, ref(x), atol=1e-5, rtol=1e-5)
    causal = nn.Transformer.generate_square_subsequent_mask(T)
    torch.testing.assert_close(
        ours(x, is_causal=True).output,
        ref(x, src_mask=causal, is_causal=True),
        atol=1e-5,
        rtol=1e-5,
    )


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_block_matches_torch(norm_first: bool) -> None:
    ref = nn.TransformerDecoderLayer(D, H, F, batch_first=True, norm_first=norm_first)
    randomise(ref)
    ref.eval()
    ours = DecoderBlock.from_torch(ref).eval()
    x, mem = torch.randn(B, T, D), torch.randn(B, S, D)
    mem_pad = torch.zeros(B, S, dtype=torch.bool)
    mem_pad[0, -1] = True
    expected = ref(
        x,
        mem,
        tgt_mask=nn.Transformer.generate_square_subsequent_mask(T),
        memory_key_padding_mask=mem_pad,
        tgt_is_causal=True,
    )
    got = ours(x, mem, is_causal=True, memory_key_mask=~mem_pad)
    torch.testing.assert_close(got.output, expected, atol=1e-5, rtol=1e-5)


def test_decoder_block_weights_shapes_and_memory_checks() -> None:
    blk = DecoderBlock(D, H, F).eval()
    x, mem = torch.randn(B, T, D), torch.randn(B, S, D)
    out = blk(x, mem, need_weights=True)
    assert out.weights.shape == (B, H, T, T) and out.cross_weights.shape == (B, H, T, S)
    assert torch.all(out.weights.triu(1) == 0)  # causal by default
    with pytest.raises(ValueError, match="needs memory"):
        blk(x)
    with pytest.raises(ValueError, match="without cross_attention"):
        DecoderBlock(D, H, F, cross_attention=False)(x, mem)


def test_from_torch_refuses_unknown_activation() -> None:
    ref = nn.TransformerEncoderLayer(D, H, F, activation=nn.SiLU(), batch_first=True)
    with pytest.raises(ValueError, match="not relu or exact gelu"):
        EncoderBlock.from_torch(ref)


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("block_of", ["encoder", "decoder"])
def test_residual_adds_equal_pytorchs_mixed_dtype_add_bit_for_bit(
    monkeypatch, norm_first: bool, block_of: str
) -> None:
    """Under bf16 autocast the residual stream is fp32 and the sublayers' outputs bf16: the
    cast-then-add of ``_add`` must give exactly what ``x + h`` gives."""
    import importlib

    blocks = importlib.import_module("mfgtx.nn.blocks")
    add = blocks._add
    torch.manual_seed(0)
    if block_of == "encoder":
        block = EncoderBlock(16, 2, 32, norm_first=norm_first).eval()
        run = lambda: block(x).output  # noqa: E731
    else:
        block = DecoderBlock(16, 2, 32, norm_first=norm_first).eval()
        run = lambda: block(x, torch.randn(2, 3, 16, generator=g)).output  # noqa: E731
    x = torch.randn(2, 5, 16)
    g = torch.Generator().manual_seed(1)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        ours = run()
        monkeypatch.setattr(blocks, "_add", lambda a, b: a + b)
        g.manual_seed(1)
        plain = run()
    assert ours.dtype == plain.dtype == torch.float32
    assert torch.equal(ours, plain)
    for a, b in ((torch.ones(3), torch.ones(3, dtype=torch.bfloat16) / 3),
                 (torch.ones(3, dtype=torch.bfloat16) / 3, torch.ones(3))):  # fmt: skip
        assert torch.equal(add(a, b), a + b) and add(a, b).dtype == torch.float32


# --- stochastic depth (drop_path) ---------------------------------------------------------------


def test_drop_path_is_the_identity_in_eval_and_at_zero() -> None:
    torch.manual_seed(0)
    plain = EncoderBlock(D, H, F, norm_first=True, dropout=0.1)
    randomise(plain)
    dropping = EncoderBlock(D, H, F, norm_first=True, dropout=0.1, drop_path=0.5)
    assert list(dropping.state_dict()) == list(plain.state_dict())  # no new parameters
    dropping.load_state_dict(plain.state_dict())
    x = torch.randn(B, T, D)
    assert torch.equal(dropping.eval()(x).output, plain.eval()(x).output)
    at_zero = EncoderBlock(D, H, F, norm_first=True, dropout=0.1, drop_path=0.0)
    at_zero.load_state_dict(plain.state_dict())
    torch.manual_seed(3)
    expected = plain.train()(x).output  # dropout only
    torch.manual_seed(3)
    assert torch.equal(at_zero.train()(x).output, expected)


def test_drop_path_skips_the_whole_block_per_sample_and_scales_what_it_keeps() -> None:
    p, n = 0.4, 256
    torch.manual_seed(0)
    block = EncoderBlock(D, H, F, norm_first=True, drop_path=p)  # no dropout: only drop-path
    randomise(block)
    x = torch.randn(n, T, D)
    update = block.eval()(x).output - x  # (n, T, D) the block's whole residual update
    out = block.train()(x).output
    dropped = (out == x).flatten(1).all(1)  # (n,)
    assert 0.25 * n < dropped.sum() < 0.55 * n  # about p of the samples
    kept = ~dropped
    torch.testing.assert_close(out[kept], x[kept] + update[kept] / (1 - p), atol=1e-5, rtol=1e-5)


def test_drop_path_needs_pre_ln_and_a_probability_below_one() -> None:
    with pytest.raises(ValueError, match=r"drop_path=0.1 needs a Pre-LN block"):
        EncoderBlock(D, H, F, norm_first=False, drop_path=0.1)
    for p in (1.0, -0.1):
        with pytest.raises(ValueError, match=r"drop_path must be in \[0, 1\)"):
            EncoderBlock(D, H, F, norm_first=True, drop_path=p)
