"""Throughput of a bundle's model in PyTorch eager and in onnxruntime, side by side.

Both run the same inputs (:func:`~mfgtx.serving.model_inputs`) in the same batches, one
after the other in each repeat (interleaved, so that a busy machine slows both alike); the
figures are the medians over the repeats, after one untimed pass of each.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from mfgtx.serving.onnx import OnnxModel, signature

__all__ = ["compare_throughput"]


def _slices(n: int, batch_size: int) -> list[slice]:
    return [slice(a, a + batch_size) for a in range(0, n, batch_size)]


def compare_throughput(
    predictor: Any,
    model: OnnxModel,
    inputs: Mapping[str, np.ndarray],
    *,
    batch_size: int = 256,
    repeats: int = 5,
) -> dict[str, Any]:
    """Windows (or images) per second of ``predictor``'s model in PyTorch eager and of its
    export ``model`` in onnxruntime, and their ratio.

    Args:
        predictor: a :func:`mfgtx.load` predictor.
        model: its export, loaded (:func:`~mfgtx.serving.load_onnx`).
        inputs: the model inputs by name (all with the same first dimension).
        batch_size: rows per forward pass.
        repeats: timed passes of each, interleaved.

    Returns:
        ``n``, ``batch_size``, ``repeats``, ``torch_threads``, ``torch_per_s``,
        ``onnx_per_s`` (medians) and ``onnx_vs_torch`` (their ratio).

    Raises:
        ValueError: ``repeats`` below 1, or no inputs.
    """
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, found {repeats}")
    sig = signature(predictor)
    n = len(next(iter(inputs.values())))
    if n == 0:
        raise ValueError("no windows or images to time")
    parts = _slices(n, batch_size)
    tensors = {k: torch.from_numpy(np.ascontiguousarray(v)) for k, v in inputs.items()}
    module = sig.module.eval()

    def eager() -> None:
        with torch.no_grad():
            for s in parts:
                module(*(tensors[name][s] for name in sig.inputs))

    def ort() -> None:
        for s in parts:
            model.run({name: inputs[name][s] for name in model.inputs})

    eager()  # warm-up: allocations, oneDNN primitives, the session's first run
    ort()
    times: dict[str, list[float]] = {"torch": [], "onnx": []}
    for _ in range(repeats):
        for name, fn in (("torch", eager), ("onnx", ort)):
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    torch_s, onnx_s = (statistics.median(times[k]) for k in ("torch", "onnx"))
    return {
        "n": n,
        "batch_size": batch_size,
        "repeats": repeats,
        "torch_threads": torch.get_num_threads(),
        "torch_per_s": round(n / torch_s, 1),
        "onnx_per_s": round(n / onnx_s, 1),
        "onnx_vs_torch": round(torch_s / onnx_s, 3),
    }
