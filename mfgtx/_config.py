"""The error of a job configuration that cannot be used, below every layer.

A job file's sections are frozen dataclasses written out in the modules that own them (a
kind's model section, e.g. :class:`mfgtx.kinds.VitSection`; the job's other sections in
:mod:`mfgtx.jobs.config`), each key with its one default; a model section builds its model's
config with a typed method (``section.model_config(...)``) that adds what the data decides.
"""

from __future__ import annotations

__all__ = ["ConfigError"]


class ConfigError(ValueError):
    """A job configuration that cannot be used; the message names the file and the key.

    Defined here, below every layer, so that a kind (:mod:`mfgtx.kinds`) can refuse a job
    setting with the same error the job reader raises (:mod:`mfgtx.jobs` re-exports it)."""
