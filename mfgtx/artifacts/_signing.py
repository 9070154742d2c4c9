"""Bundle authenticity: an HMAC-SHA256 signature with a plant's own key.

Checksums (``checksum.sha256``) catch corruption, not forgery: whoever can write a bundle
can recompute them. A plant that wants only bundles its own people released to be used
configures a secret key on the machines that train, sign and score:

- ``MFGTX_BUNDLE_KEY_FILE``: a file holding the key (readable by the service account only),
  or
- ``MFGTX_BUNDLE_KEY``: the key itself (from the scheduler's or service's secret store).

A key is at least 32 characters of text (e.g. ``openssl rand -hex 32``; see
:mod:`mfgtx._keys`, which training checkpoints sign with too). With a key
configured, every bundle written is signed (``signature.hmac``: the HMAC-SHA256 of its
``checksum.sha256``, which covers the manifest and the weights), and every bundle read,
by ``score``, ``evaluate``, ``bench`` and the dashboard alike, must carry a signature made
with that key: an unsigned bundle, one signed with another key, or one edited after signing
is refused. ``mfgtx sign BUNDLE`` signs a bundle that was reviewed and released. Without a
key nothing is signed or checked, and a signature that is present is reported as not
verified.
"""

from __future__ import annotations

import hmac
from pathlib import Path

from mfgtx._keys import KEY_ENV, KEY_FILE_ENV, SigningKeyError, key_id, mac, read_signing_key
from mfgtx._keys import SCHEME as _SCHEME
from mfgtx.artifacts.errors import BundleError

__all__ = ["KEY_ENV", "KEY_FILE_ENV", "SIGNATURE_FILE", "key_id", "sign", "signing_key", "verify"]

SIGNATURE_FILE = "signature.hmac"


def signing_key() -> bytes | None:
    """The configured key (see the module docstring), or ``None``.

    Raises:
        BundleError: the key file cannot be read, or the key is too short.
    """
    try:
        return read_signing_key()
    except SigningKeyError as e:
        raise BundleError(str(e)) from None


def _mac(key: bytes, checksums: bytes) -> str:
    return mac(key, b"mfgtx-bundle-v1", checksums)


def sign(key: bytes, checksums: bytes) -> bytes:
    """The ``signature.hmac`` file for a bundle whose ``checksum.sha256`` is ``checksums``."""
    return f"{_SCHEME} {key_id(key)} {_mac(key, checksums)}\n".encode("ascii")


def verify(root: Path, checksums: bytes, key: bytes | None) -> str:
    """Check ``root``'s signature; returns ``"verified"``, ``"unsigned"`` (no key, no
    signature) or ``"not verified"`` (a signature but no key configured here).

    Raises:
        BundleError: a key is configured and the bundle is unsigned, signed with another
            key, or was changed after signing.
    """
    file = root / SIGNATURE_FILE
    present = file.is_file() and not file.is_symlink()
    if key is None:
        return "not verified" if present else "unsigned"
    if not present:
        raise BundleError(
            f"{root} is not signed, and this machine only accepts bundles signed with its "
            f"key {key_id(key)} ({KEY_FILE_ENV}/{KEY_ENV}); have it reviewed and signed "
            "with `mfgtx sign`",
            file=file,
        )
    raw = file.read_bytes()[:512].decode("ascii", "replace").split()
    if len(raw) != 3 or raw[0] != _SCHEME:
        raise BundleError(f"{file} is not an mfgtx bundle signature", file=file)
    if raw[1] != key_id(key):
        raise BundleError(
            f"{file} was made with the key {raw[1]}, not with this machine's key {key_id(key)}",
            file=file,
        )
    if not hmac.compare_digest(raw[2], _mac(key, checksums)):
        raise BundleError(
            f"{file} does not match the bundle: it was changed after it was signed", file=file
        )
    return "verified"
