"""Request parsing that answers bad input the way MLflow's Flask handlers do: the one home for it.

``message`` (a ``Message``: proto field types + the handler's checks, parsed by ``parse_message``),
``checks`` (the handler schema checks), ``proto`` (protobuf's JSON rules), ``nested`` (Metric / Param /
tag messages inside a request), ``enums`` (ViewType, RunStatus and their readers) and ``answers`` (the
type-error text). Each feature keeps one table of its operations' ``Message``s in its own folder.

Also holds what else a request may say and how it is read: the route table and its matching (``routes``,
``route_match``), page tokens and paged answers (``pages``), MLflow's protobuf messages (``protos``), OTLP trace
exports (``otlp``) and the web UI's GraphQL documents (``graphql``).

May import: core.
"""

from __future__ import annotations

from .answers import API_DOCS_HINT, type_error, type_hint
from .checks import (
    Check,
    CheckFailed,
    array,
    between,
    boolean,
    each_has,
    floatlike,
    intlike,
    item_type_string,
    length_at_most,
    less_than_or_equal,
    map_key_present,
    required,
    string,
    validate,
)
from .enums import (
    ACTIVE_ONLY,
    ALL,
    DELETED_ONLY,
    RUN_STATUS_NAMES,
    RUN_STATUS_NUMBERS,
    VIEW_TYPE_NUMBERS,
    VIEW_TYPES,
    enum_number,
    run_status,
    view_type,
)
from .message import Message, parse_message
from .nested import key_values_of, message_of, metrics_of, nested_error
from .proto import INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN, NestedParseError, read_float, read_int32, to_double, to_int64, to_string

__all__ = [
    "ACTIVE_ONLY",
    "ALL",
    "API_DOCS_HINT",
    "DELETED_ONLY",
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "RUN_STATUS_NAMES",
    "RUN_STATUS_NUMBERS",
    "VIEW_TYPES",
    "VIEW_TYPE_NUMBERS",
    "Check",
    "CheckFailed",
    "Message",
    "NestedParseError",
    "array",
    "between",
    "boolean",
    "each_has",
    "enum_number",
    "floatlike",
    "intlike",
    "item_type_string",
    "key_values_of",
    "length_at_most",
    "less_than_or_equal",
    "map_key_present",
    "message_of",
    "metrics_of",
    "nested_error",
    "parse_message",
    "read_float",
    "read_int32",
    "required",
    "run_status",
    "string",
    "to_double",
    "to_int64",
    "to_string",
    "type_error",
    "type_hint",
    "validate",
    "view_type",
]
