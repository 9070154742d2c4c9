"""``mfgtx bench``: a bundle's scoring throughput on a job's data, and with ``--onnx`` its
model in PyTorch eager beside its ONNX export in onnxruntime."""

from __future__ import annotations

import argparse
from pathlib import Path

from mfgtx.cli.jobs import job_config
from mfgtx.cli.output import emit, summary

__all__ = ["bench"]


def bench(args: argparse.Namespace) -> int:
    from mfgtx.jobs.evaluate import bench as bench_job

    if args.onnx is not None:
        return _bench_onnx(args)
    result = bench_job(job_config(args), repeats=args.repeats)
    if "tiles_per_s" in result:
        what = (
            f"{result['images_per_s']:.1f} photos/s, {result['tiles_per_s']:.0f} tiles/s "
            f"({result['images']} photos, {result['tiles']} tiles of {result['tile_size']} px"
            + (f", each in {result['views']} views" if result["views"] > 1 else "")
        )
    elif "images_per_s" in result:
        what = (
            f"{result['images_per_s']:.1f} images/s ({result['images']} images of "
            f"{result['image_size']} px"
            + (f", each in {result['views']} views" if result["views"] > 1 else "")
        )
    else:
        what = (
            f"{result['windows_per_s']:.1f} windows/s ({result['windows']} windows of "
            f"{result['window']} rows"
        )
    emit(
        f"scoring throughput: {what}, batch {result['batch_size']}, {result['threads']} "
        f"thread(s), best of {args.repeats})"
    )
    summary({"ok": True, **result})
    return 0


def _bench_onnx(args: argparse.Namespace) -> int:
    """``bench --onnx FILE``: the bundle's model in PyTorch eager and its ONNX export in
    onnxruntime on the job's data, interleaved, one line with both figures."""
    import torch

    from mfgtx.artifacts import BundleError
    from mfgtx.jobfile.prepare import read_windows
    from mfgtx.jobs.score import load_predictor
    from mfgtx.serving import compare_throughput, load_onnx

    config = job_config(args)
    predictor = load_predictor(config)
    onnx_model = load_onnx(args.onnx, threads=torch.get_num_threads())
    if onnx_model.bundle_id != predictor.bundle_id:
        raise BundleError(
            f"{args.onnx} was exported from bundle {str(onnx_model.bundle_id)[:12]}, the job's "
            f"bundle {config.bundle} is {predictor.bundle_id[:12]}; export it again with "
            f"`mfgtx export {config.bundle} --format onnx`",
            file=Path(args.onnx),
        )
    inputs, unit = predictor.kind.onnx_data(predictor, config, lambda k: read_windows(config, k))
    batch = config.score.batch_size if config.score is not None else 256
    result = compare_throughput(
        predictor, onnx_model, inputs, batch_size=batch, repeats=args.repeats
    )
    emit(
        f"model throughput on {result['n']} {unit}, batch {batch}, {result['torch_threads']} "
        f"thread(s), median of {args.repeats}: torch eager {result['torch_per_s']:.1f} "
        f"{unit}/s, onnxruntime {result['onnx_per_s']:.1f} {unit}/s "
        f"(x{result['onnx_vs_torch']:.2f})"
    )
    summary(
        {"command": "bench", "ok": True, "bundle_id": predictor.bundle_id, "unit": unit,
         "onnx": str(args.onnx), **result}
    )  # fmt: skip
    return 0
