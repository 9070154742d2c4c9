"""Property-based parity of the fused and explicit attention paths over random shapes."""

from __future__ import annotations

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mfgtx.nn import attention, causal_mask


@settings(max_examples=40, deadline=None)
@given(
    b=st.integers(1, 3),
    h=st.integers(1, 4),
    t=st.integers(1, 9),
    extra=st.integers(0, 6),
    d=st.sampled_from([4, 8, 16]),
    causal=st.booleans(),
    padded=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_fused_and_explicit_agree(b, h, t, extra, d, causal, padded, seed) -> None:
    g = torch.Generator().manual_seed(seed)
    s = t + extra
    q = torch.randn(b, h, t, d, generator=g)
    k = torch.randn(b, h, s, d, generator=g)
    v = torch.randn(b, h, s, d, generator=g)
    mask = None
    if padded:
        lengths = torch.randint(1, s + 1, (b,), generator=g)
        mask = (torch.arange(s) < lengths[:, None])[:, None, None, :]  # (B, 1, 1, S)
    fused, _ = attention(q, k, v, attn_mask=mask, is_causal=causal)
    explicit, w = attention(q, k, v, attn_mask=mask, is_causal=causal, need_weights=True)
    torch.testing.assert_close(fused, explicit, atol=1e-5, rtol=1e-5)
    allowed = torch.ones(b, h, t, s, dtype=torch.bool)
    if mask is not None:
        allowed = allowed & mask
    if causal:
        allowed = allowed & causal_mask(t, s)
    # weights live only on allowed keys, and each row with any allowed key sums to 1
    assert torch.all(w[~allowed] == 0)
    row_ok = allowed.any(-1)
    torch.testing.assert_close(w.sum(-1)[row_ok], torch.ones(int(row_ok.sum())))
