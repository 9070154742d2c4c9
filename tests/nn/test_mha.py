"""MultiHeadAttention: parity with torch.nn.MultiheadAttention, masks, invariants, errors."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from mfgtx.nn import MultiHeadAttention, RotaryEmbedding

B, T, S, D, H = 2, 5, 7, 16, 4


def torch_pair(**kwargs) -> tuple[nn.MultiheadAttention, MultiHeadAttention]:
    ref = nn.MultiheadAttention(D, H, batch_first=True, **kwargs).eval()
    with torch.no_grad():  # non-zero biases so that the bias copy is tested too
        for name, p in ref.named_parameters():
            if "bias" in name:
                p.normal_()
    return ref, MultiHeadAttention.from_torch(ref).eval()


def test_self_attention_matches_torch_with_weights() -> None:
    ref, ours = torch_pair()
    x = torch.randn(B, T, D)
    ref_out, ref_w = ref(x, x, x, need_weights=True, average_attn_weights=False)
    out, w = ours(x, need_weights=True)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours(x).output, ref_out, atol=1e-5, rtol=1e-5)  # fused path


def test_cross_attention_with_padding_matches_torch() -> None:
    ref, ours = torch_pair()
    x, mem = torch.randn(B, T, D), torch.randn(B, S, D)
    pad = torch.zeros(B, S, dtype=torch.bool)
    pad[1, 5:] = True  # torch: True = ignore
    ref_out, ref_w = ref(x, mem, mem, key_padding_mask=pad, average_attn_weights=False)
    out, w = ours(x, mem, key_mask=~pad, need_weights=True)  # ours: True = real key
    assert out.shape == (B, T, D) and w.shape == (B, H, T, S)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w, ref_w, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(ours(x, mem, key_mask=~pad).output, ref_out, atol=1e-5, rtol=1e-5)


def test_attn_mask_matches_torch_causal() -> None:
    ref, ours = torch_pair()
    x = torch.randn(B, T, D)
    torch_mask = nn.Transformer.generate_square_subsequent_mask(T)  # float, -inf above diagonal
    ref_out, _ = ref(x, x, x, attn_mask=torch_mask)
    torch.testing.assert_close(ours(x, is_causal=True).output, ref_out, atol=1e-5, rtol=1e-5)
    bool_mask = torch.ones(T, T, dtype=torch.bool).tril()
    torch.testing.assert_close(ours(x, attn_mask=bool_mask).output, ref_out, atol=1e-5, rtol=1e-5)


def test_kdim_vdim_and_no_bias_match_torch() -> None:
    ref = nn.MultiheadAttention(D, H, kdim=6, vdim=10, bias=False, batch_first=True).eval()
    ours = MultiHeadAttention.from_torch(ref)
    x, k, v = torch.randn(B, T, D), torch.randn(B, S, 6), torch.randn(B, S, 10)
    torch.testing.assert_close(ours(x, k, v).output, ref(x, k, v)[0], atol=1e-5, rtol=1e-5)


def test_self_attention_is_permutation_equivariant_without_positions() -> None:
    mha = MultiHeadAttention(D, H).eval()
    x, perm = torch.randn(B, T, D), torch.randperm(T)
    torch.testing.assert_close(mha(x[:, perm]).output, mha(x).output[:, perm], atol=1e-5, rtol=0)
    # a causal mask breaks it
    assert not torch.allclose(
        mha(x[:, perm], is_causal=True).output, mha(x, is_causal=True).output[:, perm], atol=1e-3
    )
    # so do rotary positions
    rot = MultiHeadAttention(D, H, rotary=RotaryEmbedding(D // H)).eval()
    rot.load_state_dict(mha.state_dict())
    assert not torch.allclose(rot(x[:, perm]).output, rot(x).output[:, perm], atol=1e-3)


def test_causal_output_ignores_the_future() -> None:
    mha = MultiHeadAttention(D, H, rotary=RotaryEmbedding(D // H)).eval()
    x = torch.randn(B, T, D)
    y = x.clone()
    y[:, 3:] = torch.randn(B, T - 3, D)  # change positions > 2
    a, b = mha(x, is_causal=True).output, mha(y, is_causal=True).output
    torch.testing.assert_close(a[:, :3], b[:, :3], atol=1e-6, rtol=0)
    assert not torch.allclose(a[:, 3:], b[:, 3:])


def test_training_flash_path_with_padding() -> None:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    mha = MultiHeadAttention(D, H)
    x = torch.randn(B, T, D)
    km = torch.ones(B, T, dtype=torch.bool)
    km[0, -2:] = False
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        mha(x, key_mask=km).output.sum().backward()
    assert mha.q_proj.weight.grad is not None


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (lambda: MultiHeadAttention(10, 3), "d_model=10 is not divisible by n_heads=3"),
        (lambda: MultiHeadAttention(16, 4, dropout=1.5), "dropout"),
        (lambda: MultiHeadAttention(16, 4, rotary=RotaryEmbedding(8)), "rotary head_dim=8"),
    ],
)
def test_bad_construction(build, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        build()


def test_bad_forward_inputs_name_the_argument() -> None:
    mha = MultiHeadAttention(D, H)
    x = torch.randn(B, T, D)
    with pytest.raises(ValueError, match=r"query must have shape \(B, L, 16\), found \(2, 5, 8\)"):
        mha(torch.randn(B, T, 8))
    with pytest.raises(ValueError, match=r"key must have shape \(B, L, 16\), found \(2, 7\)"):
        mha(x, torch.randn(B, S))
    with pytest.raises(ValueError, match="share the batch size"):
        mha(x, torch.randn(B + 1, S, D))
    with pytest.raises(ValueError, match=r"key_mask must be a boolean tensor of shape \(B, S\)"):
        mha(x, key_mask=torch.ones(B, T))
    with pytest.raises(ValueError, match=r"key_mask .*found torch.bool \(2, 4\)"):
        mha(x, key_mask=torch.ones(B, T - 1, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask must be a boolean"):
        mha(x, attn_mask=torch.zeros(T, T))
    with pytest.raises(ValueError, match="value was given without key"):
        mha(x, None, x)


def test_from_torch_refuses_unsupported_options() -> None:
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(D, H, add_bias_kv=True))


def separate_projections(mha: MultiHeadAttention, x: torch.Tensor, **kw) -> torch.Tensor:
    """The self-attention of ``mha`` with three separate projections, as a reference."""
    from mfgtx.nn import attention

    Bx, Tx, _ = x.shape

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(Bx, Tx, mha.n_heads, mha.head_dim).transpose(1, 2)  # (B, H, T, Dh)

    q, k, v = heads(mha.q_proj(x)), heads(mha.k_proj(x)), heads(mha.v_proj(x))
    if mha.rotary is not None:
        q, k = mha.rotary(q, 0), mha.rotary(k, 0)
    out = attention(q, k, v, **kw).output.transpose(1, 2).reshape(Bx, Tx, D)  # (B, T, D)
    return mha.out_proj(out)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("rotary", [False, True])
@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_qkv_projection_matches_separate_ones_in_forward_and_backward(
    bias: bool, rotary: bool, is_causal: bool
) -> None:
    torch.manual_seed(0)
    mha = MultiHeadAttention(D, H, bias=bias, rotary=RotaryEmbedding(D // H) if rotary else None)
    if bias:
        with torch.no_grad():
            for proj in (mha.q_proj, mha.k_proj, mha.v_proj):
                proj.bias.normal_()
    x = torch.randn(B, T, D, requires_grad=True)
    g = torch.randn(B, T, D)  # an upstream gradient that weighs every output differently
    grads = {}
    for name, run in (("fused", lambda: mha(x, is_causal=is_causal).output),
                      ("separate", lambda: separate_projections(mha, x, is_causal=is_causal))):  # fmt: skip
        mha.zero_grad(set_to_none=True)
        x.grad = None
        out = run()
        out.backward(g)
        grads[name] = (out.detach(), x.grad.clone(),
                       {n: p.grad.clone() for n, p in mha.named_parameters()})  # fmt: skip
    (out_f, dx_f, dp_f), (out_s, dx_s, dp_s) = grads["fused"], grads["separate"]
    torch.testing.assert_close(out_f, out_s, atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(dx_f, dx_s, atol=1e-6, rtol=1e-5)
    assert dp_f.keys() == dp_s.keys()
    for n in dp_f:
        torch.testing.assert_close(dp_f[n], dp_s[n], atol=1e-6, rtol=1e-5, msg=n)


def test_fused_qkv_keeps_the_state_dict_of_separate_projections() -> None:
    keys = set(MultiHeadAttention(D, H).state_dict())
    assert keys == {f"{p}.{w}" for p in ("q_proj", "k_proj", "v_proj", "out_proj")
                    for w in ("weight", "bias")}  # fmt: skip


def test_split_heads_backward_passes_gradcheck() -> None:
    from mfgtx.nn.mha import _SplitHeads

    qkv = torch.randn(2, 3, 3 * 8, dtype=torch.float64, requires_grad=True)  # (B, T, 3D), H=2
    assert torch.autograd.gradcheck(lambda t: _SplitHeads.apply(t, 2), (qkv,))
    q, k, v = _SplitHeads.apply(qkv, 2)
    assert q.shape == (2, 2, 3, 4)
    for i, t in enumerate((q, k, v)):  # views of the i-th third, heads split off
        torch.testing.assert_close(
            t, qkv[..., 8 * i : 8 * (i + 1)].view(2, 3, 2, 4).transpose(1, 2)
        )
