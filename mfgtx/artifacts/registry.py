"""The registry of model classes a bundle may name.

A manifest names its model class by a registered *name*, never by an import path that the
loader would follow: :func:`~mfgtx.artifacts.load_bundle` only ever builds classes that the
running program registered itself, by importing the module that defines them. A manifest
that names anything else (``"os.system"``, a class that was never registered) is refused
without importing or calling anything.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import typing
from collections.abc import Callable
from typing import TypeVar, overload

from torch import nn

__all__ = ["register_model", "registered_models"]

logger = logging.getLogger(__name__)

M = TypeVar("M", bound=type[nn.Module])

_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
_BY_NAME: dict[str, type[nn.Module]] = {}
_BY_CLASS: dict[type[nn.Module], str] = {}


def _default_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _register(cls: M, name: str | None) -> M:
    if not isinstance(cls, type) or not issubclass(cls, nn.Module):
        raise TypeError(f"register_model takes an nn.Module subclass, found {cls!r}")
    key = _default_name(cls) if name is None else name
    if not isinstance(key, str) or not key.strip() or "<locals>" in key:
        raise ValueError(
            f"model name must be a non-empty string without '<locals>', found {key!r}; "
            "pass name=... for a class defined inside a function"
        )
    known = _BY_NAME.get(key)
    if known is not None and known is not cls:
        if _default_name(known) != _default_name(cls):
            raise ValueError(
                f"model name {key!r} is already registered for {_default_name(known)}; "
                f"choose another name= for {_default_name(cls)}"
            )
        # The same class defined again (a module reloaded, a Streamlit rerun): the new one wins.
        logger.debug("re-registering model %r for a redefined %s", key, _default_name(cls))
        del _BY_CLASS[known]
    other = _BY_CLASS.get(cls)
    if other is not None and other != key:
        raise ValueError(f"{_default_name(cls)} is already registered as {other!r}, not {key!r}")
    _BY_NAME[key] = cls
    _BY_CLASS[cls] = key
    return cls


@overload
def register_model(cls: M, *, name: str | None = None) -> M: ...
@overload
def register_model(cls: None = None, *, name: str | None = None) -> Callable[[M], M]: ...
def register_model(cls: M | None = None, *, name: str | None = None) -> M | Callable[[M], M]:
    """Allow bundles to name and rebuild the model class ``cls``.

    A bundleable model is an ``nn.Module`` whose ``config`` attribute is a frozen dataclass
    and whose constructor is ``cls(config)``. Register the class where it is defined, so that
    importing its module is all a program needs before :func:`~mfgtx.artifacts.load_bundle`.

    Args:
        cls: the model class (``register_model(cls)`` or the bare decorator ``@register_model``).
        name: the stable name written into manifests; default
            ``cls.__module__ + "." + cls.__qualname__``. Give an explicit name to keep old
            bundles loadable when the class moves to another module.

    Returns:
        ``cls`` itself (or, with only ``name=``, a decorator that returns it).

    Raises:
        ValueError: the name is taken by another class, or the class has another name.

    Example:
        >>> from torch import nn
        >>> @register_model(name="example.Identity")
        ... class Identity(nn.Module):
        ...     def __init__(self, config):
        ...         super().__init__()
        ...         self.config = config
        >>> registered_models()["example.Identity"] is Identity
        True
    """
    if cls is None:
        return lambda c: _register(c, name)
    return _register(cls, name)


def registered_models() -> dict[str, type[nn.Module]]:
    """A copy of the registry: name -> model class."""
    return dict(_BY_NAME)


def _name_of(cls: type) -> str | None:
    """The registered name of exactly ``cls`` (not of a base class), or ``None``."""
    return _BY_CLASS.get(cls)


def _lookup(name: str) -> type[nn.Module] | None:
    """The class registered under ``name``, or ``None``; never imports anything."""
    return _BY_NAME.get(name)


def _config_class(cls: type[nn.Module]) -> type:
    """The frozen dataclass that annotates the ``config`` argument of ``cls(config)``.

    Raises:
        TypeError: the constructor does not take one argument annotated with a frozen
            dataclass.
    """
    try:
        params = list(inspect.signature(cls).parameters.values())
        hints = typing.get_type_hints(cls.__init__)
    except (TypeError, ValueError, NameError) as e:
        raise TypeError(f"cannot read the constructor of {_default_name(cls)}: {e}") from e
    required = [p for p in params if p.default is p.empty and p.kind not in _VARIADIC]
    hint = hints.get(params[0].name) if params and len(required) <= 1 else None
    frozen = isinstance(hint, type) and dataclasses.is_dataclass(hint)
    if not frozen or hint is None or not hint.__dataclass_params__.frozen:
        raise TypeError(
            f"{_default_name(cls)} must be built as cls(config) with the argument annotated by "
            f"its frozen config dataclass, e.g. def __init__(self, config: MyConfig); found "
            f"{inspect.signature(cls)}"
        )
    return hint
