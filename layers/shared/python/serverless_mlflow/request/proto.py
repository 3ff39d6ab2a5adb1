"""Protobuf's JSON parsing, as MLflow's server runs it on a request before its handler checks.

Field kinds: ``string``, ``int32``, ``int64``, ``double``, ``bool``, ``enum``, ``message`` (a JSON
object), ``map`` (``map<string, string>``: an object whose values are strings) and ``[kind]`` for a
repeated field. Top-level fields go through ``parse``; nested messages (metrics, params, tags, datasets)
through the ``to_*`` converters, which follow protobuf's rules for values inside a message.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .answers import type_error

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT_RANGES = {"int64": (INT64_MIN, INT64_MAX), "int32": (INT32_MIN, INT32_MAX)}


def unpaired_surrogate(value: str) -> bool:
    """Whether a string holds a lone UTF-16 surrogate (JSON text may write one, e.g. ``"\\ud800"``): not
    Unicode text, so protobuf refuses it and DynamoDB cannot store it."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


class Unpaired(ValueError):
    """protobuf's "Unpaired surrogate": the field is left unset (its proto default)."""


def _parse_scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError
        if unpaired_surrogate(value):
            raise Unpaired
        return value
    if kind in ("int64", "int32"):
        if isinstance(value, bool):
            raise ValueError
        if isinstance(value, int):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            try:
                return int(value)
            except ValueError:
                # protobuf's JSON parser also takes integral floats written as strings ("1e2", "1.0").
                as_float = float(value)
                if not as_float.is_integer():
                    raise
                return int(as_float)
        raise ValueError
    if kind == "double":
        # protobuf's JSON parser reads true/false as 1.0/0.0 for doubles (not for integers).
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, str):
            parsed = float(value)
            if math.isnan(parsed) and value not in ("NaN", "nan"):
                raise ValueError
            return parsed
        raise ValueError
    if kind == "bool":
        if isinstance(value, bool):
            return value
        raise ValueError
    if kind in ("message", "map"):
        if not isinstance(value, dict):
            raise ValueError
        return value
    if kind.startswith("enum"):
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
        raise ValueError
    raise ValueError(kind)


def parse(raw: Mapping[str, Any], fields: Mapping[str, str]) -> tuple[dict[str, Any], bool]:
    """Coerce the known fields to their proto types. Returns (message, parsed_ok)."""
    message: dict[str, Any] = {}
    ok = True
    for name, kind in fields.items():
        if name not in raw or raw[name] is None:
            continue
        value = raw[name]
        try:
            if kind.startswith("["):
                if not isinstance(value, list):
                    raise ValueError
                items: list[Any] = []
                for v in value:
                    try:
                        items.append(_parse_scalar(kind[1:-1], v))
                    except Unpaired:
                        message[name] = items  # protobuf keeps the entries it read before the one it failed on
                        raise
                message[name] = items
            else:
                message[name] = _parse_scalar(kind, value)
        except Unpaired:
            # A string field left unset: MLflow's handler reads its default, "".
            message.setdefault(name, "")
            ok = False
        except (ValueError, TypeError):
            ok = False
    return message, ok


def int_in_range(value: int, name: str, raw: Any, kind: str) -> int:
    """An int32/int64 field outside its type's range fails protobuf's parse: MLflow's type error."""
    low, high = INT_RANGES[kind]
    if not low <= value <= high:
        raise type_error(name, raw)
    return value


def string_map(name: str, value: Mapping[str, Any]) -> dict[str, str]:
    """A ``map<string, string>`` field: every value must be a string (protobuf's JSON parser)."""
    for key, item in value.items():
        if not isinstance(item, str):
            raise type_error(f"{name}.{key}", item)
    return dict(value)


# --- values inside nested messages ----------------------------------------------------------------


class NestedParseError(ValueError):
    pass


def to_double(value: Any) -> float:
    # protobuf reads JSON true/false as 1.0/0.0 for doubles.
    if value is None:
        raise NestedParseError
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value == "nan":  # protobuf insists on "NaN"
            raise NestedParseError
        try:
            return float(value)
        except ValueError:
            raise NestedParseError from None
    raise NestedParseError


def to_int64(value: Any) -> int:
    if isinstance(value, bool) or value is None:
        raise NestedParseError
    if isinstance(value, float):
        if not value.is_integer():
            raise NestedParseError
        value = int(value)
    elif isinstance(value, str):
        try:
            value = int(value)
        except ValueError:
            try:
                as_float = float(value)
            except ValueError:
                raise NestedParseError from None
            if not as_float.is_integer():
                raise NestedParseError from None
            value = int(as_float)
    if not isinstance(value, int) or not INT64_MIN <= value <= INT64_MAX:
        raise NestedParseError
    return value


FLOAT32_MAX = 3.4028234663852886e38


def read_float(value: Any, float32: bool = False) -> float | None:
    """A float or double field inside a message as protobuf's JSON parser reads it; None when it refuses the
    value and leaves the field unset (MLflow then sees its default). A JSON number that is not finite (a bare
    ``NaN``, ``Infinity`` or ``1e309``) or past a float's range is refused; the strings "NaN", "Infinity" and
    "-Infinity" are read; true/false read as 1.0/0.0."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        try:
            number = float(value)
        except OverflowError:
            return None
        if not math.isfinite(number) or (float32 and abs(number) > FLOAT32_MAX):
            return None
        return number
    if isinstance(value, str) and value != "nan":
        try:
            number = float(value)
        except ValueError:
            return None
        # A string past a float's range is stored as an infinity.
        return math.copysign(math.inf, number) if float32 and abs(number) > FLOAT32_MAX else number
    return None


def read_int32(value: Any) -> int | None:
    """An int32 field inside a message as protobuf's JSON parser reads it (an integer, an integral float, a
    numeric string); None when it refuses the value and leaves the field unset."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        number = to_int64(value)
    except NestedParseError:
        return None
    return number if INT32_MIN <= number <= INT32_MAX else None


def to_string(value: Any) -> str:
    if not isinstance(value, str):
        raise NestedParseError
    # protobuf refuses a lone surrogate and leaves the field unset: MLflow then reads "".
    return "" if unpaired_surrogate(value) else value
