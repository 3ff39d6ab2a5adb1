"""What DynamoDB refuses besides an item's size, checked before a request reaches it.

DynamoDB answers a ``ValidationException`` (which would be a 500 here) for a partition key over 2,048 bytes or
a sort key over 1,024 bytes (of the table or of an index), a string that is not Unicode text (a lone
surrogate, which JSON text can carry), a number past 38 digits and a map or list nested more than 32
levels. A request's ids, names and values reach keys and attributes, so:

* a *read* of a key that cannot exist finds nothing (``key_can_exist``): the caller answers as for any
  missing id, as MLflow's store does for an id it does not hold;
* a *write* of such a key or value is refused with INVALID_PARAMETER_VALUE before anything is written
  (``require_storable_key`` / ``require_storable_value``), so a request that fails changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.storage.schema import INDEXES, PK, SK

MAX_PARTITION_KEY_BYTES = 2048
MAX_SORT_KEY_BYTES = 1024
MAX_NESTING = 32
# DynamoDB numbers hold 38 significant digits; the values written here are integers (floats are stored as text).
MAX_NUMBER = 10**38 - 1

KEY_LIMITS: dict[str, int] = {PK: MAX_PARTITION_KEY_BYTES, SK: MAX_SORT_KEY_BYTES}
for _index in INDEXES:
    KEY_LIMITS.setdefault(_index.pk, MAX_PARTITION_KEY_BYTES)
    KEY_LIMITS[_index.sk] = MAX_SORT_KEY_BYTES


def utf8_length(value: str) -> int | None:
    """Bytes of ``value`` in UTF-8; None when it is not Unicode text (a lone surrogate)."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return None


def key_value_fits(value: str, limit: int) -> bool:
    length = utf8_length(value)
    return length is not None and 0 < length <= limit


def key_can_exist(key: Mapping[str, Any]) -> bool:
    """Whether an item could have this key: a read of a key that cannot exist finds nothing."""
    return all(not isinstance(value, str) or key_value_fits(value, KEY_LIMITS.get(name, MAX_SORT_KEY_BYTES)) for name, value in key.items())


def require_storable_key(key: Mapping[str, Any]) -> None:
    """Refuse (400) a write whose key (or index key attributes, as plain values) DynamoDB would refuse."""
    for name, value in key.items():
        limit = KEY_LIMITS.get(name)
        if limit is None or not isinstance(value, str):
            continue
        length = utf8_length(value)
        if length is None:
            raise _not_text()
        if length == 0:
            raise invalid("An identifier or name in the request is empty where a non-empty value is required.")
        if length > limit:
            raise invalid(
                f"An identifier or name in the request is too long to store: it makes a key of {length} bytes, over the "
                f"storage limit of {limit} bytes. Use a shorter name or id."
            )


def require_storable_value(wire: Mapping[str, Any], depth: int = 0) -> None:
    """Refuse (400) an attribute value in wire format ({"S": ...}, {"M": ...}) DynamoDB would refuse."""
    stack = [(wire, depth)]
    while stack:
        value, level = stack.pop()
        ((kind, inner),) = value.items()
        if kind == "S":
            if utf8_length(inner) is None:
                raise _not_text()
        elif kind == "N":
            if abs(int(inner)) > MAX_NUMBER if _is_integer(inner) else False:
                raise invalid(f"Invalid value {inner}: a number in the request has more digits than can be stored (38).")
        elif kind in ("M", "L"):
            if level >= MAX_NESTING:
                raise invalid(f"A value in the request is nested more than {MAX_NESTING} levels deep, more than can be stored.")
            children = inner.values() if kind == "M" else inner
            if kind == "M" and any(utf8_length(name) is None for name in inner):
                raise _not_text()
            stack.extend((child, level + 1) for child in children)
        elif kind == "SS" and any(utf8_length(s) is None for s in inner):
            raise _not_text()


def require_storable_item(wire_item: Mapping[str, Any]) -> None:
    """Keys, index keys and every attribute of an item in wire format."""
    require_storable_key({name: value["S"] for name, value in wire_item.items() if name in KEY_LIMITS and "S" in value})
    for name, value in wire_item.items():
        if utf8_length(name) is None:
            raise _not_text()
        require_storable_value(value)


def _is_integer(text: str) -> bool:
    return text.lstrip("-").isdigit()


def _not_text() -> Exception:
    return invalid("Invalid value: a string in the request holds a lone surrogate (e.g. \\ud800), which is not Unicode text.")
