"""Lazy reads of trace partitions in MLflow's exact order, and their merge.

A stream reads one key range of one partition (the table's time order, or the execution-time, state or name
index) in pages that start from what the search page needs and double, and yields its items in MLflow's
order: the key order agrees with MLflow's on the leading terms, and a run of items equal on those (``group``)
is re-sorted by the full order (walking backwards, equal request times come with their ids descending; MLflow
wants them ascending). Streams are merged with ``heapq.merge``, which holds one item of each: a page reads
about its own items plus a few per partition it touches.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

from serverless_mlflow.storage import table

Item = dict[str, Any]
PAGE_MAX = 1000


def first_page(need: int, streams: int, indexed_only: bool) -> int:
    """Items the first read of each of ``streams`` parallel streams asks for, for a page of ``need`` items.

    Shards share an hour's traces evenly (a hash of the id), so each holds about need/streams of the page,
    plus one item to see past a tie. A filter the key range does not apply reads more per page (it drops items).
    """
    share = math.ceil((need + 1) / max(1, streams)) + 1
    return min(PAGE_MAX, share if indexed_only else 4 * share)


def read_range(query: Mapping[str, Any], forward: bool, first: int) -> Iterator[Item]:
    """Items of one key range in key order (or reversed), read lazily: ``first`` items, then twice as many each time."""
    size, start = max(1, first), None
    while True:
        last = None
        for items, page_last in table.query_pages(**query, forward=forward, limit=size, start_key=start):
            last = page_last
            yield from items
        if not last:
            return
        start, size = last, min(size * 2, PAGE_MAX)


def exact(items: Iterable[Item], group: Callable[[Item], Any] | None, key: Callable[[Item], Any]) -> Iterator[Item]:
    """``items`` in ``key`` order, given that they come in ``group`` order (each run of equal groups re-sorted)."""
    if group is None:
        yield from items
        return
    buffer: list[Item] = []
    current: Any = None
    for item in items:
        value = group(item)
        if buffer and value != current:
            yield from sorted(buffer, key=key)
            buffer = []
        current = value
        buffer.append(item)
    yield from sorted(buffer, key=key)


def merge(streams: list[Iterator[Item]], key: Callable[[Item], Any]) -> Iterator[Item]:
    if len(streams) == 1:
        return streams[0]
    return heapq.merge(*streams, key=key)


def unique(items: Iterable[Item]) -> Iterator[Item]:
    """Each trace once: an info the migration moved while a page was read can come from both of its places."""
    seen: set[str] = set()
    for item in items:
        if item["trace_id"] not in seen:
            seen.add(item["trace_id"])
            yield item
