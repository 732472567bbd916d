"""The JSON form of the result model's records: any frozen dataclass to plain JSON and back, typed by its
fields (non-finite floats as the strings NaN/Infinity), with one line naming a field of the wrong type."""
from __future__ import annotations

import dataclasses
import enum
import math
import types
import typing
from typing import Any


class ObjectForm:
    """A record whose JSON form is one object of free keys: its `values` (a shape's parameters)."""

    values: dict[str, Any]


def omitted_empty(default: Any = ()):
    """A field left out of the JSON form while empty (an empty tuple, False): reports without it are written as
    they always were."""
    return dataclasses.field(default=default, metadata={"omitted_empty": True})


def unwritten(default: Any):
    """A field the JSON form leaves out (and equality ignores): what the run that made a record reads off it, never
    a report's content; read back, it is `default`."""
    return dataclasses.field(default=default, compare=False, metadata={"unwritten": True})


def _encode(value: Any) -> Any:
    if isinstance(value, ObjectForm):
        return _encode(value.values)
    if isinstance(value, enum.Enum):
        return value.value
    if dataclasses.is_dataclass(value):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)
                if (getattr(value, f.name) or not f.metadata.get("omitted_empty")) and not f.metadata.get("unwritten")}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return value


encode = _encode   # public: what the renderers use


_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


class ReportFormatError(ValueError):
    """A report's JSON does not match the model: the message names the field, what it should be and what it is."""


def _kind(value: Any) -> str:
    return "null" if value is None else {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
                                         list: "a list", dict: "an object"}.get(type(value), type(value).__name__)


def _decode_record(tp: Any, value: dict, where: str) -> Any:
    """The dataclass `tp` from a JSON object: every field known, none without a default missing."""
    hints = typing.get_type_hints(tp)
    fields = dataclasses.fields(tp)
    unknown = set(value) - {f.name for f in fields}
    if unknown:
        raise ReportFormatError(f"field {where}: {tp.__name__} has no fields {sorted(unknown)}")
    missing = [f.name for f in fields if f.name not in value and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise ReportFormatError(f"field {where}: {tp.__name__} lacks {', '.join(missing)}")
    return tp(**{k: _decode(hints[k], v, f"{where}.{k}") for k, v in value.items()})


def _decode(tp: Any, value: Any, where: str = "report") -> Any:
    """`value` (JSON) as the model's type `tp`; ReportFormatError naming the field where it is not."""
    def wrong(expected: str):
        return ReportFormatError(f"field {where}: expected {expected}, got {_kind(value)} {str(value)[:40]!r}")
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            if len(args) == len(typing.get_args(tp)):
                raise wrong("a value")
            return None
        return _decode(args[0], value, where)
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            raise wrong(" or ".join(map(repr, typing.get_args(tp))))
        return value
    if dataclasses.is_dataclass(tp) or isinstance(tp, type) and issubclass(tp, ObjectForm):
        if not isinstance(value, dict):
            raise wrong(f"an object ({tp.__name__})")
        return tp(value) if issubclass(tp, ObjectForm) else _decode_record(tp, value, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise wrong("a list")
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_decode(args[0], v, f"{where}[{i}]") for i, v in enumerate(value))
        if len(args) != len(value):
            raise wrong(f"a list of {len(args)}")
        return tuple(_decode(a, v, f"{where}[{i}]") for i, (a, v) in enumerate(zip(args, value)))
    if origin is dict:
        if not isinstance(value, dict):
            raise wrong("an object")
        _, vt = typing.get_args(tp)
        return {k: _decode(vt, v, f"{where}.{k}") for k, v in value.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(value)
        except ValueError:
            raise wrong(" or ".join(repr(m.value) for m in tp)) from None
    if tp is float:
        if isinstance(value, str) and value in _NON_FINITE:
            return _NON_FINITE[value]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise wrong("a number")
        return float(value)
    if tp in (int, str, bool):
        if not isinstance(value, tp) or (tp is int and isinstance(value, bool)):
            raise wrong({int: "an integer", str: "a string", bool: "true or false"}[tp])
        return value
    return value
