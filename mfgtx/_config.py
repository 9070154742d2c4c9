"""Job-file sections derived from the configs they feed, so each setting is written once.

A model's job-file section is its frozen config minus what the data decides (the number of
sensors, the window length, the classes): :func:`section_of` builds that section as a frozen
dataclass from the config class itself, with the config's field types and defaults (a few
defaults may differ, for small plant data sets), and checks a section the way the config
checks itself. :func:`config_from` then builds the config from a section and the data's
values. A field added to a model config is a job-file key at once, with no second list to
keep in step.

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass(frozen=True)
    ... class NetConfig:
    ...     n_inputs: int
    ...     width: int = 64
    ...     def __post_init__(self):
    ...         if self.width < 1:
    ...             raise ValueError(f"width must be >= 1, found {self.width}")
    >>> Net = section_of(NetConfig, "NetSection", derived=("n_inputs",),
    ...                  stand_in=lambda s: {"n_inputs": 1}, defaults={"width": 8})
    >>> Net(), config_from(NetConfig, Net(width=4), n_inputs=3)
    (NetSection(width=8), NetConfig(n_inputs=3, width=4))
    >>> Net(width=0)
    Traceback (most recent call last):
    ...
    ValueError: width must be >= 1, found 0
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ConfigError", "config_from", "section_of"]


class ConfigError(ValueError):
    """A job configuration that cannot be used; the message names the file and the key.

    Defined here, below every layer, so that a kind (:mod:`mfgtx.kinds`) can refuse a job
    setting with the same error the job reader raises (:mod:`mfgtx.jobs` re-exports it)."""


def section_of(
    config: type,
    name: str,
    *,
    derived: tuple[str, ...],
    stand_in: Callable[[Any], Mapping[str, Any]] | None = None,
    defaults: Mapping[str, Any] | None = None,
    extra: tuple[tuple[str, Any, Any], ...] = (),
    check: Callable[[Any], None] | None = None,
    module: str | None = None,
    doc: str | None = None,
) -> type:
    """A frozen dataclass holding every init field of ``config`` except ``derived``.

    Args:
        config: the frozen config dataclass (e.g. ``SensorEncoderConfig``).
        name: the section class's name.
        derived: the fields the data decides (left out of the section).
        stand_in: values for ``derived`` from a section, used to check the section with
            the config's own checks before any data is read (``None``: no such check).
        defaults: defaults that differ from the config's.
        extra: ``(name, type, default)`` of fields the section adds (job settings that are
            not model settings, e.g. which sensors to forecast).
        check: called with the section after the config's checks.
        module, doc: the section's ``__module__`` and docstring.
    """
    hints = typing.get_type_hints(config)
    defaults = dict(defaults or {})
    unknown = set(defaults) - {f.name for f in dataclasses.fields(config)}
    if unknown or not set(derived) <= {f.name for f in dataclasses.fields(config)}:
        raise TypeError(f"{name}: unknown fields {sorted(unknown | set(derived))}")
    fields: list[tuple[str, Any, Any]] = []
    for f in dataclasses.fields(config):
        if not f.init or f.name in derived:
            continue
        if f.name in defaults:
            default = dataclasses.field(default=defaults[f.name])
        elif f.default is not dataclasses.MISSING:
            default = dataclasses.field(default=f.default)
        elif f.default_factory is not dataclasses.MISSING:
            default = dataclasses.field(default_factory=f.default_factory)
        else:
            default = dataclasses.field()
        fields.append((f.name, hints[f.name], default))
    own = frozenset(n for n, _, _ in fields)
    fields += [(key, tp, dataclasses.field(default=value)) for key, tp, value in extra]

    def __post_init__(self: Any) -> None:
        if stand_in is not None:
            config_from(config, self, **stand_in(self))  # the config's checks and messages
        if check is not None:
            check(self)

    cls = dataclasses.make_dataclass(
        name, fields, frozen=True, namespace={"__post_init__": __post_init__}
    )
    cls.__doc__ = doc or (
        f"The job-file section of :class:`{config.__module__}.{config.__qualname__}`: every "
        f"field of it but {list(derived)}, which come from the data."
    )
    cls.__module__ = module or config.__module__
    cls.config_fields = own  # type: ignore[attr-defined]
    return cls


def config_from(config: type, section: Any, **data: Any) -> Any:
    """``config`` built from the config fields of ``section`` and the data's ``data`` (which
    win over a section field of the same name)."""
    own = getattr(type(section), "config_fields", None)
    values = {
        f.name: getattr(section, f.name)
        for f in dataclasses.fields(section)
        if own is None or f.name in own
    }
    return config(**{**values, **data})
