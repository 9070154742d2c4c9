"""The error of a job configuration that cannot be used, and where a job key's default lives,
below every layer.

A job file's sections are frozen dataclasses written out in the modules that own them (a
kind's model section, e.g. :class:`mfgtx.kinds.VitSection`; the job's other sections in
:mod:`mfgtx.jobfile.config`); a model section builds its model's config with a typed method
(``section.model_config(...)``) that adds what the data decides. A model section's key takes
its default from the model config's field of the same name (:func:`default_of`), so that each
default is written once, in the model config.
"""

from __future__ import annotations

import dataclasses
from typing import Any

__all__ = ["ConfigError", "default_of"]


class ConfigError(ValueError):
    """A job configuration that cannot be used; the message names the file and the key.

    Defined here, below every layer, so that a kind (:mod:`mfgtx.kinds`) can refuse a job
    setting with the same error the job reader raises (:mod:`mfgtx.jobs` re-exports it)."""


def default_of(config: type, name: str) -> Any:
    """The default of the field ``name`` of the dataclass ``config``.

    A job section writes ``d_model: int = default_of(ViTConfig, "d_model")``: the key's one
    default is the model config's, so the job file and the library cannot drift apart.

    Raises:
        TypeError: ``config`` has no field ``name``, or the field has no default.

    Example:
        >>> from mfgtx.models import ViTConfig
        >>> default_of(ViTConfig, "patch_size")
        8
    """
    for f in dataclasses.fields(config):
        if f.name != name:
            continue
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        raise TypeError(f"{config.__qualname__}.{name} has no default to share")
    raise TypeError(f"{config.__qualname__} has no field {name!r}")
