"""``mfgtx export | sign``: the commands on a written bundle directory, no job file: its
model as a plain ONNX file, and the plant's signature on a reviewed bundle."""

from __future__ import annotations

import argparse
from pathlib import Path

import mfgtx
from mfgtx.cli.output import emit, summary

__all__ = ["export", "sign"]


def export(args: argparse.Namespace) -> int:
    """``export BUNDLE --format onnx [--out FILE]``: the bundle's model as a plain ONNX file."""
    from mfgtx.jobs._paths import PathRules, expand_argument
    from mfgtx.serving import export_onnx, load_onnx

    bundle = Path(expand_argument("mfgtx export", "BUNDLE", args.bundle))
    if args.out:
        out = Path(expand_argument("mfgtx export", "--out", args.out))
        written = {str(out): args.out}
    else:
        out, written = bundle.parent / f"{bundle.name}.onnx", {}
    _check_onnx_target(out, args.out or str(out))
    rules = PathRules("mfgtx export", [("BUNDLE", bundle)], bundle=bundle, written=written)
    target = rules.output("--out", out)  # an existing file: only an earlier export of mfgtx
    predictor = mfgtx.load(bundle)  # verified: a damaged bundle stops here
    export_onnx(predictor, target)
    model = load_onnx(target)
    emit(
        f"exported the {predictor.kind.name} model of {bundle} (id {predictor.bundle_id[:12]}) "
        f"to {out}: inputs {list(model.inputs)}, outputs {list(model.outputs)}"
    )
    summary(
        {"command": "export", "ok": True, "format": "onnx", "bundle": str(bundle),
         "bundle_id": predictor.bundle_id, "kind": predictor.kind.name, "out": str(out),
         "inputs": list(model.inputs), "outputs": list(model.outputs),
         "bytes": target.stat().st_size}
    )  # fmt: skip
    return 0


def _check_onnx_target(out: Path, shown: str) -> None:
    """An export is a ``.onnx`` file. Whether an existing one may be replaced (only an
    earlier export of mfgtx, unchanged) is the path rules' (:mod:`mfgtx.jobs._paths`)."""
    from mfgtx.jobs import ConfigError

    if out.suffix.lower() != ".onnx":
        raise ConfigError(f"mfgtx export: --out: an export is a .onnx file, found {shown}")


def sign(args: argparse.Namespace) -> int:
    """``sign BUNDLE``: sign a reviewed bundle with this plant's key."""
    from mfgtx.artifacts import sign_bundle

    key_id = sign_bundle(args.bundle)
    emit(f"signed {args.bundle} with key {key_id}")
    summary({"command": "sign", "ok": True, "bundle": args.bundle, "key_id": key_id})
    return 0
