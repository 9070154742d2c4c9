"""A plant's signing key and the HMAC-SHA256 made with it, for bundles and checkpoints alike.

The key comes from ``MFGTX_BUNDLE_KEY_FILE`` (a file holding it, readable by the service
account only) or ``MFGTX_BUNDLE_KEY`` (the key itself, from a secret store): at least 32
characters (``openssl rand -hex 32``). Bundles (:mod:`mfgtx.artifacts._signing`) and training
checkpoints (:mod:`mfgtx.train.checkpoint`) sign with it; each kind of file MACs its own
``purpose`` line first, so a signature made for one can never pass as the other's.

This module sits below every layer of the package (training imports it; artifacts build on
it), and raises :class:`SigningKeyError`, which each caller words as its own error.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
from pathlib import Path

__all__ = [
    "KEY_ENV",
    "KEY_FILE_ENV",
    "SCHEME",
    "SigningKeyError",
    "key_id",
    "mac",
    "read_signing_key",
]

log = logging.getLogger(__name__)

KEY_ENV = "MFGTX_BUNDLE_KEY"
KEY_FILE_ENV = "MFGTX_BUNDLE_KEY_FILE"
SCHEME = "hmac-sha256"
_MIN_KEY = 32


class SigningKeyError(ValueError):
    """The configured key cannot be read or is too short (the message says which and why)."""


def read_signing_key() -> bytes | None:
    """The configured key, or ``None`` when neither variable is set.

    Raises:
        SigningKeyError: the key file cannot be read, or the key is too short.
    """
    path = os.environ.get(KEY_FILE_ENV)
    if path:
        p = Path(path)
        try:
            mode = p.stat().st_mode
            key = p.read_bytes().strip()
        except OSError as e:
            raise SigningKeyError(
                f"{KEY_FILE_ENV}={path}: cannot read the key file ({e.strerror})"
            ) from None
        if mode & (stat.S_IRWXG | stat.S_IRWXO):
            log.warning(
                "%s %s can be read by other users; chmod 600 it", KEY_FILE_ENV, path
            )  # the key still works: refusing here would stop every job at once
    else:
        text = os.environ.get(KEY_ENV)
        if not text:
            return None
        key = text.strip().encode("utf-8")
    if len(key) < _MIN_KEY:
        where = KEY_FILE_ENV if path else KEY_ENV
        raise SigningKeyError(
            f"{where}: the bundle key is {len(key)} characters; use at least {_MIN_KEY} "
            "(e.g. openssl rand -hex 32)"
        )
    return key


def key_id(key: bytes) -> str:
    """A short public name of ``key`` (not the key): the first 12 hex of its sha256."""
    return hashlib.sha256(b"mfgtx-bundle-key:" + key).hexdigest()[:12]


def mac(key: bytes, purpose: bytes, data: bytes) -> str:
    """The hex HMAC-SHA256 of ``purpose`` (one line naming what is signed) and ``data``."""
    digest = hmac.new(key, purpose + b"\n", hashlib.sha256)
    digest.update(data)  # no copy of a large payload
    return digest.hexdigest()
