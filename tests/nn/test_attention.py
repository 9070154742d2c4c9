"""Parity and invariants of mfgtx.nn.attention: fused (SDPA) vs explicit softmax path."""

from __future__ import annotations

import pytest
import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

from mfgtx.nn import attention, causal_mask

B, H, T, S, D = 2, 3, 5, 7, 8


def qkv(t: int = T, s: int = S) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.randn(B, H, t, D), torch.randn(B, H, s, D), torch.randn(B, H, s, D)


def reference(q, k, v, mask=None, bias=None):
    """Straight from the formula, float64."""
    scores = (q.double() @ k.double().transpose(-2, -1)) / D**0.5
    if bias is not None:
        scores = scores + bias.double()
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    w = torch.softmax(scores, -1)
    return (w @ v.double()).float(), w.float()


def padding_mask() -> torch.Tensor:
    m = torch.ones(B, 1, 1, S, dtype=torch.bool)
    m[1, ..., 4:] = False  # second sequence: last three keys are padding
    return m


@pytest.mark.parametrize("case", ["none", "padding", "random", "bias", "bias+padding"])
def test_fused_equals_explicit_equals_formula(case: str) -> None:
    q, k, v = qkv()
    mask = {"padding": padding_mask(), "bias+padding": padding_mask()}.get(case)
    if case == "random":
        mask = torch.rand(B, H, T, S) > 0.3
        mask[..., 0] = True  # keep every row non-empty
    bias = torch.randn(1, H, T, S) if "bias" in case else None
    fused, w_none = attention(q, k, v, attn_mask=mask, attn_bias=bias)
    explicit, w = attention(q, k, v, attn_mask=mask, attn_bias=bias, need_weights=True)
    ref_out, ref_w = reference(q, k, v, mask, bias)
    assert w_none is None
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(explicit, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)


def test_weights_are_masked_before_softmax() -> None:
    q, k, v = qkv()
    mask = padding_mask()
    _, w = attention(q, k, v, attn_mask=mask, need_weights=True)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T))  # rows sum to 1 over allowed keys
    assert torch.all(w[1, ..., 4:] == 0)


@pytest.mark.parametrize("t", [1, 3, 7])
def test_causal_is_bottom_right_for_fewer_queries(t: int) -> None:
    q, k, v = qkv(t, S)
    expected = causal_mask(t, S)
    out, w = attention(q, k, v, is_causal=True, need_weights=True)
    fused, _ = attention(q, k, v, is_causal=True)
    ref, _ = reference(q, k, v, expected)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=1e-5)
    assert torch.equal(w > 0, expected.expand(B, H, t, S))
    # the last query sits at the last key position and sees every key
    assert bool(expected[-1].all())


def test_causal_mask_shape_and_alignment() -> None:
    assert torch.equal(causal_mask(3, 3), torch.ones(3, 3, dtype=torch.bool).tril())
    assert causal_mask(2, 5).tolist() == [
        [True, True, True, True, False],
        [True, True, True, True, True],
    ]
    with pytest.raises(ValueError, match="query_len <= key_len"):
        causal_mask(4, 2)


def test_causal_combines_with_mask() -> None:
    q, k, v = qkv(S, S)
    mask = padding_mask()
    out, _ = attention(q, k, v, attn_mask=mask, is_causal=True, need_weights=True)
    ref, _ = reference(q, k, v, mask & causal_mask(S, S))
    fused, _ = attention(q, k, v, attn_mask=mask, is_causal=True)
    torch.testing.assert_close(out, ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(fused, ref, atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_give_zero_in_both_paths() -> None:
    q, k, v = qkv()
    mask = torch.ones(B, 1, T, S, dtype=torch.bool)
    mask[0, 0, 2] = False
    fused, _ = attention(q, k, v, attn_mask=mask)
    explicit, w = attention(q, k, v, attn_mask=mask, need_weights=True)
    assert torch.all(explicit[0, :, 2] == 0) and torch.all(w[0, :, 2] == 0)
    assert not torch.isnan(fused).any()
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)


def test_gradients_match_between_paths() -> None:
    q, k, v = (t.requires_grad_() for t in qkv())
    mask = padding_mask()
    attention(q, k, v, attn_mask=mask)[0].square().sum().backward()
    grads = [t.grad.clone() for t in (q, k, v)]
    for t in (q, k, v):
        t.grad = None
    attention(q, k, v, attn_mask=mask, need_weights=True)[0].square().sum().backward()
    for g, t in zip(grads, (q, k, v), strict=True):
        torch.testing.assert_close(g, t.grad, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("kwargs", [{}, {"is_causal": True}, {"attn_mask": "pad"}])
def test_fused_path_is_served_by_flash_kernel_on_cpu(kwargs: dict) -> None:
    q, k, v = (t.requires_grad_() for t in qkv(S, S))
    if kwargs.get("attn_mask") == "pad":
        kwargs = {"attn_mask": padding_mask()}
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # raises if flash cannot serve the call
        out, _ = attention(q, k, v, **kwargs)
        out.sum().backward()
    assert q.grad is not None


def test_bf16_paths_agree() -> None:
    q, k, v = (t.bfloat16() for t in qkv())
    fused, _ = attention(q, k, v, is_causal=False)
    explicit, _ = attention(q, k, v, need_weights=True)
    assert fused.dtype == explicit.dtype == torch.bfloat16
    torch.testing.assert_close(fused.float(), explicit.float(), atol=3e-2, rtol=3e-2)


def test_dropout_is_applied_and_weights_returned_before_dropout() -> None:
    q, k, v = qkv()
    out_a, w = attention(q, k, v, dropout_p=0.5, need_weights=True)
    out_b, _ = attention(q, k, v, need_weights=True)
    assert not torch.allclose(out_a, out_b)
    torch.testing.assert_close(w.sum(-1), torch.ones(B, H, T))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"q": torch.randn(2, 5, 8)}, r"q must be 4-D .* found shape \(2, 5, 8\)"),
        ({"k": torch.randn(B, H, S, D + 1)}, "same head dim"),
        ({"v": torch.randn(B, H, S + 1, D)}, "same length S"),
        ({"k": torch.randn(B + 1, H, S, D)}, r"share \(B, H\)"),
        ({"attn_mask": torch.ones(T, S)}, "attn_mask must be a boolean tensor .*float32"),
        ({"attn_mask": torch.ones(T, S + 1, dtype=torch.bool)}, r"shape \(5, 8\).*\(2, 3, 5, 7\)"),
        ({"attn_mask": torch.ones(3, 1, T, S, dtype=torch.bool)}, "broadcastable"),
        ({"attn_bias": torch.ones(T, S, dtype=torch.long)}, "attn_bias must be a float"),
        ({"dropout_p": 1.0}, "dropout_p"),
    ],
)
def test_bad_input_names_argument_and_shapes(kwargs: dict, match: str) -> None:
    q, k, v = qkv()
    args = {"q": q, "k": k, "v": v} | kwargs
    with pytest.raises(ValueError, match=match):
        attention(args.pop("q"), args.pop("k"), args.pop("v"), **args)


# --- bf16 training on the CPU: materialised attention (the kernel rule of attention()) -------

FLASH_EVENT = "aten::_scaled_dot_product_flash_attention_for_cpu"


def ran_flash(step) -> bool:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return any(e.key.startswith(FLASH_EVENT) for e in prof.key_averages())


@pytest.mark.parametrize("case", ["none", "causal", "padding", "bias", "empty row"])
def test_bf16_training_attention_is_materialised_and_close_to_float64(case: str) -> None:
    torch.manual_seed(0)
    q, k, v = (t.bfloat16().requires_grad_() for t in qkv(S, S))
    kw: dict = {}
    mask = None
    if case == "causal":
        kw["is_causal"] = True
        mask = causal_mask(S, S)
    elif case in ("padding", "empty row"):
        mask = kw["attn_mask"] = padding_mask().expand(B, 1, S, S).clone()
        if case == "empty row":
            mask[0, 0, 2] = False  # a query that may attend to nothing
    bias = kw["attn_bias"] = torch.randn(1, H, S, S) if case == "bias" else None
    grad = torch.randn(B, H, S, D)

    def step() -> None:
        attention(q, k, v, **kw).output.backward(grad.bfloat16())

    assert not ran_flash(step)
    ours = [t.grad.double() for t in (q, k, v)]
    qd, kd, vd = (t.detach().double().requires_grad_() for t in (q, k, v))
    scores = qd @ kd.transpose(-2, -1) / D**0.5 + (0 if bias is None else bias.double())
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    ref = torch.nan_to_num(torch.softmax(scores, -1)) @ vd  # empty rows: zeros, as the kernel
    ref.backward(grad.double())
    for got, want in zip(ours, (qd.grad, kd.grad, vd.grad), strict=True):
        assert torch.isfinite(got).all()
        torch.testing.assert_close(got, want, atol=3e-2, rtol=3e-2)
    materialised = attention(q, k, v, **kw).output.detach()
    with torch.no_grad():
        out = attention(q, k, v, **kw).output  # inference: the flash kernel
    torch.testing.assert_close(materialised.double(), ref.detach(), atol=2e-2, rtol=2e-2)
    torch.testing.assert_close(materialised.float(), out.float(), atol=2e-2, rtol=2e-2)
    if case == "empty row":
        assert torch.all(materialised[0, :, 2] == 0)


def test_bf16_training_under_autocast_materialises_fp32_inputs() -> None:
    q, k, v = (t.requires_grad_() for t in qkv(S, S))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not ran_flash(lambda: attention(q, k, v).output.sum().backward())
        out = attention(q, k, v).output
    assert out.dtype == torch.bfloat16 and q.grad.dtype == torch.float32


def test_the_rule_keeps_the_flash_kernel_for_fp32_inference_long_keys_and_large_calls(
    monkeypatch,
) -> None:
    import importlib

    q, k, v = (t.requires_grad_() for t in qkv(S, S))
    assert ran_flash(lambda: attention(q, k, v).output.sum().backward())  # fp32 training
    qb, kb, vb = (t.detach().bfloat16().requires_grad_() for t in (q, k, v))
    with torch.no_grad():
        assert ran_flash(lambda: attention(qb, kb, vb))  # bf16 inference

    def bf16_step() -> None:
        attention(qb, kb, vb).output.sum().backward()

    assert not ran_flash(bf16_step)
    rule = importlib.import_module("mfgtx.nn.attention")
    monkeypatch.setattr(rule, "MATERIALISE_MAX_KEYS", S - 1)
    assert ran_flash(bf16_step)  # more keys than the rule materialises
    monkeypatch.setattr(rule, "MATERIALISE_MAX_KEYS", S)
    monkeypatch.setattr(rule, "MATERIALISE_MAX_SCORES", B * H * S * S - 1)
    assert ran_flash(bf16_step)  # more scores than the rule keeps
