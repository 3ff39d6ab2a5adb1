"""Param and tag RANK items read in value order (MLflow's string order), per experiment, in groups of equal value.

Values longer than ``PARAM_HEAD_BYTES`` may be truncated in the item's key and then order by digest: the
readers here regroup such a key head and sort it on the full value. Items not indexed yet come from their
sources (``ranks.flagged_sources``). The shared walk (pages, groups, run order) is in ``ranks``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import Any

from serverless_mlflow.index.rank_items import PARAM_HEAD_BYTES, STRING_RANKS, param_value_key
from serverless_mlflow.index.ranks import Ranked, Unindexed, _group, _pages, flagged_sources, load_runs_consistent, order_runs
from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.schema import ENTITY, SK


class _Reversed:
    """Inverts string order for descending merges."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __lt__(self, other: _Reversed) -> bool:
        return other.value < self.value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Reversed) and other.value == self.value


def _string_stream(
    experiment_id: str,
    key: str,
    ascending: bool,
    start_value: str | None = None,
    key_type: str = "parameter",
    first_page: int | None = None,
    unindexed: Unindexed | None = None,
) -> Iterator[tuple[Any, Ranked]]:
    rank_entity, source_type = STRING_RANKS[key_type]
    flagged = flagged_sources(experiment_id, source_type, key, unindexed)
    order = (lambda v: v) if ascending else _Reversed
    overrides = sorted(
        ((order(str(item["value"])), Ranked(run_id, experiment_id, str(item["value"]))) for run_id, item in flagged.items()),
        key=lambda pair: (pair[0], pair[1].run_id),
    )
    prefix = rank_entity.sk_prefix(experiment_id=experiment_id, key=key)
    pk = ENTITY["run"].pk.render({"experiment_id": experiment_id})
    query: dict[str, Any] = {"sk_prefix": prefix, "forward": ascending}
    if start_value is not None:
        # Resume at start_value, its tie group (or its long-value head group) included.
        overrides = [pair for pair in overrides if not pair[0] < order(start_value)]
        value_key = param_value_key(start_value)
        at = prefix + (_long_head(value_key) or value_key)
        query["sk_between"] = (at, prefix + "\U0010ffff") if ascending else (prefix, at + "\U0010ffff")
        del query["sk_prefix"]

    def indexed() -> Iterator[tuple[Any, Ranked]]:
        # Values past PARAM_HEAD_BYTES may be truncated in the key and then order by digest: read the
        # whole group sharing such a head and sort it on the full value attribute.
        done_heads: set[str] = set()
        for item in _pages(pk, first_page, **query):
            value_key = item[SK][len(prefix) : -len(item["run_id"])]
            head = _long_head(value_key)
            if head is None:
                if item["run_id"] not in flagged:
                    yield order(item["value"]), Ranked(item["run_id"], experiment_id, item["value"])
                continue
            if head in done_heads:
                continue
            done_heads.add(head)
            group = [g for g in table.iter_query(pk, prefix + head) if g["run_id"] not in flagged]
            group.sort(key=lambda g: (g["value"], g["run_id"]), reverse=not ascending)
            for g in group:
                yield order(g["value"]), Ranked(g["run_id"], experiment_id, g["value"])

    return heapq.merge(indexed(), iter(overrides), key=lambda pair: pair[0])


def _long_head(value_key: str) -> str | None:
    """The shared key head of values that may be truncated, or None for a value ordered exactly."""
    # A truncated head may be up to 3 bytes shorter than PARAM_HEAD_BYTES (cut at a character
    # boundary), so group on a prefix every such value shares in full.
    group_bytes = PARAM_HEAD_BYTES - 3
    if len(value_key.encode("utf-8")) < group_bytes:
        return None
    return keys._cut_utf8(value_key, group_bytes).split("\x02", 1)[0]


def iter_param_groups(
    experiment_ids: Iterable[str],
    key: str,
    ascending: bool,
    start_value: str | None = None,
    first_page: int | None = None,
    unindexed: Unindexed | None = None,
) -> Iterator[list[Ranked]]:
    """Runs having param ``key``, in groups of equal value, in MLflow's order (string order).

    ``start_value`` resumes a later page (see ``iter_metric_groups``); values before it that share
    its long-value key head may be yielded too: the caller's page-token check drops them.
    """
    streams = [
        _string_stream(experiment_id, key, ascending, start_value, "parameter", first_page, unindexed) for experiment_id in experiment_ids
    ]
    return _group(heapq.merge(*streams, key=lambda pair: pair[0]))


def iter_run_ids_by_param(experiment_ids: Iterable[str], key: str, ascending: bool) -> Iterator[str]:
    for run in order_runs(iter_param_groups(experiment_ids, key, ascending), load_runs_consistent):
        yield run["run_id"]
