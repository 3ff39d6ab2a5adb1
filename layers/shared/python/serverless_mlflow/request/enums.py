"""The proto enums requests carry (service.proto's ViewType and RunStatus) and how a handler reads them.

protobuf's JSON parser takes an enum as its name or its number; what MLflow's handler does next
differs per field, so each reader below says which rule it follows.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_mlflow.core.errors import invalid

from .answers import type_error

# ViewType: which lifecycle stages a search lists; unset is ACTIVE_ONLY.
ACTIVE_ONLY, DELETED_ONLY, ALL = 1, 2, 3
VIEW_TYPES = {ACTIVE_ONLY: "ACTIVE_ONLY", DELETED_ONLY: "DELETED_ONLY", ALL: "ALL"}
VIEW_TYPE_NUMBERS = {name: number for number, name in VIEW_TYPES.items()}

# RunStatus: stored and answered by name.
RUN_STATUS_NAMES = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
RUN_STATUS_NUMBERS = {name: number for number, name in RUN_STATUS_NAMES.items()}


def enum_number(field: str, value: Any, numbers: Mapping[str, int]) -> int:
    """An enum field checked by the handler's ``_assert_intlike``: a name of the enum is its number; any
    other string must be an integer (protobuf rejects the name, then the handler's check answers)."""
    if isinstance(value, str):
        if value in numbers:
            return numbers[value]
        try:
            return int(value)
        except ValueError:
            raise type_error(field, value) from None
    return int(value)


def view_type(value: Any, field: str = "view_type", *, lenient: bool = False) -> int:
    """A ViewType field; unset is ACTIVE_ONLY.

    Strict (search_experiments checks ``view_type`` with ``_assert_intlike``): a name or number of the
    enum, else MLflow's error. Lenient (search_runs does not check ``run_view_type``): a value protobuf
    cannot read leaves the field unset, so an unknown name or number reads as ACTIVE_ONLY.
    """
    if value is None:
        return ACTIVE_ONLY
    if lenient:
        if isinstance(value, str):
            return VIEW_TYPE_NUMBERS.get(value, ACTIVE_ONLY)
        return value if value in VIEW_TYPES else ACTIVE_ONLY
    number = enum_number(field, value, VIEW_TYPE_NUMBERS)
    if number not in VIEW_TYPES:
        raise invalid(f"Invalid value {number} for enum field '{field}'.")
    return number


def run_status(value: Any) -> str | None:
    """A RunStatus from JSON: a name or a number. An unknown name leaves the field unset (protobuf
    fails to parse it and MLflow's handler then sees no status); an unknown number is a 400."""
    if value is None:
        return None
    if isinstance(value, str):
        return value if value in RUN_STATUS_NUMBERS else None
    if isinstance(value, int) and value in RUN_STATUS_NAMES:
        return RUN_STATUS_NAMES[value]
    raise invalid(f"Invalid value {value} for parameter 'status' supplied: Hint: Value was of type '{type(value).__name__}'.")
