"""The order a run's params, tags and metrics were first logged in, which MLflow's SqlAlchemyStore answers them in
(the rows' insertion order; a later write of a key keeps its place).

Items are keyed by their key, so a Query reads them alphabetically: each carries ``logged`` (milliseconds of its
first write x 10,000 + its position in that request), kept on later writes (``if_not_exists``), and readers sort by
it. Items written before it existed lack it: they come first, in key order (what was answered before), stable.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from serverless_mlflow.core import clock

ATTRIBUTE = "logged"
KEEP = (ATTRIBUTE,)  # ``table.upsert_op``'s keep_first: the first write's position survives
_PER_MILLISECOND = 10_000

T = TypeVar("T")


def stamps(count: int) -> list[int]:
    """Positions for ``count`` items written by one request, in request order."""
    base = clock.now_millis() * _PER_MILLISECOND
    return [base + min(number, _PER_MILLISECOND - 1) for number in range(count)]


def position(item: dict[str, Any]) -> int:
    return int(item.get(ATTRIBUTE, -1))


def ordered(items: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(items, key=position)


def ordered_by_key(by_key: dict[str, T], items_by_key: dict[str, dict[str, Any]]) -> dict[str, T]:
    """``by_key`` re-ordered by the logging position of each key's item."""
    return {key: by_key[key] for key in sorted(by_key, key=lambda key: position(items_by_key.get(key, {})))}
