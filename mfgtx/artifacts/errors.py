"""Errors and warnings about model bundles."""

from __future__ import annotations

from pathlib import Path

__all__ = ["BundleError", "BundleWarning"]


class BundleError(ValueError):
    """A bundle that must not be loaded: missing, corrupted, tampered with or incompatible.

    The message names the file and what is wrong with it (expected vs found); the file is
    also available as the ``file`` attribute (``None`` when the problem is not one file).
    """

    def __init__(self, message: str, *, file: str | Path | None = None) -> None:
        super().__init__(message)
        self.file = None if file is None else Path(file)


class BundleWarning(UserWarning):
    """Something about a bundle deserves attention but does not stop it from loading."""
