"""mfgtx.serving: a bundle's model outside mfgtx, as a plain ONNX file.

:func:`export_onnx` writes the model of a :func:`mfgtx.load` predictor as ONNX with the
bundle's id, kind, input specification and output names in its metadata;
:func:`load_onnx` opens such a file in onnxruntime and returns raw outputs by name
(:meth:`OnnxModel.run`) for the inputs :func:`model_inputs` cuts, exactly the tensors the
predictor gives its model; :func:`compare_throughput` times both side by side. Needs the
``onnx`` extra (``pip install mfgtx[onnx]``).

Example:
    >>> import mfgtx
    >>> from mfgtx.serving import export_onnx, load_onnx, model_inputs
    >>> predictor = mfgtx.load("runs/sample/models/sample_quality")   # doctest: +SKIP
    >>> export_onnx(predictor, "quality.onnx")                       # doctest: +SKIP
    >>> windows = predictor.windows(frame_of_sensor_rows)            # doctest: +SKIP
    >>> load_onnx("quality.onnx").run(model_inputs(predictor, windows))  # doctest: +SKIP
"""

from mfgtx.serving.bench import compare_throughput
from mfgtx.serving.onnx import (
    OPSET,
    OnnxModel,
    Signature,
    export_onnx,
    load_onnx,
    model_inputs,
    signature,
    torch_outputs,
)

__all__ = [
    "OPSET",
    "OnnxModel",
    "Signature",
    "compare_throughput",
    "export_onnx",
    "load_onnx",
    "model_inputs",
    "signature",
    "torch_outputs",
]
