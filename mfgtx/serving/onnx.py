"""A bundle's model as a plain ONNX file, and the onnxruntime session that runs it.

Shape legend: ``B`` batch (the one dynamic axis), ``T`` window rows, ``C`` sensors, ``K``
outputs, ``Q`` quantiles, ``L`` context, ``H`` horizon, ``S`` image side.

The graph is the model's forward pass on exactly the tensors the bundle's predictor gives
it (:func:`model_inputs`): scaled sensor windows and their observed mask, a forecaster's
context, normalised images. Everything around the model (cutting windows, scaling, the
calibration of a classifier, clipping, writing rows) stays with :mod:`mfgtx.kinds`; the
bundle's input specification travels in the file's metadata (``input_spec``) so that a
serving engineer can reproduce it, and so does an interval model's conformal calibration
(``interval_calibration``, :attr:`OnnxModel.intervals`): the graph gives the band as
trained, the calibrated band is ``intervals.apply(...)`` on its outputs.

========= =================================== ==========================================
kind      inputs                              outputs
========= =================================== ==========================================
sensor    ``x (B, T, C)`` float32 (NaN ok),   ``prediction (B, K)`` (logits or target
          ``mask (B, T, C)`` bool             units), ``quantiles (B, K, Q)`` if any
forecast  ``past (B, L, K)``, ``observed``    ``forecast (B, H, K)``, ``quantiles
          bool, ``covariates (B, L, ·)``      (B, H, K, Q)`` (direct head) in scaled units
vit       ``images (B, 1|3, S, S)``           ``logits (B, K)``
========= =================================== ==========================================

Export is the TorchScript-based exporter of ``torch.onnx`` (opset :data:`OPSET`): it traces
the model, so the models' data-dependent checks (NaN where observed, window shapes) are not
in the graph; the traced example holds a token with no observed value, so the masked
attention path is the one recorded (an all-observed mask gives the same numbers).
``scaled_dot_product_attention`` becomes its decomposition (MatMul, Softmax, Where; rows
with no allowed key give zeros, as PyTorch's kernel does) and ``unfold`` a Gather
(:func:`_unfold`). An autoregressive forecaster exports its greedy generation unrolled; its
sampled quantiles are not exported.
"""

from __future__ import annotations

import io
import json
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor, nn

from mfgtx.calibration.conformal import IntervalCalibration

__all__ = [
    "OPSET",
    "OnnxModel",
    "Signature",
    "export_onnx",
    "load_onnx",
    "model_inputs",
    "signature",
    "torch_outputs",
]

#: ONNX opset of the exports: LayerNormalization is one exact op from 17 on
OPSET = 17

_PRODUCER = "mfgtx"


@dataclass(frozen=True)
class Signature:
    """What the exported graph takes and gives.

    Attributes:
        inputs: input names, in the order of the graph.
        outputs: output names.
        module: the model wrapped so that ``module(*inputs)`` returns the outputs.
    """

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    module: nn.Module


def signature(predictor: Any) -> Signature:
    """The :class:`Signature` of a predictor's model: its kind's
    (:meth:`mfgtx.kinds.Kind.onnx_signature`)."""
    inputs, outputs, module = predictor.kind.onnx_signature(predictor)
    return Signature(inputs, outputs, module)


def model_inputs(predictor: Any, data: Any, idx: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """The model's inputs for ``data``, as the predictor feeds them, by input name.

    Args:
        predictor: a :func:`mfgtx.load` predictor.
        data: sensor/forecast kinds: :class:`~mfgtx.data.Windows` cut by the predictor
            (``predictor.windows(frame)``); vit: images ``(N, C, S, S)`` in [0, 1] as
            ``predictor.load`` reads them.
        idx: the windows to take (default: all).

    Returns:
        float32 (bool for masks) arrays, batch first.
    """
    return predictor.kind.onnx_inputs(predictor, data, idx)


def _trace_example(predictor: Any, names: tuple[str, ...]) -> dict[str, Tensor]:
    """Two samples of the model's input shape (:meth:`mfgtx.kinds.Kind.onnx_example`)."""
    return predictor.kind.onnx_example(predictor, names)


def _unfold(g: Any, x: Any, dim: int, size: int, step: int) -> Any:
    """``aten::unfold`` as Gather + Transpose, for windows whose length is known only at run
    time (the built-in symbolic needs a static length, lost behind the dynamic batch)."""
    from torch.onnx import symbolic_helper

    rank = symbolic_helper._get_tensor_rank(x)
    if rank is None:  # the traced windows always have a known rank
        raise TypeError("cannot export unfold of a tensor of unknown rank to ONNX")
    dim = dim % rank

    def i64(v: Any) -> Any:
        return g.op("Constant", value_t=torch.tensor(v, dtype=torch.int64))

    length = g.op("Gather", g.op("Shape", x), i64(dim), axis_i=0)
    n = g.op("Add", g.op("Div", g.op("Sub", length, i64(size)), i64(step)), i64(1))
    starts = g.op("Mul", g.op("Range", i64(0), n, i64(1)), i64(step))  # (n,)
    index = g.op("Add", g.op("Unsqueeze", starts, i64([1])), i64([list(range(size))]))  # (n, P)
    out = g.op("Gather", x, index, axis_i=dim)  # (..., n, P, ...)
    return g.op("Transpose", out, perm_i=[*range(dim + 1), *range(dim + 2, rank + 1), dim + 1])


@contextmanager
def _unfold_symbolic() -> Iterator[None]:
    from torch.onnx import register_custom_op_symbolic, symbolic_helper
    from torch.onnx import unregister_custom_op_symbolic as unregister

    fn = symbolic_helper.parse_args("v", "i", "i", "i")(_unfold)
    register_custom_op_symbolic("aten::unfold", fn, OPSET)
    try:
        yield
    finally:
        unregister("aten::unfold", OPSET)


def _io_spec(names: tuple[str, ...], example: Mapping[str, Tensor]) -> list[dict[str, Any]]:
    return [
        {
            "name": n,
            "shape": ["batch", *example[n].shape[1:]],
            "dtype": "bool" if example[n].dtype == torch.bool else "float32",
        }
        for n in names
    ]


def metadata(predictor: Any, sig: Signature, example: Mapping[str, Tensor]) -> dict[str, str]:
    """The ``metadata_props`` of an export: where it came from and how to feed it."""
    from mfgtx import __version__

    bundle = predictor.bundle
    checksums = (bundle.manifest.get("files") or {}).copy()
    intervals = getattr(predictor, "intervals", None)
    calibrated = {}
    if intervals is not None:  # applied after the graph (OnnxModel.intervals)
        calibrated["interval_calibration"] = json.dumps(intervals.to_dict())
    return {
        **calibrated,
        "bundle_id": predictor.bundle_id,
        "kind": predictor.kind.name,
        "model_class": str(bundle.manifest["model"]["class"]),
        "members": str(predictor.members),
        "input_spec": json.dumps(bundle.input_spec, sort_keys=True),
        "inputs": json.dumps(_io_spec(sig.inputs, example)),
        "outputs": json.dumps(list(sig.outputs)),
        "checksums": json.dumps(checksums, sort_keys=True),
        "mfgtx_version": __version__,
    }


def _require() -> None:
    """Raise a clear ImportError when the ``onnx`` extra is not installed."""
    import importlib.util

    missing = [m for m in ("onnx", "onnxruntime") if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(
            f"ONNX export and serving need {' and '.join(missing)}: install the onnx extra "
            "(pip install 'mfgtx[onnx]')"
        )


def onnx_bytes(predictor: Any) -> bytes:
    """The ONNX model of ``predictor`` (batch axis dynamic, weights inside, metadata set).

    Raises:
        ValueError: a model kind without an export.
    """
    _require()
    import onnx

    sig = signature(predictor)
    example = _trace_example(predictor, sig.inputs)
    wrapper = sig.module.eval()  # the exporter puts the module back in this mode afterwards
    dynamic = {n: {0: "batch"} for n in (*sig.inputs, *sig.outputs)}
    buf = io.BytesIO()
    with torch.no_grad(), _unfold_symbolic(), warnings.catch_warnings():
        # the tracer's notes on Python branches (shape checks, the masked path) and the
        # exporter's deprecation note: known and covered by the parity tests
        warnings.simplefilter("ignore")
        torch.onnx.export(
            wrapper,
            tuple(example[n] for n in sig.inputs),
            buf,  # type: ignore[arg-type]  # the TorchScript exporter also writes to a file object
            dynamo=False,
            opset_version=OPSET,
            input_names=list(sig.inputs),
            output_names=list(sig.outputs),
            dynamic_axes=dynamic,
        )
    proto = onnx.load_from_string(buf.getvalue())
    proto.producer_name, proto.doc_string = _PRODUCER, f"mfgtx {predictor.kind.name} model"
    from mfgtx import __version__

    proto.producer_version = __version__
    for key, value in metadata(predictor, sig, example).items():
        entry = proto.metadata_props.add()
        entry.key, entry.value = key, value
    onnx.checker.check_model(proto, full_check=True)
    return proto.SerializeToString()


def export_onnx(predictor: Any, path: str | Path) -> Path:
    """Write ``predictor``'s model to ``path`` as ONNX, all or nothing (a plain protobuf file,
    no pickle). Check the path first (:class:`mfgtx.jobs._paths.PathRules`, as the command
    does); this function writes where it is told.

    Returns:
        ``path``.
    """
    from mfgtx._files import atomic_write_bytes

    data = onnx_bytes(predictor)
    atomic_write_bytes(path, data)
    return Path(path)


class OnnxModel:
    """An exported model in an onnxruntime session: raw outputs by name.

    Args:
        path: the ``.onnx`` file written by :func:`export_onnx`.
        threads: intra-op threads (default: onnxruntime's choice).

    Attributes:
        metadata: the file's metadata (``bundle_id``, ``kind``, ``input_spec`` ...).
        inputs, outputs: the graph's input and output names.
    """

    def __init__(self, path: str | Path, *, threads: int | None = None) -> None:
        _require()
        import onnxruntime as ort

        options = ort.SessionOptions()
        if threads is not None:
            options.intra_op_num_threads = threads
            options.inter_op_num_threads = 1
        self.path = Path(path)
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        meta = self.session.get_modelmeta()
        self.metadata: dict[str, str] = dict(meta.custom_metadata_map)
        self.inputs = tuple(i.name for i in self.session.get_inputs())
        self.outputs = tuple(o.name for o in self.session.get_outputs())

    @property
    def bundle_id(self) -> str | None:
        return self.metadata.get("bundle_id")

    @property
    def kind(self) -> str | None:
        return self.metadata.get("kind")

    @property
    def input_spec(self) -> dict[str, Any] | None:
        text = self.metadata.get("input_spec")
        return None if text is None else json.loads(text)

    @property
    def intervals(self) -> IntervalCalibration | None:
        """The bundle's conformal calibration of the band (``interval_calibration``), to
        apply after the graph: ``intervals.apply(point, low, high)`` on the outputs in the
        data's units (a forecaster's outputs are scaled: unscale them first, as
        :mod:`mfgtx.kinds` does); ``None`` for an export without one."""
        text = self.metadata.get("interval_calibration")
        return None if text is None else IntervalCalibration.from_dict(json.loads(text))

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Raw outputs for ``inputs`` (as :func:`model_inputs` gives them), by name.

        Raises:
            ValueError: an input is missing or not one of the graph's.
        """
        missing = [n for n in self.inputs if n not in inputs]
        extra = sorted(set(inputs) - set(self.inputs))
        if missing or extra:
            raise ValueError(
                f"{self.path.name} takes inputs {list(self.inputs)}; missing {missing}, "
                f"unknown {extra}"
            )
        out = self.session.run(list(self.outputs), {n: inputs[n] for n in self.inputs})
        return dict(zip(self.outputs, out, strict=True))


def load_onnx(path: str | Path, *, threads: int | None = None) -> OnnxModel:
    """:class:`OnnxModel` of ``path`` (the inverse of :func:`export_onnx`)."""
    return OnnxModel(path, threads=threads)


def torch_outputs(predictor: Any, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The eager PyTorch outputs of the exported graph's computation, by output name."""
    sig = signature(predictor)
    sig.module.eval()
    with torch.no_grad():
        out = sig.module(*(torch.from_numpy(np.asarray(inputs[n])) for n in sig.inputs))
    return {n: t.float().numpy() for n, t in zip(sig.outputs, out, strict=True)}
