"""mfgtx.artifacts: model bundles that never run code when loaded and refuse corrupted files.

A bundle is a directory::

    model-2026-11-03/
        weights.safetensors   the model's state_dict (safetensors: tensors only, no pickle)
        manifest.json         what the model is and how it was made (strict JSON, sorted keys)
        checksum.sha256       sha256 of every other file, in ``sha256sum`` format

Integrity: ``checksum.sha256`` lists ``manifest.json`` and every data file, and can be checked
by hand with ``sha256sum -c checksum.sha256`` inside the bundle; ``manifest.json`` lists the
size and sha256 of every data file again (``files``), so the manifest is protected by the
checksum file and the weights by both, which must agree. :func:`load_bundle` checks all of it
before it parses the manifest or deserialises a tensor, and deserialises the very bytes it
checked. A file in the directory that the bundle does not list (``Thumbs.db`` on a shared
drive) is never read, and raises a :class:`BundleWarning`. Every file's size is checked
before it is read. Checksums catch corruption and accidental edits; they are not a
signature: whoever can write all three files can forge a bundle. For that, a plant
configures a signing key (``MFGTX_BUNDLE_KEY_FILE`` or ``MFGTX_BUNDLE_KEY``): bundles are
then signed when written (``signature.hmac``) and refused everywhere unless signed with it
(:func:`sign_bundle` signs a released one).

``manifest.json`` keys: ``format`` (``"mfgtx.bundle"``), ``format_version`` (3),
``created_utc``, ``versions`` (mfgtx, torch, safetensors, python), ``model`` (the
``class`` name, ``config_class``, ``config``, tied-tensor ``aliases``, ``parameters``),
``precision``, ``files``, and the optional objects (or null) ``data_schema``, ``scaler``,
``split``, ``audit``, ``metrics``, ``baseline_metrics``, ``train_config``, ``calibration``
(temperature and operating threshold, see :class:`~mfgtx.calibration.Calibration`),
``extra``, ``kind`` (the model kind of :mod:`mfgtx.kinds` that wrote it, or null) and
``input_spec`` (that kind's versioned input specification, or null). Versions 1 and 2 (the
same without ``calibration``, and without ``kind`` and ``input_spec``) still load. A bundle with
another format version, with another top-level key set, or written by a newer major mfgtx is
refused. ``bundle_id`` is the sha256 of ``manifest.json``.

Models are rebuilt only from classes the caller passes: :func:`load_bundle` takes them in
``classes`` (:func:`mfgtx.load` passes mfgtx's own models, those of :mod:`mfgtx.kinds`), and
nothing is registered globally or at import. This package names no model. A bundleable
model is an ``nn.Module`` built as ``cls(config)``, the argument annotated with its frozen
config dataclass, which is stored as JSON and rebuilt field by field. The manifest names the
class ``model_name`` (default ``cls.__module__ + "." + cls.__qualname__``).

Typical use::

    class Forecaster(nn.Module):
        def __init__(self, config: ForecasterConfig) -> None: ...

    save_bundle("models/line3", model, model_name="plant.Forecaster", scaler=scaler,
                audit=report, metrics={"mae": 0.41})
    bundle = load_bundle("models/line3", classes={"plant.Forecaster": Forecaster})
    found, refused = find_bundles("models")     # every verified bundle of a folder
"""

from mfgtx.artifacts._manifest import FORMAT_VERSION
from mfgtx.artifacts._signing import KEY_ENV, KEY_FILE_ENV, SIGNATURE_FILE, signing_key
from mfgtx.artifacts.bundle import (
    Bundle,
    bundle_files,
    load_bundle,
    save_bundle,
    sign_bundle,
    verify_bundle,
)
from mfgtx.artifacts.discovery import FoundBundle, find_bundles
from mfgtx.artifacts.errors import BundleError, BundleWarning

__all__ = [
    "FORMAT_VERSION",
    "KEY_ENV",
    "KEY_FILE_ENV",
    "SIGNATURE_FILE",
    "Bundle",
    "BundleError",
    "BundleWarning",
    "FoundBundle",
    "bundle_files",
    "find_bundles",
    "load_bundle",
    "save_bundle",
    "sign_bundle",
    "signing_key",
    "verify_bundle",
]
