"""Records to JSON and back: the one encoding the daemon's API and its clients share.

A record goes on the wire field for field (`to_json`), and a client reads it back into the same
record (`from_json`), so what the CLI, the TUI and the benchmarks hold is the typed record whether
it came from the local memory or from the daemon. Fields marked `LOCAL` never leave the process
that made them (a speaker's voice embedding, an answer's whole retrieval).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")

# `field(metadata=LOCAL)`: the field stays in the process (too large, or not JSON).
LOCAL = types.MappingProxyType({"wire": False})


def on_wire(f: dataclasses.Field[Any]) -> bool:
    return f.metadata.get("wire", True)


def to_json(value: Any) -> Any:
    """A record (or a list of them, or a plain value) as JSON-ready Python: dicts, lists, numbers."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_json(getattr(value, f.name)) for f in dataclasses.fields(value) if on_wire(f)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json(v) for k, v in value.items()}
    return value


def from_json(kind: type[T], data: Any) -> T:
    """`data` (parsed JSON) read as a `kind`: a record, with its nested records, tuples and enums.

    A field the JSON leaves out takes its default (a `LOCAL` field always does); one it adds is
    ignored, so a newer daemon's extra fields do not break an older client. A ValueError says which
    field of which record did not fit.
    """
    return _read(kind, data, kind.__name__)


def _read(kind: Any, data: Any, where: str) -> Any:
    origin = typing.get_origin(kind)
    if kind is Any:
        return data
    if origin in (types.UnionType, typing.Union):
        arms = typing.get_args(kind)
        if data is None and type(None) in arms:
            return None
        failures = []
        for arm in (a for a in arms if a is not type(None)):
            try:
                return _read(arm, data, where)
            except ValueError as exc:
                failures.append(str(exc))
        raise ValueError(failures[0] if failures else f"{where}: {data!r:.60} is not allowed")
    if origin is tuple:
        args = typing.get_args(kind)
        _expect(data, list, where)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], v, f"{where}[{i}]") for i, v in enumerate(data))
        return tuple(_read(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, data, strict=True)))
    if origin is list:
        _expect(data, list, where)
        return [_read(typing.get_args(kind)[0], v, f"{where}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        _expect(data, dict, where)
        value_kind = typing.get_args(kind)[1]
        return {k: _read(value_kind, v, f"{where}.{k}") for k, v in data.items()}
    if dataclasses.is_dataclass(kind):
        _expect(data, dict, where)
        hints = _hints(kind)
        given = {
            f.name: _read(hints[f.name], data[f.name], f"{where}.{f.name}")
            for f in dataclasses.fields(kind)
            if f.init and on_wire(f) and f.name in data
        }
        try:
            return kind(**given)
        except TypeError as exc:  # a required field missing
            raise ValueError(f"{where}: {exc}") from None
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(data)
        except ValueError:
            raise ValueError(f"{where}: {data!r:.60} is not a {kind.__name__}") from None
    if kind is float:
        if isinstance(data, int | float) and not isinstance(data, bool):
            return float(data)
        raise ValueError(f"{where}: {data!r:.60} is not a number")
    if kind in (int, str, bool):
        if isinstance(data, kind) and (kind is bool or not isinstance(data, bool)):
            return data
        raise ValueError(f"{where}: {data!r:.60} is not a {kind.__name__}")
    if kind is type(None):
        if data is None:
            return None
        raise ValueError(f"{where}: {data!r:.60} is not null")
    raise ValueError(f"{where}: a {kind!r} cannot be read from JSON")


def _expect(data: Any, kind: type, where: str) -> None:
    if not isinstance(data, kind):
        raise ValueError(f"{where}: {data!r:.60} is not a JSON {'array' if kind is list else 'object'}")


@functools.cache
def _hints(kind: type) -> dict[str, Any]:
    # The records write their annotations as strings (`from __future__ import annotations`).
    return typing.get_type_hints(kind)
