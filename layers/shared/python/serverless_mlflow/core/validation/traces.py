"""Traces: tags, and the archival retention / location settings carried in experiment tags."""

from __future__ import annotations

import json
import re
import urllib.parse
from typing import Any

from serverless_mlflow.core.errors import invalid

from .common import validate_length_limit, validate_tag_name
from .limits import MAX_TRACE_ARCHIVAL_RETENTION_LENGTH, MAX_TRACE_TAG_KEY_LENGTH, MAX_TRACE_TAG_VAL_LENGTH

_TRACE_ARCHIVAL_RETENTION_REGEX = re.compile(r"^[1-9][0-9]*[mhd]$")
TRACE_ARCHIVAL_RETENTION_TAG = "mlflow.trace.archivalRetention"
TRACE_ARCHIVE_NOW_TAG = "mlflow.trace.archiveNow"

_RETENTION_FORMAT_MESSAGE = "Trace archival retention must be in the form `<int><unit>`, where unit is one of 'm', 'h', or 'd'."


def validate_trace_archival_retention_string(value: Any, *, parameter_name: str | None = None) -> str:
    expected = (
        f"Invalid value for '{parameter_name}'. Expected a duration in the form "
        "`<int><unit>`, where unit is one of 'm', 'h', or 'd' (for example '30d' or '12h')."
    )
    if not isinstance(value, str):
        raise invalid(expected if parameter_name is not None else _RETENTION_FORMAT_MESSAGE)
    trimmed = value.strip()
    if len(trimmed) > MAX_TRACE_ARCHIVAL_RETENTION_LENGTH:
        if parameter_name is not None:
            raise invalid(f"Invalid value for '{parameter_name}'. Maximum length is 32 characters.")
        raise invalid("Trace archival duration must be at most 32 characters.")
    if _TRACE_ARCHIVAL_RETENTION_REGEX.fullmatch(trimmed) is None:
        raise invalid(expected if parameter_name is not None else _RETENTION_FORMAT_MESSAGE)
    return trimmed


def parse_trace_archival_duration_config(
    value: str | None, *, duration_key: str, expected_type: str | None = None, allow_missing_duration: bool = False
) -> str | None:
    if value is None:
        return None
    try:
        payload = json.loads(value)
    except Exception as error:
        raise invalid("Trace archival config must be encoded as a JSON object.") from error
    if not isinstance(payload, dict):
        raise invalid("Trace archival config must be encoded as a JSON object.")
    if expected_type is not None and payload.get("type") != expected_type:
        raise invalid(f"Trace archival config must use type '{expected_type}'.")
    duration_value = payload.get(duration_key)
    if duration_value is None and allow_missing_duration:
        return None
    return validate_trace_archival_retention_string(duration_value)


def validate_trace_experiment_tag(key: str | None, value: Any) -> None:
    if key == TRACE_ARCHIVAL_RETENTION_TAG:
        parse_trace_archival_duration_config(value, duration_key="value", expected_type="duration")
    elif key == TRACE_ARCHIVE_NOW_TAG:
        parse_trace_archival_duration_config(value, duration_key="older_than", allow_missing_duration=True)


def validate_trace_archival_location(value: Any, *, parameter_name: str | None = None) -> str:
    message = (
        f"Invalid value for '{parameter_name}'. Expected a URI string."
        if parameter_name is not None
        else "Trace archival location must be a URI string."
    )
    if not isinstance(value, str):
        raise invalid(message)
    trimmed = value.strip()
    parsed = urllib.parse.urlparse(trimmed)
    if not parsed.scheme:
        raise invalid(message)
    if parsed.scheme == "mlflow-artifacts":
        if parameter_name is not None:
            raise invalid(
                f"Invalid value for '{parameter_name}'. Trace archival location cannot use the proxy-only `mlflow-artifacts:` scheme."
            )
        raise invalid("Trace archival location cannot use the proxy-only `mlflow-artifacts:` scheme.")
    return trimmed


def validate_trace_tag(key: str | None, value: str | None) -> tuple[str | None, str | None]:
    validate_tag_name(key)
    key = validate_length_limit("key", MAX_TRACE_TAG_KEY_LENGTH, key)
    value = validate_length_limit("value", MAX_TRACE_TAG_VAL_LENGTH, value, truncate=True)
    return key, value
