"""Plain JSON out of configs, reports and metrics, and configs back out of JSON.

Writing accepts what training code has at hand: dataclasses (their ``__init__`` fields),
objects with ``to_dict()``, mappings with string keys, lists and tuples, numpy and torch
scalars and arrays, paths. Everything becomes strict JSON: a NaN or infinite number is an
error (JSON has neither), as is a non-string key.

Reading a config rebuilds its frozen dataclass from the field annotations: JSON lists become
tuples where the field is a tuple, nested dataclass fields are rebuilt, and unknown or
missing keys are errors that name them.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

import numpy as np
import torch

__all__ = ["config_from_json", "to_json"]

JSON = None | bool | int | float | str | list["JSON"] | dict[str, "JSON"]


def to_json(value: Any, where: str) -> JSON:
    """``value`` as plain JSON data; ``where`` (e.g. ``"metrics"``) prefixes error messages."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, float, np.integer, np.floating, np.bool_)):
        number = value.item() if isinstance(value, np.generic) else value
        if isinstance(number, float) and not math.isfinite(number):
            raise ValueError(f"{where} is {number!r}: JSON has no NaN or infinity, store None")
        return number
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, (np.ndarray, torch.Tensor)):
        items = value.detach().cpu().tolist() if isinstance(value, torch.Tensor) else value.tolist()
        return to_json(items, where)
    if callable(getattr(value, "to_dict", None)):
        return to_json(value.to_dict(), where)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {
            f.name: to_json(getattr(value, f.name), f"{where}.{f.name}") for f in fields if f.init
        }
    if isinstance(value, Mapping):
        out: dict[str, JSON] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where} has the key {key!r}: JSON keys must be strings")
            out[key] = to_json(item, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [to_json(item, f"{where}[{i}]") for i, item in enumerate(value)]
    raise TypeError(
        f"{where} is a {type(value).__qualname__}, which has no JSON form; give a dict, a "
        "dataclass or an object with to_dict()"
    )


def _hints(cls: type) -> dict[str, Any]:
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError, AttributeError):  # unresolvable: fall back to field defaults
        return {}


def _is_tuple_type(hint: Any) -> bool:
    if isinstance(hint, str):
        return hint.replace(" ", "").lower().startswith(("tuple", "typing.tuple"))
    return hint is tuple or typing.get_origin(hint) is tuple


def _from_json(hint: Any, value: Any, where: str) -> Any:
    """Undo :func:`to_json` for one value annotated ``hint`` (tuples, nested dataclasses)."""
    if value is None or hint is None:
        return value
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if isinstance(value, dict):
            options = [a for a in options if dataclasses.is_dataclass(a)] or options
        elif isinstance(value, list):
            options = [a for a in options if _is_tuple_type(a)] or options
        return _from_json(options[0], value, where) if options else value
    if isinstance(hint, type) and dataclasses.is_dataclass(hint) and isinstance(value, dict):
        return config_from_json(hint, value, where)
    if isinstance(value, list):
        args = typing.get_args(hint)
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(_from_json(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
            if len(args) == len(value):
                return tuple(
                    _from_json(a, v, f"{where}[{i}]")
                    for i, (a, v) in enumerate(zip(args, value, strict=True))
                )
            return tuple(value)
        if origin is list and args:
            return [_from_json(args[0], v, f"{where}[{i}]") for i, v in enumerate(value)]
        if _is_tuple_type(hint):
            return tuple(value)
    if isinstance(value, dict) and origin is dict and len(typing.get_args(hint)) == 2:
        value_hint = typing.get_args(hint)[1]
        return {k: _from_json(value_hint, v, f"{where}.{k}") for k, v in value.items()}
    return value


def config_from_json(cls: type, data: Any, where: str = "config") -> Any:
    """Rebuild the dataclass ``cls`` from the JSON object ``data`` written by :func:`to_json`.

    Keys the class names in its ``RETIRED_KEYS`` (settings that configs written by earlier
    versions hold and that no longer shape the model) are dropped first.

    Raises:
        ValueError: ``data`` is not an object, has unknown or missing keys, or ``cls``
            rejects the values (its ``__post_init__`` message is kept).
    """
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be a JSON object for {cls.__qualname__}, found {data!r}")
    retired: frozenset[str] = getattr(cls, "RETIRED_KEYS", frozenset())
    data = {k: v for k, v in data.items() if k not in retired}
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(data) - set(fields))
    missing = sorted(set(fields) - set(data))
    if unknown or missing:
        raise ValueError(
            f"{where} does not match {cls.__qualname__}: unknown keys {unknown}, missing keys "
            f"{missing}"
        )
    hints = _hints(cls)
    kwargs = {}
    for name, field in fields.items():
        hint = hints.get(name, field.type)
        value = _from_json(hint, data[name], f"{where}.{name}")
        if isinstance(value, list) and isinstance(field.default, tuple):
            value = tuple(value)
        kwargs[name] = value
    try:
        return cls(**kwargs)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{where} is not a valid {cls.__qualname__}: {e}") from e
