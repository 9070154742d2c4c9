"""Stacks, KV cache and generation: invariants, flash training, cached == full decoding."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfgtx.nn import (
    CausalLM,
    Decoder,
    Encoder,
    EncoderDecoder,
    KVCache,
    TransformerConfig,
    generate,
)

B, T, D = 2, 6, 16
POSITIONALS = ["sinusoidal", "learned", "rotary", "relative", "none"]


def cfg(**kw) -> TransformerConfig:
    base = dict(d_model=D, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, max_len=128)
    return TransformerConfig(**(base | kw))


def test_encoder_trains_on_the_flash_kernel() -> None:
    enc = Encoder(cfg(dropout=0.1))
    head = torch.nn.Linear(D, 1)
    opt = torch.optim.AdamW([*enc.parameters(), *head.parameters()], lr=1e-3)
    x, y = torch.randn(4, 32, D), torch.randn(4, 1)
    key_mask = torch.ones(4, 32, dtype=torch.bool)
    key_mask[0, 20:] = False
    before = [p.detach().clone() for p in enc.parameters()]
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # raises if any call cannot use flash
        for _ in range(2):
            pred = head(enc(x, key_mask=key_mask).output.mean(1))
            loss = torch.nn.functional.mse_loss(pred, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, enc.parameters(), strict=True))


def test_encoder_is_permutation_equivariant_only_without_positions_and_causality() -> None:
    x, perm = torch.randn(B, T, D), torch.randperm(T)
    enc = Encoder(cfg(positional="none")).eval()
    torch.testing.assert_close(enc(x[:, perm]).output, enc(x).output[:, perm], atol=1e-5, rtol=0)
    out_c = enc(x[:, perm], is_causal=True).output
    assert not torch.allclose(out_c, enc(x, is_causal=True).output[:, perm], atol=1e-3)
    for positional in ["sinusoidal", "learned", "rotary", "relative"]:
        enc_p = Encoder(cfg(positional=positional)).eval()
        with torch.no_grad():  # away from the near-uniform attention of a fresh init
            for p in enc_p.parameters():
                p.normal_(0, 0.5)
        assert not torch.allclose(enc_p(x[:, perm]).output, enc_p(x).output[:, perm], atol=1e-3), (
            positional
        )


@pytest.mark.parametrize("positional", POSITIONALS)
def test_causal_stack_output_ignores_the_future(positional: str) -> None:
    dec = Decoder(cfg(positional=positional), cross_attention=False).eval()
    x = torch.randn(B, T, D)
    y = x.clone()
    y[:, 4:] = torch.randn(B, T - 4, D)
    a, b = dec(x).output, dec(y).output
    torch.testing.assert_close(a[:, :4], b[:, :4], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, 4:], b[:, 4:])


@pytest.mark.parametrize("positional", POSITIONALS)
@pytest.mark.parametrize("norm_first", [True, False])
def test_cached_decoding_equals_full(positional: str, norm_first: bool) -> None:
    dec = Decoder(cfg(positional=positional, norm_first=norm_first), cross_attention=False).eval()
    x = torch.randn(B, 20, D)
    full = dec(x).output
    cache = dec.new_cache()
    with torch.no_grad():
        parts = [dec(x[:, :7], cache=cache).output]  # prompt, then one position at a time
        parts += [dec(x[:, i : i + 1], cache=cache).output for i in range(7, 20)]
    assert cache.length == 20
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)


def test_cached_encoder_decoder_equals_full() -> None:
    model = EncoderDecoder(cfg(positional="rotary")).eval()
    src, tgt = torch.randn(B, 9, D), torch.randn(B, 8, D)
    src_mask = torch.ones(B, 9, dtype=torch.bool)
    src_mask[1, 6:] = False
    full = model(src, tgt, src_key_mask=src_mask).output
    with torch.no_grad():
        memory = model.encoder(src, key_mask=src_mask).output
        cache = model.decoder.new_cache()
        first = model.decoder(tgt[:, :3], memory, memory_key_mask=src_mask, cache=cache).output
        rest = [
            model.decoder(tgt[:, i : i + 1], memory_key_mask=src_mask, cache=cache).output
            for i in range(3, 8)
        ]  # memory keys/values come from the cache after the first call
    torch.testing.assert_close(torch.cat([first, *rest], 1), full, atol=1e-5, rtol=1e-5)


def test_stack_weights_per_layer() -> None:
    model = EncoderDecoder(cfg(n_layers=3)).eval()
    out = model(torch.randn(B, 9, D), torch.randn(B, 5, D), need_weights=True)
    assert len(out.weights) == 3 and out.weights[0].shape == (B, 4, 5, 5)
    assert len(out.cross_weights) == 3 and out.cross_weights[0].shape == (B, 4, 5, 9)
    torch.testing.assert_close(out.cross_weights[2].sum(-1), torch.ones(B, 4, 5))


def test_weights_do_not_change_predictions() -> None:
    enc = Encoder(cfg(positional="relative")).eval()
    x = torch.randn(B, T, D)
    torch.testing.assert_close(enc(x, need_weights=True).output, enc(x).output, atol=1e-5, rtol=0)


def test_pre_ln_stacks_have_final_norm_and_post_ln_do_not() -> None:
    assert Encoder(cfg(norm_first=True)).norm is not None
    assert Encoder(cfg(norm_first=False)).norm is None


@pytest.mark.slow
@pytest.mark.parametrize("positional", ["learned", "rotary", "relative"])
def test_greedy_generation_64_steps_cached_equals_full(positional: str) -> None:
    lm = CausalLM(13, cfg(positional=positional, n_layers=2)).eval()
    with torch.no_grad():  # sharpen the logits a little so that argmax is well separated
        lm.head.weight.mul_(20)
    prompt = torch.randint(0, 13, (B, 5))
    cached = generate(lm, prompt, 64)
    full = generate(lm, prompt, 64, use_cache=False)
    assert cached.shape == (B, 69)
    assert torch.equal(cached, full)
    # and the logits of every generated position agree with one full forward pass
    cache = lm.new_cache()
    with torch.no_grad():
        step_logits = [lm(cached[:, :5], cache=cache)]
        step_logits += [lm(cached[:, i : i + 1], cache=cache) for i in range(5, 69)]
        full_logits = lm(cached)
    torch.testing.assert_close(torch.cat(step_logits, 1), full_logits, atol=1e-5, rtol=1e-5)


def test_sampling_is_reproducible_and_top_k_restricts() -> None:
    lm = CausalLM(13, cfg())
    prompt = torch.zeros(B, 2, dtype=torch.long)
    a = generate(lm, prompt, 20, do_sample=True, generator=torch.Generator().manual_seed(1))
    b = generate(lm, prompt, 20, do_sample=True, generator=torch.Generator().manual_seed(1))
    assert torch.equal(a, b)
    assert lm.training  # generate restores the mode it found
    greedy = generate(lm, prompt, 20)
    top1 = generate(lm, prompt, 20, do_sample=True, top_k=1, temperature=0.7)
    assert torch.equal(greedy, top1)


def test_generation_errors() -> None:
    lm = CausalLM(13, cfg(positional="learned", max_len=8))
    with pytest.raises(ValueError, match=r"reaches position 9 .* max_len=8"):
        generate(lm, torch.zeros(1, 4, dtype=torch.long), 6)
    with pytest.raises(ValueError, match=r"token ids must be in \[0, 13\)"):
        lm(torch.full((1, 3), 13))
    with pytest.raises(ValueError, match="temperature"):
        generate(lm, torch.zeros(1, 2, dtype=torch.long), 2, do_sample=True, temperature=0)


def test_cache_is_for_inference_and_checks_layers() -> None:
    dec = Decoder(cfg(), cross_attention=False)
    with pytest.raises(ValueError, match="KVCache is for inference"):
        dec(torch.randn(1, 3, D), cache=dec.new_cache())
    with pytest.raises(ValueError, match="cache has 3 layers, the decoder has 2"), torch.no_grad():
        dec(torch.randn(1, 3, D), cache=KVCache(3))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"d_model": 10, "n_heads": 3}, "d_model=10 is not divisible by n_heads=3"),
        ({"n_layers": 0}, "n_layers must be a positive integer, found 0"),
        ({"dropout": 1.0}, "dropout must be in"),
        ({"positional": "xpos"}, "positional must be one of"),
        ({"activation": "swish"}, "activation must be"),
        ({"d_model": 12, "n_heads": 4, "positional": "rotary"}, "even head dim"),
    ],
)
def test_config_validation(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        cfg(**kwargs)


def test_config_is_frozen() -> None:
    c = cfg()
    with pytest.raises(AttributeError):
        c.d_model = 32  # type: ignore[misc]


def test_stack_input_shape_error() -> None:
    with pytest.raises(ValueError, match=r"x must have shape \(B, T, d_model=16\), found \(2, 6\)"):
        Encoder(cfg())(torch.randn(2, 6))


def test_encoder_drop_path_rises_linearly_over_its_blocks() -> None:
    c = cfg(n_layers=4, drop_path=0.3, norm_first=True)
    assert c.drop_rates == pytest.approx((0.0, 0.1, 0.2, 0.3))
    enc = Encoder(c)
    assert tuple(b.drop_path.p for b in enc.blocks) == c.drop_rates
    assert list(enc.state_dict()) == list(Encoder(cfg(n_layers=4)).state_dict())
    assert cfg(n_layers=1, drop_path=0.3).drop_rates == (0.0,)


def test_drop_path_config_errors() -> None:
    with pytest.raises(ValueError, match=r"drop_path must be in \[0, 1\)"):
        cfg(drop_path=1.0)
    with pytest.raises(ValueError, match="needs Pre-LN blocks"):
        cfg(drop_path=0.1, norm_first=False)
    with pytest.raises(ValueError, match="stochastic depth is for Encoder stacks"):
        Decoder(cfg(drop_path=0.1), cross_attention=False)
