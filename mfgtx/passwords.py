"""Shared-password sign-in for the dashboard: PBKDF2-SHA256 hashes, never plain text.

``mfgtx hash-password`` prints a hash for ``app_password_hash`` in the dashboard's secrets;
:func:`verify_password` checks a typed password against it in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

__all__ = ["hash_password", "verify_password"]

_SCHEME = "pbkdf2_sha256"
_ITERATIONS = 600_000  # OWASP's 2023 figure for PBKDF2-HMAC-SHA256


def hash_password(password: str, *, iterations: int = _ITERATIONS) -> str:
    """``pbkdf2_sha256$<iterations>$<salt>$<hash>`` for ``password`` (a fresh random salt).

    Example:
        >>> stored = hash_password("line 3 night shift", iterations=1000)
        >>> stored.startswith("pbkdf2_sha256$1000$")
        True
        >>> verify_password("line 3 night shift", stored), verify_password("guess", stored)
        (True, False)
    """
    if len(password) < 8:
        raise ValueError("a dashboard password needs at least 8 characters")
    salt = secrets.token_hex(16)
    digest = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations).hex()
    return f"{_SCHEME}${iterations}${salt}${digest}"


def verify_password(password: str, stored: str) -> bool:
    """Whether ``password`` matches ``stored`` (from :func:`hash_password`).

    Raises:
        ValueError: ``stored`` is not a hash this module writes.
    """
    parts = stored.strip().split("$")
    if len(parts) != 4 or parts[0] != _SCHEME or not parts[1].isdigit():
        raise ValueError(
            "app_password_hash is not a pbkdf2_sha256 hash; make one with `mfgtx hash-password`"
        )
    iterations, salt, digest = int(parts[1]), parts[2], parts[3]
    found = hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), iterations).hex()
    return hmac.compare_digest(found, digest)
