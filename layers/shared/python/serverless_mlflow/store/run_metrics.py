"""A run's metric items: history points, latest values and the digest, in both table layouts.

Layout 2 (``layout.py``) keeps a run's latest metric values in the run's own partition (``RUN#<run>`` / ``M#<key>``,
written by the request path) and each metric's history in a partition per run and key (``MH#<run>#<key>``).
The indexer copies the latest values into one *digest* item in the run's range of the experiment partition
(``R#<run>#MD``), so ``get_run`` reads a run with its metrics in one Query while the run has no
``run_metrics_marker`` (``metric_marks``); a marked run's latest values are read from ``RUN#<run>``.

Layout 1 kept the latest values in the run's range (``R#<run>#M#<key>``) and the history in the experiment
partition (``H#<run>#<key>...``). Until a table's move is done, readers merge both shapes: latest values by
MLflow's rank (max step, then timestamp, then value), history points by their identity (each key once).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from serverless_mlflow.storage import keys, table
from serverless_mlflow.storage.item_size import MAX_ITEM_BYTES, item_bytes
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, LEGACY, PK, SK
from serverless_mlflow.store import logging_order

LATEST = ENTITY["latest_metric"]
HISTORY = ENTITY["metric_history"]
DIGEST = ENTITY["run_metrics_digest"]
LATEST_V1 = LEGACY["latest_metric"]
HISTORY_V1 = LEGACY["metric_history"]

# MLflow's SQL store cannot hold infinities: it stores (and so answers) +-max double instead.
SQL_MAX_DOUBLE = 1.7976931348623157e308
# Room below DynamoDB's 400 KB for the digest's own keys and attributes.
MAX_DIGEST_BYTES = MAX_ITEM_BYTES - 4 * 1024
_RANK_CONDITION = "attribute_not_exists(pk) OR #rank < :rank"
# What a digest keeps of each latest value (the attributes get_run and searches read).
_DIGESTED = ("key", "value", "timestamp", "step", "is_nan", "rank", logging_order.ATTRIBUTE)


# --- values as the SQL store sees them -----------------------------------------------------------------


def sql_value(value: float) -> float:
    """The value MLflow's SQL store compares and keys on: NaN as 0 (with is_nan), +-inf as +-max double."""
    if math.isnan(value):
        return 0.0
    if math.isinf(value):
        return SQL_MAX_DOUBLE if value > 0 else -SQL_MAX_DOUBLE
    return value


def identity_value(value: float) -> float:
    """The value part of a history point's identity: NaN stays distinct from 0 (SQL keys on is_nan)."""
    return value if math.isnan(value) else sql_value(value)


def rank(metric: dict[str, Any]) -> str:
    """(step, timestamp, value) as one string whose byte order is MLflow's latest-metric order."""
    return keys.int64(metric["step"]) + keys.int64(metric["timestamp"]) + keys.float64(sql_value(float(metric["value"])))


def float_text(value: float) -> str:
    # repr round-trips every double exactly, including nan/inf (the table stores floats as strings).
    return repr(float(value))


# --- items ------------------------------------------------------------------------------------------------


def history_item(run_id: str, metric: dict[str, Any]) -> dict[str, Any]:
    """One point in its own item, as written before metric packs (``metric_packs``): still read, as a pack of one."""
    value = metric["value"]
    return HISTORY.item(
        {
            "key": metric["key"],
            "value": float_text(value),
            "timestamp": metric["timestamp"],
            "step": metric["step"],
            "is_nan": math.isnan(value),
        },
        run_id=run_id,
        key=metric["key"],
        timestamp=metric["timestamp"],
        step=metric["step"],
        value=identity_value(value),
    )


def latest_item(experiment_id: str, run_id: str, metric: dict[str, Any], logged: int | None = None) -> dict[str, Any]:
    """The latest value of one key; ``logged``: its position among the run's metrics (``logging_order``)."""
    value = float(metric["value"])
    return LATEST.item(
        {
            "key": metric["key"],
            "value": float_text(value),
            "timestamp": metric["timestamp"],
            "step": metric["step"],
            "is_nan": math.isnan(value),
            "rank": rank(metric),
            "experiment_id": experiment_id,
            "run_id": run_id,
            logging_order.ATTRIBUTE: logged,
        },
        run_id=run_id,
        key=metric["key"],
    )


def is_legacy_latest(item: dict[str, Any]) -> bool:
    """A layout-1 latest value (in the run's range of the experiment partition, not in the run's partition)."""
    if item.get(ENTITY_TYPE) != LATEST.type_name:
        return False
    try:
        LATEST.parse_pk(item[PK])
    except ValueError:
        return True
    return False


def item_run_id(item: dict[str, Any]) -> str:
    """The run of a latest value of either layout (layout 2 carries it; layout 1 has it in its sort key)."""
    if "run_id" in item:
        return item["run_id"]
    return LATEST_V1.parse(item[SK], fields=("run_id",))["run_id"]


def put_if_newer(items: list[dict[str, Any]]) -> bool:
    """Write each latest value (of one run, at most 100) unless the stored one is at least as recent, in one
    transaction; True if any was written. A condition ``rank < :new`` keeps MLflow's rule under concurrent writers.
    Written as updates: a key keeps the position it was first logged at (``logging_order``)."""
    pending = items
    while pending:
        if len(pending) == 1:
            try:
                parts = table.as_update(pending[0], logging_order.KEEP, {"#rank": "rank"}, {":rank": pending[0]["rank"]})
                table.update(*parts, condition=_RANK_CONDITION)
            except table.ConditionFailed:
                return False  # the stored latest value is at least as recent
            return True
        operations = [
            table.upsert_op(item, logging_order.KEEP, _RANK_CONDITION, {"#rank": "rank"}, {":rank": item["rank"]}) for item in pending
        ]
        try:
            table.transact(operations)
            return True
        except table.ConditionFailed as failure:
            if len(failure.reasons) != len(pending):
                # No per-item reasons: settle each key on its own.
                return any([put_if_newer([item]) for item in pending])
            # Keys whose condition failed already hold a newer value; retry only the others.
            pending = [item for item, reason in zip(pending, failure.reasons, strict=True) if reason != "ConditionalCheckFailed"]
    return False


# --- reading ----------------------------------------------------------------------------------------------


def read_latest(run_id: str) -> list[dict[str, Any]]:
    """The run's latest values in its own partition (one consistent Query, key order)."""
    return table.query(**LATEST.query("of_run", run_id=run_id))


def read_latest_except(run_id: str, known: Iterable[str]) -> list[dict[str, Any]]:
    """The run's latest values but those of the ``known`` keys (which the caller read already): the key ranges below,
    between and above their items, so none is read twice (one Query per range: known keys + 1)."""
    pk = LATEST.key(run_id=run_id, key="")[PK]
    high = table.prefix_successor(LATEST.sk_prefix()) or table.HIGHEST_KEY
    sks = sorted(LATEST.key(run_id=run_id, key=key)[SK] for key in set(known))
    # No key of the partition sorts below the latest values ("M#" < "MS" < "RUN" < "S"), and keys are prefix-free
    # with the lowest character unused (keys.text): no key lies between an item's key and that key + TERMINATOR,
    # nor between a key without its TERMINATOR and the key.
    items = table.query(pk, sk_before=sks[0])
    for low, above in zip(sks, [*sks[1:], None], strict=True):
        items.extend(table.query(pk, sk_between=(low + keys.TERMINATOR, high if above is None else above[: -len(keys.TERMINATOR)])))
    return items


def newest(items: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Key -> the latest value among items of both layouts (and digests' entries): MLflow's rank decides; the
    first of equal ranks is kept, in the order given."""
    out: dict[str, dict[str, Any]] = {}
    for item in items:
        current = out.get(item["key"])
        if current is None or str(item.get("rank", "")) > str(current.get("rank", "")):
            out[item["key"]] = item
    return out


# --- the digest (the indexer's copy in the run's range) --------------------------------------------------


def digest_item(experiment_id: str, run_id: str, latest: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The digest of a run's latest values (``oversize``, holding nothing, when they would not fit one item)."""
    entries = [{name: item[name] for name in _DIGESTED if name in item} for item in sorted(newest(latest).values(), key=_key_order)]
    item = DIGEST.item({"run_id": run_id, "metrics": entries}, experiment_id=experiment_id, run_id=run_id)
    if item_bytes(table.to_item(item)) > MAX_DIGEST_BYTES:
        item = DIGEST.item({"run_id": run_id, "oversize": True}, experiment_id=experiment_id, run_id=run_id)
    return item


def _key_order(item: dict[str, Any]) -> str:
    # The order a run's latest values come in from RUN#<run> (their sort keys).
    return LATEST.sk_prefix(key=item["key"])


def digested(digest: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The latest values a digest holds (None for an oversize digest: read them from RUN#<run>)."""
    if digest.get("oversize"):
        return None
    return [dict(entry) for entry in digest.get("metrics") or []]


def same_digest(old: dict[str, Any] | None, new: dict[str, Any]) -> bool:
    return old is not None and old.get("metrics") == new.get("metrics") and bool(old.get("oversize")) == bool(new.get("oversize"))
