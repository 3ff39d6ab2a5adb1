"""The handler checks of MLflow's ``_get_request_message(..., schema=...)`` and the order it runs them in.

A check takes the raw field value and raises ``AssertionError`` (optionally carrying MLflow's own text)
when the value is refused; ``validate`` turns that into MLflow's answer
(``server/handlers._validate_param_against_schema``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation import invalid_value

from .answers import API_DOCS_HINT, type_hint

Check = Callable[[Any], None]


class CheckFailed(AssertionError):
    """A refused value; ``args[0]``, when given, is MLflow's text for it."""


def required(value: Any) -> None:
    if value is None or value == "":
        raise CheckFailed()


def string(value: Any) -> None:
    if not isinstance(value, str):
        raise CheckFailed()


def intlike(value: Any) -> None:
    try:
        value = int(value)
    except (ValueError, TypeError, OverflowError):  # int(inf): MLflow's own check lets it escape (a 500)
        pass
    if not isinstance(value, int):
        raise CheckFailed()


def floatlike(value: Any) -> None:
    try:
        value = float(value)
    except (ValueError, TypeError):
        pass
    if not isinstance(value, float):
        raise CheckFailed()


def array(value: Any) -> None:
    if not isinstance(value, list):
        raise CheckFailed()


def boolean(value: Any) -> None:
    if not isinstance(value, bool):
        raise CheckFailed()


def map_key_present(value: Any) -> None:
    """MLflow's ``_assert_map_key_present``: a list of {key, value} entries, each with a key."""
    if not isinstance(value, list) or any(not isinstance(entry, dict) or entry.get("key") in (None, "") for entry in value):
        raise CheckFailed()


def item_type_string(value: Any) -> None:
    if not all(isinstance(item, str) for item in value):
        raise CheckFailed()


def less_than_or_equal(limit: int, message: str | None = None) -> Check:
    def check(value: Any) -> None:
        if int(value) > limit:
            raise CheckFailed(message) if message else CheckFailed()

    return check


def length_at_most(limit: int, message: Callable[[int], str]) -> Check:
    """A list of at most ``limit`` entries; ``message(length)`` is the handler's text."""

    def check(value: Any) -> None:
        if len(value) > limit:
            raise CheckFailed(message(len(value)))

    return check


def between(low: int, high: int, message: str) -> Check:
    """An integer within ``[low, high]``, with the handler's own text."""

    def check(value: Any) -> None:
        if not low <= int(value) <= high:
            raise CheckFailed(message)

    return check


def each_has(field_names: tuple[str, ...], list_name: str) -> Check:
    """MLflow's ``_assert_<x>_fields_present``: every entry of a list carries these fields."""

    def check(entries: Any) -> None:
        for idx, entry in enumerate(entries or []):
            for name in field_names:
                value = entry.get(name) if isinstance(entry, dict) else None
                if value is None or value == "":
                    raise CheckFailed(f"Missing value for required parameter '{list_name}[{idx}].{name}'.")

    return check


# MLflow skips these when protobuf parsed the request: the proto types already held.
_TYPE_CHECKS = {string, intlike, floatlike, array, boolean, item_type_string}


def validate(raw: Mapping[str, Any], schema: Mapping[str, Sequence[Check]], proto_ok: bool) -> None:
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
                    message = invalid_value(param, value, type_hint(value))
                raise invalid(message + API_DOCS_HINT) from None
            except (ValueError, TypeError, OverflowError):
                # A value the check cannot even read (int("1.5e3"), int(inf)): MLflow's server fails with a 500.
                raise invalid(invalid_value(param, value, type_hint(value)) + API_DOCS_HINT) from None
