"""No silent fallback: which kernel a training call gets, counted and warned about.

The kernel that ran is read from torch.profiler (PyTorch's own operator names), never from
our code; :class:`mfgtx.nn.KernelWarning` must fire exactly when that kernel is the math one
(or the explicit path) in a call that records gradients.
"""

from __future__ import annotations

import warnings
from collections import Counter

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

from mfgtx.nn import (
    ALiBiBias,
    Decoder,
    Encoder,
    KernelWarning,
    TransformerConfig,
    alibi_slopes,
    attention,
)

FLASH = "aten::_scaled_dot_product_flash_attention_for_cpu"
FLASH_BACKWARD = "aten::_scaled_dot_product_flash_attention_for_cpu_backward"
MATH = "aten::_scaled_dot_product_attention_math"


def kernels(step) -> Counter:
    """Counts of the attention operators that ran in ``step()``."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return Counter({e.key: e.count for e in prof.key_averages() if "attention" in e.key})


def cfg(**kw) -> TransformerConfig:
    base = dict(d_model=16, n_heads=4, n_layers=2, d_ff=32, dropout=0.0, max_len=64)
    return TransformerConfig(**(base | kw))


def train_step(stack: torch.nn.Module, *, key_mask: torch.Tensor | None = None) -> None:
    x = torch.randn(3, 12, 16)
    kw = {} if key_mask is None else {"key_mask": key_mask}
    stack(x, **kw).output.square().mean().backward()


def recorded(fn) -> list[warnings.WarningMessage]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fn()
    return [w for w in caught if issubclass(w.category, KernelWarning)]


# --- positional schemes in training ---------------------------------------------------------


@pytest.mark.parametrize("stack", [Encoder, Decoder])
@pytest.mark.parametrize("positional", ["sinusoidal", "learned", "rotary", "alibi", "none"])
def test_every_flash_capable_scheme_trains_on_flash_without_a_warning(stack, positional) -> None:
    model = (
        stack(cfg(positional=positional))
        if stack is Encoder
        else stack(cfg(positional=positional), cross_attention=False)
    )
    mask = torch.ones(3, 12, dtype=torch.bool)
    mask[0, 9:] = False  # a padded sequence: CPU flash takes the mask
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelWarning)
        ran = kernels(lambda: train_step(model, key_mask=mask))
    assert ran[FLASH] == 2 and ran[FLASH_BACKWARD] == 2 and ran[MATH] == 0, ran


def test_the_learned_t5_bias_trains_on_the_math_kernel_and_says_so() -> None:
    enc = Encoder(cfg(positional="relative"))
    caught: list = []
    ran = kernels(lambda: caught.extend(recorded(lambda: train_step(enc))))
    assert ran[MATH] == 2 and ran[FLASH] == 0, ran  # PyTorch's own choice, seen by the profiler
    assert len(caught) == 2
    assert "runs on PyTorch's math kernel on cpu" in str(caught[0].message)
    assert "additive bias that needs a gradient" in str(caught[0].message)
    assert caught[0].filename.endswith("mha.py")  # points at the attention call
    with torch.no_grad():  # inference: the bias needs no gradient, flash serves it, no warning
        assert recorded(lambda: enc(torch.randn(2, 12, 16))) == []
        ran = kernels(lambda: enc(torch.randn(2, 12, 16)))
    assert ran[FLASH] == 2 and ran[MATH] == 0


def test_attention_dropout_in_training_warns_and_is_the_math_kernel() -> None:
    enc = Encoder(cfg(attn_dropout=0.1)).train()
    caught: list = []
    ran = kernels(lambda: caught.extend(recorded(lambda: train_step(enc))))
    assert ran[MATH] == 2 and ran[FLASH] == 0
    assert caught and "attention dropout 0.1" in str(caught[0].message)
    enc.eval()  # eval: no dropout, flash, no warning
    assert recorded(lambda: train_step(enc)) == []


def test_weights_asked_for_in_a_training_call_warn_but_not_under_no_grad() -> None:
    q, k, v = (torch.randn(1, 2, 4, 8, requires_grad=True) for _ in range(3))
    caught = recorded(lambda: attention(q, k, v, need_weights=True)[0].sum().backward())
    assert len(caught) == 1 and "need_weights=True" in str(caught[0].message)
    with torch.no_grad():
        assert recorded(lambda: attention(q, k, v, need_weights=True)) == []
    assert recorded(lambda: attention(q, k, v)[0].sum().backward()) == []  # fused: silent


def test_differing_query_and_value_head_dims_warn() -> None:
    q, k = (torch.randn(1, 2, 4, 8, requires_grad=True) for _ in range(2))
    v = torch.randn(1, 2, 4, 4, requires_grad=True)
    caught = recorded(lambda: attention(q, k, v)[0].sum().backward())
    assert caught and "query head dim 8 differs from value head dim 4" in str(caught[0].message)


def test_kernel_warning_can_make_training_refuse_the_math_kernel() -> None:
    enc = Encoder(cfg(positional="relative"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", KernelWarning)
        with pytest.raises(KernelWarning):
            train_step(enc)


# --- ALiBi --------------------------------------------------------------------------------------


def test_alibi_slopes_follow_the_paper() -> None:
    torch.testing.assert_close(alibi_slopes(8), 2.0 ** (-torch.arange(1.0, 9.0)))
    # 12 heads: the 8-head slopes, then every other slope of the 16-head set
    sixteen = 2.0 ** (-0.5 * torch.arange(1.0, 17.0))
    torch.testing.assert_close(alibi_slopes(12), torch.cat([alibi_slopes(8), sixteen[0::2][:4]]))


def test_alibi_bias_is_minus_slope_times_distance_and_bottom_right_aligned() -> None:
    bias = ALiBiBias(4)(3, 5)  # 3 queries at key positions 2, 3, 4
    slopes = alibi_slopes(4)
    q = torch.tensor([2, 3, 4])[:, None]
    k = torch.arange(5)[None, :]
    expected = -slopes[:, None, None] * (k - q).abs().float()
    torch.testing.assert_close(bias[0], expected)
    assert not any(True for _ in ALiBiBias(4).parameters())  # fixed: nothing to learn
    assert ALiBiBias(4).state_dict() == {}  # and nothing added to checkpoints


def test_alibi_cached_decoding_equals_full_and_the_future_is_ignored() -> None:
    dec = Decoder(cfg(positional="alibi"), cross_attention=False).eval()
    x = torch.randn(2, 9, 16)
    with torch.no_grad():
        full = dec(x).output
        cache = dec.new_cache()
        parts = [dec(x[:, :5], cache=cache).output]
        parts += [dec(x[:, i : i + 1], cache=cache).output for i in range(5, 9)]
        x2 = x.clone()
        x2[:, 6:] += 3.0
        changed = dec(x2).output
    torch.testing.assert_close(torch.cat(parts, 1), full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(changed[:, :6], full[:, :6], rtol=0, atol=0)


def test_alibi_encoder_depends_on_order_through_the_bias() -> None:
    enc = Encoder(cfg(positional="alibi")).eval()
    x = torch.randn(1, 8, 16)
    perm = torch.randperm(8)
    with torch.no_grad():
        a, b = enc(x).output[:, perm], enc(x[:, perm]).output
    assert not torch.allclose(a, b, atol=1e-4)  # without the bias these would be equal
