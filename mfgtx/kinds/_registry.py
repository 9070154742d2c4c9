"""The one registry of model kinds, in the spirit of timm's ``@register_model``.

A kind registers itself where it is defined (``@register_kind`` on its class, or
``register_kind(instance)``); everything that maps a name, a job file or a bundle's model
class to a kind asks here: ``mfgtx train NAME`` (:func:`kind_named`), the kind a job file
describes (:func:`job_kind`), the kind of a bundle's model class (:func:`kind_of_class`,
also the dashboard's lookup), the classes :func:`mfgtx.load` may rebuild
(:func:`model_classes`), and the ONNX export (:mod:`mfgtx.serving.onnx`).

Example:
    >>> from mfgtx.kinds import kind_of_class
    >>> kind_of_class("mfgtx.SensorEncoderEnsemble").name
    'sensor'
"""

from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points
from typing import Any, TypeVar

from mfgtx._config import ConfigError
from mfgtx.kinds._job import JobSettings
from mfgtx.kinds._kind import Kind

__all__ = [
    "ENTRY_POINTS",
    "KINDS",
    "PLUGINS_VARIABLE",
    "job_kind",
    "kind_named",
    "kind_of_class",
    "load_plugins",
    "model_classes",
    "register_kind",
]

#: The registered kinds, by the name ``mfgtx train NAME`` takes (in registration order).
KINDS: dict[str, Kind[Any, Any, Any]] = {}

K = TypeVar("K")


def register_kind(kind: K) -> K:
    """Register a kind (an instance, or a :class:`Kind` subclass built without arguments)
    under its ``name``; returns what it was given, so it works as a class decorator.

    Raises:
        ValueError: the name, the job section or a model class name is another kind's.
    """
    instance = kind() if isinstance(kind, type) else kind
    if not isinstance(instance, Kind):
        raise TypeError(f"register_kind takes a Kind, found {kind!r}")
    known = KINDS.get(instance.name)
    if known is not None and type(known).__qualname__ != type(instance).__qualname__:
        raise ValueError(f"kind {instance.name!r} is already registered ({type(known).__name__})")
    for other in KINDS.values():
        if other.name == instance.name:
            continue  # the same kind defined again (a module reloaded): the new one wins
        taken = set(other.model_names) & set(instance.model_names)
        if taken or other.section_key == instance.section_key:
            raise ValueError(
                f"kind {instance.name!r}: model {sorted(taken)} or section "
                f"{instance.section_key!r} is the {other.name!r} kind's"
            )
    KINDS[instance.name] = instance
    return kind


def kind_named(name: str) -> Kind[Any, Any, Any]:
    """The kind ``mfgtx train NAME`` names.

    Raises:
        ConfigError: no kind has that name.
    """
    if name not in KINDS:
        raise ConfigError(f"unknown model kind {name!r}; expected one of {sorted(KINDS)}")
    return KINDS[name]


def kind_of_class(class_name: str) -> Kind[Any, Any, Any] | None:
    """The kind whose model (or ensemble) a bundle manifest names ``class_name``, or
    ``None`` (a model of no mfgtx kind)."""
    for kind in KINDS.values():
        if class_name in kind.model_names:
            return kind
    return None


def model_classes() -> dict[str, type]:
    """Every registered kind's model classes by the names bundle manifests give them."""
    out: dict[str, type] = {}
    for kind in KINDS.values():
        out.update(kind.model_classes())
    return out


def job_kind(job: JobSettings) -> Kind[Any, Any, Any]:
    """The kind a job file describes: the last registered kind whose section it has (``vit``
    before ``forecast``), else the default kind (``sensor``)."""
    for kind in reversed(KINDS.values()):
        if not kind.default and kind.describes(job):
            return kind
    return next(k for k in KINDS.values() if k.default)


#: The environment variable naming modules of more kinds (comma-separated).
PLUGINS_VARIABLE = "MFGTX_KINDS"
#: The entry-point group of installed packages' kinds.
ENTRY_POINTS = "mfgtx.kinds"


def load_plugins() -> list[str]:
    """Import the plugin kinds (see the module docstring); each registers itself. Returns
    the names of the modules imported (a module imported before is not imported again).

    Raises:
        ConfigError: a named module cannot be imported (naming it and where it was named).
    """
    named = [
        (ep.value, f"entry point {ep.name!r} ({ENTRY_POINTS})")
        for ep in entry_points(group=ENTRY_POINTS)
    ]
    text = os.environ.get(PLUGINS_VARIABLE, "")
    named += [(m.strip(), PLUGINS_VARIABLE) for m in text.split(",") if m.strip()]
    done = []
    for target, where in named:
        module = target.split(":", 1)[0]
        try:
            importlib.import_module(module)
        except ImportError as e:
            raise ConfigError(
                f"{where} names the kind module {module!r}, which cannot be imported: {e}"
            ) from e
        done.append(module)
    return done
