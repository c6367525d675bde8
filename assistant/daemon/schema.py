"""The API's response models, generated from the records the clients read back.

A route that answers with a record (`Status`, `Speaker`, `SearchResult`...) declares
`response_model=model_of(Status)`: a pydantic model with the record's wire fields (those not
marked `LOCAL`), nested records as their own generated models, and the record's docstring as
its description. So the OpenAPI description, the JSON the route sends (`assistant.wire.to_json`)
and what `DaemonClient` decodes (`assistant.wire.from_json`) all come from one definition, and
cannot drift apart.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, create_model

from ..wire import on_wire

# Records whose model is being made: one that holds itself (a tree node's children) refers to
# its own model by name until it exists.
_BUILDING: set[type] = set()


@functools.cache
def model_of(record: type) -> type[BaseModel]:
    """The pydantic model of a record's wire form (cached: one model per record, so the OpenAPI
    description names each once)."""
    if not dataclasses.is_dataclass(record):
        raise TypeError(f"{record!r} is not a record")
    _BUILDING.add(record)
    try:
        model = _make(record)
    finally:
        _BUILDING.discard(record)
    model.model_rebuild(_types_namespace={record.__name__: model})
    return model


def _make(record: type) -> type[BaseModel]:
    hints = typing.get_type_hints(record)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(record):
        if not on_wire(f):
            continue
        default: Any = ...
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        fields[f.name] = (_wire_type(hints[f.name]), default)
    doc = inspect.getdoc(record) or None
    return create_model(  # type: ignore[call-overload, no-any-return]
        record.__name__, __config__=ConfigDict(title=record.__name__), __doc__=doc, **fields
    )


def _wire_type(kind: Any) -> Any:
    # Nested records become their generated models; tuples become lists, as JSON has them.
    origin = typing.get_origin(kind)
    if dataclasses.is_dataclass(kind):
        return kind.__name__ if kind in _BUILDING else model_of(kind)  # type: ignore[arg-type]
    if origin in (types.UnionType, typing.Union):
        arms = tuple(_wire_type(a) for a in typing.get_args(kind))
        return functools.reduce(lambda a, b: a | b, arms)
    if origin is tuple:
        args = typing.get_args(kind)
        inner = args[0] if len(args) == 2 and args[1] is Ellipsis else functools.reduce(lambda a, b: a | b, args)
        return list[_wire_type(inner)]  # type: ignore[misc]
    if origin is list:
        return list[_wire_type(typing.get_args(kind)[0])]  # type: ignore[misc]
    if origin is dict:
        key, value = typing.get_args(kind)
        return dict[key, _wire_type(value)]  # type: ignore[valid-type]
    return kind
