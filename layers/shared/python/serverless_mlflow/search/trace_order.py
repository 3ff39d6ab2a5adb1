"""MLflow's order of searched traces: the given terms (NULLs last in both directions), then timestamp desc and
request id asc; the sort key of an item and of a page token's position compare alike.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.search.trace_matching import value_of

Term = tuple[str, str, bool]  # (kind, key, ascending)
TIMESTAMP: Term = ("attribute", "timestamp_ms", False)
REQUEST_ID: Term = ("attribute", "request_id", True)


def full_order(order: list[Term]) -> list[Term]:
    """MLflow's complete order: the given terms, then timestamp desc and request id asc unless given."""
    terms = list(order)
    keys = {(kind, key) for kind, key, _ in terms}
    for default in (TIMESTAMP, REQUEST_ID):
        if default[:2] not in keys:
            terms.append(default)
    return terms


def term_values(item: dict[str, Any], terms: list[Term]) -> list[Any]:
    """The item's value of each order term (a page token keeps them as its position)."""
    return [value_of(item, kind, key) for kind, key, _ in terms]


def position_key(values: list[Any], terms: list[Term]) -> tuple[Any, ...]:
    """The sort key of a position (term values), comparable with ``sort_key``'s."""
    return tuple(_Ordered(value, ascending) for value, (_, _, ascending) in zip(values, terms, strict=True))


def sort_key(order: list[Term]) -> Any:
    """MLflow's order: the given terms (NULLs last), then timestamp desc and request id asc."""
    terms = full_order(order)

    def key(item: dict[str, Any]) -> tuple[Any, ...]:
        return position_key(term_values(item, terms), terms)

    return key


class _Ordered:
    """One sort term: NULLs last in both directions (the SQL store's explicit null ordering)."""

    __slots__ = ("ascending", "value")

    def __init__(self, value: Any, ascending: bool) -> None:
        self.value, self.ascending = value, ascending

    def __lt__(self, other: _Ordered) -> bool:
        if self.value is None or other.value is None:
            return other.value is None and self.value is not None
        if self.value == other.value:
            return False
        return (self.value < other.value) if self.ascending else (self.value > other.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Ordered) and self.value == other.value
