"""Which attention kernel ran, read from PyTorch's own profiler events (not from mfgtx).

``aten::_scaled_dot_product_flash_attention_for_cpu`` and its ``_backward`` are the CPU
FlashAttention kernels; ``aten::_scaled_dot_product_attention_math`` is the unfused fallback.
A training step of a model with ``n`` attention layers on the flash kernel shows exactly
``n`` of each flash event and no math event. Anything that bypasses SDPA (a hand-written
softmax, the explicit path, no attention at all) shows fewer flash events and fails.

bf16 training on the CPU materialises short attention instead (``mfgtx.nn.attention``'s
rule): ``n`` softmax forwards and backwards (``aten::_softmax``,
``aten::_softmax_backward_data``) and no attention kernel at all.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from torch.profiler import ProfilerActivity, profile

FLASH = "aten::_scaled_dot_product_flash_attention_for_cpu"
FLASH_BACKWARD = "aten::_scaled_dot_product_flash_attention_for_cpu_backward"
MATH = "aten::_scaled_dot_product_attention_math"
SOFTMAX = "aten::_softmax"
SOFTMAX_BACKWARD = "aten::_softmax_backward_data"


def attention_events(step: Callable[[], object]) -> Counter:
    """Counts of the attention operators that ran during ``step()``."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return Counter(
        {e.key: e.count for e in prof.key_averages() if "attention" in e.key or "softmax" in e.key}
    )


def assert_flash_training(
    step: Callable[[], object], forwards: int, backwards: int | None = None
) -> Counter:
    """``step()`` ran ``forwards`` flash forwards, ``backwards`` (default the same) flash
    backwards and no math kernel; returns the counts."""
    backwards = forwards if backwards is None else backwards
    ran = attention_events(step)
    got = (ran[FLASH], ran[FLASH_BACKWARD], ran[MATH])
    assert got == (forwards, backwards, 0), (
        f"expected {forwards} flash forward, {backwards} flash backward and 0 math kernel "
        f"events, found {got}: {dict(ran)}"
    )
    return ran


def assert_materialised_training(
    step: Callable[[], object], layers: int, flash_forwards: int = 0
) -> Counter:
    """``step()`` ran ``layers`` softmax forwards and backwards, ``flash_forwards`` flash
    forwards (no-grad passes, such as validation), no flash backward and no math kernel."""
    ran = attention_events(step)
    got = (ran[SOFTMAX], ran[SOFTMAX_BACKWARD], ran[FLASH], ran[FLASH_BACKWARD], ran[MATH])
    want = (layers, layers, flash_forwards, 0, 0)
    assert got == want, (
        f"expected (softmax, softmax backward, flash, flash backward, math) = {want}, "
        f"found {got}: {dict(ran)}"
    )
    return ran
