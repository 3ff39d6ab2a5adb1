"""Request parsing that answers bad input the way MLflow's Flask handlers do.

MLflow first parses the request JSON into its protobuf message; only when that fails does it run
the handler's type checks, then it always runs the presence and range checks
(``server/handlers._get_request_message`` / ``_validate_param_against_schema``). Here ``FIELDS``
describe the proto types and ``schema`` lists the handler's checks, so the error texts match.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from serverless_mlflow.errors import MlflowError, invalid
from serverless_mlflow.validation import invalid_value

API_DOCS_HINT = " See the API docs for more information about request parameters."

Check = Callable[[Any], None]


class _Fail(AssertionError):
    pass


def required(value: Any) -> None:
    if value is None or value == "":
        raise _Fail()


def string(value: Any) -> None:
    if not isinstance(value, str):
        raise _Fail()


def intlike(value: Any) -> None:
    try:
        value = int(value)
    except (ValueError, TypeError):
        pass
    if not isinstance(value, int):
        raise _Fail()


def floatlike(value: Any) -> None:
    try:
        value = float(value)
    except (ValueError, TypeError):
        pass
    if not isinstance(value, float):
        raise _Fail()


def array(value: Any) -> None:
    if not isinstance(value, list):
        raise _Fail()


def boolean(value: Any) -> None:
    if not isinstance(value, bool):
        raise _Fail()


def item_type_string(value: Any) -> None:
    if not all(isinstance(item, str) for item in value):
        raise _Fail()


def less_than_or_equal(limit: int, message: str | None = None) -> Check:
    def check(value: Any) -> None:
        if int(value) > limit:
            raise _Fail(message) if message else _Fail()

    return check


def each_has(field_names: tuple[str, ...], list_name: str) -> Check:
    """MLflow's ``_assert_<x>_fields_present``: every entry of a list carries these fields."""

    def check(entries: Any) -> None:
        for idx, entry in enumerate(entries or []):
            for name in field_names:
                value = entry.get(name) if isinstance(entry, dict) else None
                if value is None or value == "":
                    raise _Fail(f"Missing value for required parameter '{list_name}[{idx}].{name}'.")

    return check


_TYPE_CHECKS = {string, intlike, floatlike, array, boolean, item_type_string}


def type_error(path: str, value: Any) -> MlflowError:
    """MLflow's answer to a value of the wrong type (or out of its proto type's range) at ``path``."""
    return invalid(invalid_value(path, value, f" Hint: Value was of type '{type(value).__name__}'.") + API_DOCS_HINT)


def validate(raw: dict[str, Any], schema: dict[str, list[Check]], proto_ok: bool) -> None:
    for param, checks in schema.items():
        value = raw.get(param)
        for check in checks:
            if check in _TYPE_CHECKS and proto_ok:
                continue
            try:
                if check is not required and value is None:
                    continue
                check(value)
            except AssertionError as error:
                if error.args and error.args[0]:
                    message = error.args[0]
                elif check is required:
                    message = f"Missing value for required parameter '{param}'."
                else:
                    message = invalid_value(param, value, f" Hint: Value was of type '{type(value).__name__}'.")
                raise invalid(message + API_DOCS_HINT) from None


# --- proto parsing emulation ---------------------------------------------------------------

def _parse_scalar(kind: str, value: Any) -> Any:
    if kind == "string":
        if not isinstance(value, str):
            raise ValueError
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
    if kind == "message":
        if not isinstance(value, dict):
            raise ValueError
        return value
    if kind.startswith("enum"):
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return value
        raise ValueError
    raise ValueError(kind)


def parse(raw: dict[str, Any], fields: dict[str, str]) -> tuple[dict[str, Any], bool]:
    """Coerce the known fields to their proto types. Returns (message, parsed_ok)."""
    message: dict[str, Any] = {}
    ok = True
    for name, kind in fields.items():
        if name not in raw or raw[name] is None:
            continue
        value = raw[name]
        try:
            if kind.startswith("["):
                inner = kind[1:-1]
                if not isinstance(value, list):
                    raise ValueError
                message[name] = [_parse_scalar(inner, v) for v in value]
            else:
                message[name] = _parse_scalar(kind, value)
        except (ValueError, TypeError):
            ok = False
    return message, ok


def message(raw: dict[str, Any], fields: dict[str, str], schema: dict[str, list[Check]] | None = None) -> dict[str, Any]:
    """Parse and validate a request like MLflow: returns only the fields that were sent, typed."""
    parsed, ok = parse(raw, fields)
    if schema:
        validate(raw, schema, ok)
    if not ok:
        # Types that the handler schema did not check still fail protobuf parsing in MLflow.
        for name in fields:
            if name in raw and name not in parsed and raw[name] is not None:
                raise type_error(name, raw[name])
    return parsed
