"""Save, verify and load model bundles (the format is described in :mod:`mfgtx.artifacts`)."""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from dataclasses import dataclass
from os import PathLike
from pathlib import Path
from typing import Any, cast

import torch
from torch import nn

from mfgtx.artifacts import _atomic, _classes, _signing, _weights
from mfgtx.artifacts._integrity import (
    MAX_CHECKSUM_BYTES,
    bundle_files,
    format_checksums,
    parse_checksums,
    read_limited,
    read_verified,
    sha256_hex,
)
from mfgtx.artifacts._json import config_from_json, to_json
from mfgtx.artifacts._manifest import (
    CHECKSUM_FILE,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST_FILE,
    WEIGHTS_FILE,
    check_manifest,
    dump_manifest,
    now_utc,
    versions,
)
from mfgtx.artifacts.errors import BundleError, BundleWarning
from mfgtx.calibration.record import Calibration
from mfgtx.data.scaling import SensorScaler

__all__ = ["Bundle", "bundle_files", "load_bundle", "save_bundle", "sign_bundle", "verify_bundle"]

logger = logging.getLogger(__name__)

#: Largest ``manifest.json`` read.
MAX_MANIFEST_BYTES = 16 * 2**20


@dataclass(frozen=True, eq=False)
class Bundle:
    """A loaded bundle.

    Attributes:
        path: the bundle directory.
        model: the rebuilt model, in eval mode, on the requested device.
        config: its frozen config dataclass.
        manifest: the whole manifest (parsed ``manifest.json``).
        scaler: the :class:`~mfgtx.data.SensorScaler` saved with the model, or ``None``.
        calibration: the :class:`~mfgtx.calibration.Calibration` (temperature and operating
            threshold) saved with a classifier, or ``None``.
        bundle_id: sha256 of ``manifest.json``; it changes with any change to the bundle.
    """

    path: Path
    model: nn.Module
    config: Any
    manifest: dict[str, Any]
    scaler: SensorScaler | None
    calibration: Calibration | None
    bundle_id: str

    @property
    def kind(self) -> str | None:
        """The model kind (:mod:`mfgtx.kinds`) that wrote the bundle, or ``None``."""
        return self.manifest.get("kind")

    @property
    def input_spec(self) -> dict[str, Any] | None:
        """The raw input specification the kind saved (read by :mod:`mfgtx.kinds`)."""
        return self.manifest.get("input_spec")


def _model_name_and_config(model: nn.Module, name: str | None) -> tuple[str, Any, dict[str, Any]]:
    """Name, config and config JSON of ``model``; refuses what cannot reload."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"save_bundle takes an nn.Module, found {type(model).__qualname__}")
    cls = type(model)
    name = _classes.model_name(cls, name)
    config: Any = getattr(model, "config", None)
    expected: type[Any] = _classes.config_class(cls)
    if type(config) is not expected:
        raise TypeError(
            f"{name}: model.config must be a {expected.__qualname__} (the annotation of its "
            f"constructor), found {type(config).__qualname__}"
        )
    data = cast(dict[str, Any], to_json(config, "model.config"))  # a dataclass: an object
    try:
        again = config_from_json(expected, json.loads(json.dumps(data)), "model.config")
    except ValueError as e:
        raise ValueError(f"{name}: the config does not survive JSON: {e}") from e
    changed = [
        f.name
        for f in dataclasses.fields(config)
        if getattr(again, f.name) != getattr(config, f.name)
    ]
    if changed:
        raise ValueError(f"{name}: config fields {changed} do not survive a JSON round trip")
    return name, config, data


def _section(key: str, value: Any) -> dict[str, Any] | None:
    data = to_json(value, key)
    if data is not None and not isinstance(data, dict):
        raise TypeError(f"{key} must give a JSON object (a dict), found {type(value).__name__}")
    if key == "scaler" and data is not None:
        try:
            SensorScaler.from_dict(data)
        except (TypeError, ValueError) as e:
            raise ValueError(f"scaler.to_dict() is not a SensorScaler state: {e}") from e
    return data


def save_bundle(
    path: str | PathLike[str],
    model: nn.Module,
    *,
    data_schema: Any = None,
    scaler: Any = None,
    split: Any = None,
    audit: Any = None,
    metrics: Any = None,
    baseline_metrics: Any = None,
    train_config: Any = None,
    calibration: Calibration | None = None,
    precision: str | torch.dtype | None = None,
    extra: Any = None,
    kind: str | None = None,
    input_spec: Any = None,
    model_name: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Write ``model`` and what is needed to use and trust it as a bundle directory.

    Args:
        path: the bundle directory to create (its parent is created if needed).
        model: an ``nn.Module`` built as ``cls(config)`` from the frozen dataclass in
            ``model.config`` (its constructor's argument annotated with that dataclass).
        data_schema: the column mapping (e.g. a :class:`~mfgtx.data.ColumnMap`) or any dict.
        scaler: a :class:`~mfgtx.data.SensorScaler` (or anything whose ``to_dict()`` gives its
            state).
        split: the split specification; audit: its audit report (e.g.
            :class:`~mfgtx.split.AuditReport`); metrics: the model's metrics;
            baseline_metrics: the baselines' metrics; train_config: the training config;
            calibration: a classifier's :class:`~mfgtx.calibration.Calibration`;
            extra: anything else. Each is a dict, a dataclass or has ``to_dict()``, and must
            be strict JSON (no NaN: store ``None``).
        kind, input_spec: the model kind of :mod:`mfgtx.kinds` that wrote the bundle and its
            versioned input specification (what the model reads, and how).
        model_name: the name the manifest gives the model class, which
            :func:`load_bundle` is passed back in ``classes``; default
            ``cls.__module__ + "." + cls.__qualname__``. Give a stable name to keep bundles
            loadable when the class moves to another module (required for a class defined
            inside a function).
        precision: the training precision, e.g. ``"bf16-autocast"`` or ``torch.float32``.
        overwrite: replace an existing bundle at ``path`` (never anything else).

    With a signing key configured (``MFGTX_BUNDLE_KEY_FILE`` or ``MFGTX_BUNDLE_KEY``) the
    bundle is signed. Under ``torchrun`` only rank 0 writes; the other processes return
    ``path`` at once, so the same training script can call this on every rank.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        TypeError: the model is not built from its annotated frozen config, or a section has
            no JSON form.
        ValueError: the model name is empty or holds ``<locals>``, a value is not strict
            JSON, or the config does not survive a round trip.
        FileExistsError: ``path`` exists and ``overwrite`` is false, or is not a bundle.

    Example:
        >>> import dataclasses, tempfile, torch
        >>> from torch import nn
        >>> @dataclasses.dataclass(frozen=True)
        ... class ToyConfig:
        ...     d_in: int = 3
        >>> class Toy(nn.Module):
        ...     def __init__(self, config: ToyConfig) -> None:
        ...         super().__init__()
        ...         self.config = config
        ...         self.linear = nn.Linear(config.d_in, 1)
        >>> model = Toy(ToyConfig())
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     path = save_bundle(f"{tmp}/toy", model, model_name="ex.Toy", metrics={"mae": 1})
        ...     bundle = load_bundle(path, classes={"ex.Toy": Toy})
        >>> bundle.manifest["model"]["class"], bundle.config, bundle.manifest["metrics"]
        ('ex.Toy', ToyConfig(d_in=3), {'mae': 1})
        >>> bundle.model.training
        False
        >>> torch.equal(bundle.model.linear.weight, model.linear.weight)
        True
    """
    target = Path(path)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        if torch.distributed.get_rank() != 0:
            logger.info(
                "rank %d: bundle %s is written by rank 0", torch.distributed.get_rank(), target
            )
            return target
    sections = {
        "data_schema": data_schema,
        "scaler": scaler,
        "split": split,
        "audit": audit,
        "metrics": metrics,
        "baseline_metrics": baseline_metrics,
        "train_config": train_config,
        "calibration": calibration,
        "extra": extra,
    }
    if calibration is not None and not isinstance(calibration, Calibration):
        raise TypeError(
            f"calibration must be a mfgtx.calibration.Calibration, found "
            f"{type(calibration).__name__}"
        )
    if precision is not None and not isinstance(precision, (str, torch.dtype)):
        raise TypeError(f"precision must be text or a torch.dtype, found {precision!r}")
    key = _signing.signing_key()  # a plant's signing key: every bundle written is signed
    with _atomic.staged_directory(target, overwrite=overwrite, marker=MANIFEST_FILE) as staging:
        name, config, config_data = _model_name_and_config(model, model_name)
        manifest: dict[str, Any] = {key: _section(key, value) for key, value in sections.items()}
        manifest["kind"] = kind
        manifest["input_spec"] = _section("input_spec", input_spec)
        weights, aliases = _weights.to_safetensors(model)
        manifest |= {
            "format": FORMAT,
            "format_version": FORMAT_VERSION,
            "created_utc": now_utc(),
            "versions": versions(),
            "model": {
                "class": name,
                "config_class": f"{type(config).__module__}.{type(config).__qualname__}",
                "config": config_data,
                "aliases": aliases,
                "parameters": sum(p.numel() for p in model.parameters()),
            },
            "precision": None if precision is None else str(precision).removeprefix("torch."),
            "files": {WEIGHTS_FILE: {"sha256": sha256_hex(weights), "size": len(weights)}},
        }
        manifest_bytes = dump_manifest(manifest)
        checksums = {MANIFEST_FILE: sha256_hex(manifest_bytes), WEIGHTS_FILE: sha256_hex(weights)}
        checksum_bytes = format_checksums(checksums).encode("ascii")
        _atomic.write_file(staging / WEIGHTS_FILE, weights)
        _atomic.write_file(staging / MANIFEST_FILE, manifest_bytes)
        _atomic.write_file(staging / CHECKSUM_FILE, checksum_bytes)
        if key is not None:
            _atomic.write_file(
                staging / _signing.SIGNATURE_FILE, _signing.sign(key, checksum_bytes)
            )
    logger.info("saved %s bundle %s (id %s)", name, target, checksums[MANIFEST_FILE][:12])
    return target


@dataclass(frozen=True)
class _Verified:
    manifest: dict[str, Any]
    bundle_id: str
    blobs: dict[str, bytes]
    unexpected: list[str]
    signature: str


def _verify(path: str | PathLike[str], *, signature: bool = True) -> _Verified:
    """Every integrity and compatibility check that needs no model; the checked bytes.
    ``signature=False`` leaves the signature unchecked (to sign a bundle)."""
    root = Path(path)
    if not root.is_dir():
        raise BundleError(f"no bundle at {root}: not a directory", file=root)
    checksum_file = root / CHECKSUM_FILE
    if not checksum_file.is_file():
        raise BundleError(f"{checksum_file} is missing from the bundle", file=checksum_file)
    checksum_bytes = read_limited(checksum_file, MAX_CHECKSUM_BYTES, "checksum file")
    try:
        digests = parse_checksums(checksum_bytes.decode("ascii"), checksum_file)
    except UnicodeDecodeError as e:
        raise BundleError(f"{checksum_file} is not ASCII text: {e}", file=checksum_file) from e
    status = (
        _signing.verify(root, checksum_bytes, _signing.signing_key()) if signature else "unchecked"
    )
    manifest_file = root / MANIFEST_FILE
    if MANIFEST_FILE not in digests:
        raise BundleError(f"{checksum_file} does not list {MANIFEST_FILE}", file=checksum_file)
    if manifest_file.is_file() and manifest_file.stat().st_size > MAX_MANIFEST_BYTES:
        raise BundleError(
            f"{manifest_file} is {manifest_file.stat().st_size:,} bytes, more than a manifest "
            f"can be ({MAX_MANIFEST_BYTES:,})",
            file=manifest_file,
        )
    manifest_bytes = read_verified(
        manifest_file, sha256=digests[MANIFEST_FILE], source=CHECKSUM_FILE
    )
    try:
        manifest = json.loads(manifest_bytes.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BundleError(f"{manifest_file} is not JSON: {e}", file=manifest_file) from e
    check_manifest(manifest, manifest_file)
    files: dict[str, dict[str, Any]] = manifest["files"]
    for name in sorted(set(files) | set(digests) - {MANIFEST_FILE}):
        if name not in files or digests.get(name) != files[name]["sha256"]:
            raise BundleError(
                f"{checksum_file} and {manifest_file} disagree about {name!r}", file=checksum_file
            )
    blobs = {
        name: read_verified(root / name, sha256=e["sha256"], size=e["size"], source=MANIFEST_FILE)
        for name, e in files.items()
    }
    known = {*files, MANIFEST_FILE, CHECKSUM_FILE, _signing.SIGNATURE_FILE}
    unexpected = sorted(p.name for p in root.iterdir() if p.name not in known)
    if unexpected:
        warnings.warn(
            f"{root} holds files that are not part of the bundle and are ignored: {unexpected}",
            BundleWarning,
            stacklevel=3,
        )
    return _Verified(manifest, sha256_hex(manifest_bytes), blobs, unexpected, status)


def sign_bundle(path: str | PathLike[str]) -> str:
    """Sign the bundle at ``path`` with the configured key (``mfgtx sign``), after checking
    its integrity; returns the key's id. The bundle's id does not change.

    Raises:
        BundleError: no key is configured, or the bundle does not verify.
    """
    from mfgtx._files import atomic_write_bytes

    key = _signing.signing_key()
    if key is None:
        raise BundleError(
            f"no signing key: set {_signing.KEY_FILE_ENV} (a key file) or {_signing.KEY_ENV}"
        )
    root = Path(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", BundleWarning)
        _verify(root, signature=False)  # an integrity problem: never sign that
    checksum_bytes = read_limited(root / CHECKSUM_FILE, MAX_CHECKSUM_BYTES, "checksum file")
    atomic_write_bytes(root / _signing.SIGNATURE_FILE, _signing.sign(key, checksum_bytes))
    logger.info("signed %s with key %s", root, _signing.key_id(key))
    return _signing.key_id(key)


def verify_bundle(path: str | PathLike[str]) -> dict[str, Any]:
    """Check a bundle's integrity and compatibility without building its model.

    Checks every checksum, the signature when a signing key is configured, the format
    version, the mfgtx major version and the manifest's structure; files in the directory
    that the bundle does not list raise a :class:`BundleWarning`. Whether the model class is
    known and the weights fit it is checked by :func:`load_bundle`.

    Returns:
        ``{"bundle_id": str, "path": str, "manifest": dict, "unexpected_files": list,
        "signature": "verified" | "unsigned" | "not verified"}`` (see
        :mod:`mfgtx.artifacts._signing`).

    Raises:
        BundleError: naming the file and what is wrong with it.
    """
    verified = _verify(path)
    return {
        "bundle_id": verified.bundle_id,
        "path": str(path),
        "manifest": verified.manifest,
        "unexpected_files": verified.unexpected,
        "signature": verified.signature,
    }


def load_bundle(
    path: str | PathLike[str],
    *,
    classes: _classes.Classes | None = None,
    map_location: str | torch.device = "cpu",
) -> Bundle:
    """Verify a bundle, then rebuild its model from the class its caller names and its config.

    Nothing is deserialised before its checksum is verified, and nothing named in the
    manifest is imported: the model class must be among ``classes``. (:func:`mfgtx.load`
    passes mfgtx's own model classes, :func:`mfgtx.kinds.model_classes`.)

    Args:
        path: the bundle directory.
        classes: the model classes this program can rebuild: a mapping from the name a
            manifest gives a class (``save_bundle``'s ``model_name``) to the class, or an
            iterable of classes, each under its default name
            ``cls.__module__ + "." + cls.__qualname__``.
        map_location: the device to put the model on.

    Returns:
        a :class:`Bundle` whose model is in eval mode.

    Raises:
        BundleError: the bundle is missing a file, is corrupted or tampered with, comes from
            an incompatible format or a newer major mfgtx, names a class not in ``classes``,
            or its weights do not fit the model its config builds (first differing tensor
            named).
        TypeError, ValueError: ``classes`` holds something other than named model classes.
    """
    known = _classes.by_name(classes)
    verified = _verify(path)
    root, manifest = Path(path), verified.manifest
    manifest_file = root / MANIFEST_FILE
    name = manifest["model"]["class"]
    cls = known.get(name)
    if cls is None:
        hint = (
            "load it with mfgtx.load()"
            if name.startswith("mfgtx.")
            else f"pass classes={{{name!r}: YourModel}} to load_bundle"
        )
        raise BundleError(
            f"{manifest_file}: model class {name!r} is not known to this program; {hint}. "
            f"Known: {sorted(known)}",
            file=manifest_file,
        )
    try:
        config = config_from_json(
            _classes.config_class(cls), manifest["model"]["config"], "model.config"
        )
        model = cls(config)
    except (TypeError, ValueError) as e:
        raise BundleError(
            f"{manifest_file}: cannot rebuild {name!r}: {e}", file=manifest_file
        ) from e
    try:
        _weights.from_safetensors(model, verified.blobs[WEIGHTS_FILE])
    except (ValueError, RuntimeError) as e:
        weights_file = root / WEIGHTS_FILE
        raise BundleError(f"{weights_file} does not fit {name!r}: {e}", file=weights_file) from e
    scaler = None
    if manifest["scaler"] is not None:
        try:
            scaler = SensorScaler.from_dict(manifest["scaler"])
        except (TypeError, ValueError) as e:
            raise BundleError(f"{manifest_file}: bad scaler: {e}", file=manifest_file) from e
    calibration = None
    if manifest["calibration"] is not None:
        try:
            calibration = Calibration.from_dict(manifest["calibration"])
        except (TypeError, ValueError) as e:
            raise BundleError(f"{manifest_file}: bad calibration: {e}", file=manifest_file) from e
    model.to(map_location).eval()
    logger.info("loaded %s bundle %s (id %s)", name, root, verified.bundle_id[:12])
    return Bundle(root, model, config, manifest, scaler, calibration, verified.bundle_id)
