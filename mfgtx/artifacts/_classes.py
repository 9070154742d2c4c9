"""How a bundle names a model class and how :func:`~mfgtx.artifacts.load_bundle` finds it.

There is no global registry: a manifest names its model class by a *name* (by default
``cls.__module__ + "." + cls.__qualname__``), and the loader looks that name up only in the
classes its caller passes. A manifest that names anything else (``"os.system"``, a class the
caller did not pass) is refused without importing or calling anything.
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Iterable, Mapping

from torch import nn

__all__ = ["Classes", "by_name", "config_class", "default_name", "model_name"]

#: What ``load_bundle(classes=...)`` takes: name -> class, or classes keyed by default name.
Classes = Mapping[str, type[nn.Module]] | Iterable[type[nn.Module]]

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


def default_name(cls: type) -> str:
    """The name a manifest gives ``cls`` unless told otherwise: module and qualified name."""
    return f"{cls.__module__}.{cls.__qualname__}"


def model_name(cls: type, name: str | None) -> str:
    """``name``, or the default name of ``cls``, checked to be one a program can pass back.

    Raises:
        ValueError: the name is empty or holds ``<locals>`` (a class defined in a function).
    """
    key = default_name(cls) if name is None else name
    if not isinstance(key, str) or not key.strip() or "<locals>" in key:
        raise ValueError(
            f"model name must be a non-empty string without '<locals>', found {key!r}; "
            "pass model_name=... for a class defined inside a function"
        )
    return key


def by_name(classes: Classes | None) -> dict[str, type[nn.Module]]:
    """``classes`` as a dict name -> class (an iterable is keyed by default names).

    Raises:
        TypeError: an entry is not an ``nn.Module`` subclass, or a key is not text.
        ValueError: a class given without a name has no usable default name.
    """
    if classes is None:
        return {}
    if isinstance(classes, (str, bytes)):
        raise TypeError(
            f"classes must be a mapping name -> model class or an iterable of model classes, "
            f"found the text {classes!r}"
        )
    pairs: list[tuple[object, object]]
    if isinstance(classes, Mapping):
        pairs = list(classes.items())
    else:
        pairs = [(None, cls) for cls in classes]
    out: dict[str, type[nn.Module]] = {}
    for name, cls in pairs:
        if not isinstance(cls, type) or not issubclass(cls, nn.Module):
            raise TypeError(f"classes: a model class must be an nn.Module subclass, found {cls!r}")
        if name is None:
            name = default_name(cls)
            if "<locals>" in name:
                raise ValueError(
                    f"classes: {name} is defined inside a function, so it has no default name; "
                    f"pass classes={{'<the model_name it was saved under>': {cls.__name__}}}"
                )
        if not isinstance(name, str):
            raise TypeError(f"classes: a model class name must be text, found {name!r}")
        out[name] = cls
    return out


def config_class(cls: type[nn.Module]) -> type:
    """The frozen dataclass that annotates the ``config`` argument of ``cls(config)``.

    Raises:
        TypeError: the constructor does not take one argument annotated with a frozen
            dataclass.
    """
    try:
        params = list(inspect.signature(cls).parameters.values())
        hints = typing.get_type_hints(cls.__init__)
    except (TypeError, ValueError, NameError) as e:
        raise TypeError(f"cannot read the constructor of {default_name(cls)}: {e}") from e
    required = [p for p in params if p.default is p.empty and p.kind not in _VARIADIC]
    hint = hints.get(params[0].name) if params and len(required) <= 1 else None
    frozen = isinstance(hint, type) and dataclasses.is_dataclass(hint)
    if not frozen or hint is None or not hint.__dataclass_params__.frozen:
        raise TypeError(
            f"{default_name(cls)} must be built as cls(config) with the argument annotated by "
            f"its frozen config dataclass, e.g. def __init__(self, config: MyConfig); found "
            f"{inspect.signature(cls)}"
        )
    return hint
