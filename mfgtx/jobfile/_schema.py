"""Build frozen config dataclasses from YAML mappings, naming the key of every error.

Unknown keys are refused with a suggestion (``data.colums: unknown key; did you mean
'columns'?``); a value of the wrong type, or one the dataclass's ``__post_init__`` refuses,
is reported with its full dotted key. Supported field types: ``bool``, ``int``, ``float``,
``str``, ``Literal[...]``, ``tuple[T, ...]``, ``dict[K, V]``, nested dataclasses, and
``X | None``.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, Union

from mfgtx._config import ConfigError

__all__ = ["ConfigError", "build", "load_yaml", "parse_override", "set_key", "yaml_message"]

T = TypeVar("T")


def _where(file: str, key: str) -> str:
    return f"{file}: {key}" if key else file


def _suggest(name: str, allowed: list[str]) -> str:
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    if close:
        return f"; did you mean {close[0]!r}?"
    return f"; expected one of {sorted(allowed)}"


def _convert(tp: Any, value: Any, key: str, file: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        errors = []
        for a in args:
            try:
                return _convert(a, value, key, file)
            except ConfigError as e:
                errors.append(str(e))
        raise ConfigError(errors[0])
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise ConfigError(
                f"{_where(file, key)}: must be one of {list(allowed)}, found {value!r}"
            )
        return value
    if origin is tuple:
        item = typing.get_args(tp)[0]
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list | tuple):
            raise ConfigError(f"{_where(file, key)}: expected a list, found {value!r}")
        return tuple(_convert(item, v, f"{key}[{i}]", file) for i, v in enumerate(value))
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(f"{_where(file, key)}: expected a mapping, found {value!r}")
        k, v = typing.get_args(tp)
        return {_convert(k, name, key, file): _convert(v, x, f"{key}.{name}", file)
                for name, x in value.items()}  # fmt: skip
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return build(tp, value, file=file, prefix=key)
    if tp is Any:
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{_where(file, key)}: expected true or false, found {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{_where(file, key)}: expected a whole number, found {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(f"{_where(file, key)}: expected a number, found {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            raise ConfigError(f"{_where(file, key)}: expected text, found {value!r}")
        return str(value)
    raise TypeError(f"unsupported config field type {tp!r} at {key}")  # a bug, not input


def build(cls: type[T], data: Any, *, file: str = "config", prefix: str = "") -> T:
    """``cls(**data)`` with unknown keys, wrong types and refused values named by key.

    Example:
        >>> from dataclasses import dataclass
        >>> @dataclass(frozen=True)
        ... class Window:
        ...     window: int = 60
        >>> build(Window, {"window": 30}).window
        30
        >>> build(Window, {"windw": 30}, file="job.yaml", prefix="windows")
        Traceback (most recent call last):
        ...
        mfgtx._config.ConfigError: job.yaml: windows.windw: unknown key; did you mean 'window'?
    """
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{_where(file, prefix)}: expected a mapping of keys, found {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(typing.cast(Any, cls)) if f.init}
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{prefix}.{name}" if prefix else str(name)
        if name not in fields:
            raise ConfigError(
                f"{_where(file, key)}: unknown key{_suggest(str(name), list(fields))}"
            )
        kwargs[name] = _convert(hints[name], value, key, file)
    missing = [
        n
        for n, f in fields.items()
        if n not in kwargs
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        key = f"{prefix}.{missing[0]}" if prefix else missing[0]
        raise ConfigError(f"{_where(file, key)}: required key is missing")
    try:
        return cls(**kwargs)
    except ConfigError:
        raise
    except (ValueError, TypeError) as e:
        raise ConfigError(f"{_where(file, prefix)}: {e}") from e


#: Largest job file (or ``--set`` value) read, in characters: a job file is a page of settings.
MAX_YAML_CHARS = 1_000_000
#: Deepest nesting of mappings and lists accepted in a job file.
MAX_YAML_DEPTH = 50


def _yaml_loader() -> type:
    """A safe YAML loader for job files.

    Only true/false are booleans (YAML 1.1 also turns ``on``, ``off``, ``yes``, ``no`` into
    booleans, so ``on: lot`` would become ``True: lot``). Aliases (``*name``, and ``<<:``
    merges, which use them) are refused: a job file has no use for them, and a few nested
    aliases expand to billions of nodes (the "billion laughs" attack). Nesting deeper than
    :data:`MAX_YAML_DEPTH` is refused.
    """
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"the alias *{event.anchor} is not allowed in a job file; write the "
                    "value out in full",
                    event.start_mark,
                )
            self._depth = getattr(self, "_depth", 0) + 1
            try:
                if self._depth > MAX_YAML_DEPTH:
                    raise yaml.composer.ComposerError(
                        None,
                        None,
                        f"nested more than {MAX_YAML_DEPTH} levels deep",
                        self.peek_event().start_mark,
                    )
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: dict[Any, Any] = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str | int | float | bool) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"found duplicate key {key!r} (first on line {seen[key].line + 1}); "
                        "keep one",
                        key_node.start_mark,
                    )
                seen[key] = key_node.start_mark
            return super().construct_mapping(node, deep=deep)

    Loader.yaml_implicit_resolvers = {
        k: [(tag, rx) for tag, rx in v if tag != "tag:yaml.org,2002:bool"]
        for k, v in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool",
        re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
        list("tTfF"),
    )
    return Loader


#: PyYAML's problems in the words of a person editing a job file: (problem pattern,
#: context pattern or "", plain text). ``{context_line}`` is the line where it began.
_PLAIN_YAML = (
    (
        r"^mapping values are not allowed here",
        "",
        "a ':' where a value was expected: put a value that holds ': ' in quotes, or give "
        "the key its own line",
    ),
    (
        r"^found character '\\t' that cannot start any token",
        "",
        "a tab character: indent job files with spaces",
    ),
    (
        r"^found unexpected end of stream",
        "quoted scalar",
        "a quote opened on line {context_line} is never closed",
    ),
    (
        r"^expected <block end>, but found",
        "",
        "this line's indentation does not line up with the lines above it",
    ),
    (
        r"^expected ',' or '\]'",
        "",
        "a list opened with '[' on line {context_line} is not closed with ']'",
    ),
    (
        r"^expected ',' or '\}'",
        "",
        "a section opened with '{{' on line {context_line} is not closed with '}}'",
    ),
    (r"^could not find expected ':'", "", "a key without ':' after it"),
    (r"^found duplicate key", "", "{problem}"),
)


def yaml_message(err: Exception, file: str) -> str:
    """A YAML error as ``file:line:column: what is wrong`` (lines and columns from 1), in
    the words of a person editing the file rather than the parser's.

    Example:
        >>> import yaml
        >>> try:
        ...     yaml.safe_load("data:\\n\\tsource: x\\n")
        ... except yaml.YAMLError as e:
        ...     print(yaml_message(e, "job.yaml"))
        job.yaml:2:1: not valid YAML: a tab character: indent job files with spaces
    """
    import re

    mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
    problem = getattr(err, "problem", None) or str(err)
    context = getattr(err, "context", None) or ""
    begun = getattr(err, "context_mark", None)
    what = None
    for pattern, in_context, text in _PLAIN_YAML:
        if re.search(pattern, problem) and in_context in context:
            line = begun.line + 1 if begun is not None else "?"
            what = text.format(context_line=line, problem=problem)
            break
    if what is None:  # a rarer problem: PyYAML's words, with what it was reading
        what = f"{problem} ({context})" if context and context not in problem else problem
    if mark is None:
        return f"{file}: not valid YAML: {what}"
    return f"{file}:{mark.line + 1}:{mark.column + 1}: not valid YAML: {what}"


def load_yaml(text: str, file: str = "config") -> Any:
    r"""Parse YAML text with :func:`_yaml_loader`.

    Raises:
        ConfigError: the text is longer than :data:`MAX_YAML_CHARS`, or not valid YAML for a
            job file, as ``file:line:column: what is wrong``.

    Example:
        >>> load_yaml("on: lot\nwindow: 30")
        {'on': 'lot', 'window': 30}
        >>> try:
        ...     load_yaml("a: &x [1, 2]\nb: *x", file="job.yaml")
        ... except ConfigError as e:
        ...     print(str(e).split("; ")[0])
        job.yaml:2:4: not valid YAML: the alias *x is not allowed in a job file
    """
    import yaml

    if len(text) > MAX_YAML_CHARS:
        raise ConfigError(
            f"{file}: {len(text):,} characters is more than a job file can hold "
            f"({MAX_YAML_CHARS:,}); is this the right file?"
        )
    try:
        return yaml.load(text, Loader=_yaml_loader())
    except yaml.YAMLError as e:
        raise ConfigError(yaml_message(e, file)) from e


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"train.epochs=3"`` -> ``(["train", "epochs"], 3)``; the value is read as YAML."""
    key, sep, raw = text.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {text!r}: expected KEY=VALUE, e.g. train.epochs=3")
    try:
        value = load_yaml(raw, file="--set value") if raw.strip() else None
    except ConfigError as e:
        raise ConfigError(f"--set {text!r}: {e}") from e
    return [k.strip() for k in key.split(".")], value


def set_key(data: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``data[path[0]][path[1]]... = value``, creating mappings on the way."""
    node = data
    for i, k in enumerate(path[:-1]):
        nxt = node.get(k)
        if nxt is None:
            nxt = node[k] = {}
        if not isinstance(nxt, dict):
            raise ConfigError(
                f"--set {'.'.join(path)}: {'.'.join(path[: i + 1])} is a value, not a section"
            )
        node = nxt
    node[path[-1]] = value
