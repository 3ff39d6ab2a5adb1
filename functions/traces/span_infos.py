"""Trace infos made from span batches, as SqlAlchemyStore.log_spans makes them: from any batch, root or not.

MLflow creates a trace's info from the first batch of its spans (request time: the earliest span start;
duration: to the latest span end; state: the root span's, else IN_PROGRESS), and every later batch widens it:
the earlier start, the later end (both only while start_trace has not finalized the info), the root's state
while the info is IN_PROGRESS or unspecified.

Here the locator keeps the span range of every batch stored (``span_start``/``span_end``, ms, lowered and raised
by conditional updates) and the root's state (``root_state``). The batch that places the info's time on the
locator (its claim) writes the info; the root's batch, and any batch after it that widens the range, brings the
info in line with the locator (``sync``): in place when the request time stays, else by moving it (the item and
the locator in one transaction, as start_trace moves it). A sync that finds no info at the locator's place
leaves the work to the writer placing it, which syncs after its write and so sees every range recorded before.
A writer throttled after placing the time (the client retries the batch, or gives up) leaves it to the retried
batch, or to the trace's first batch after a start_trace, which find no info there and make it (``ingest``).

One difference, for cost: between the first batch and the root's, the info keeps the first batch's range (the
locator records the others). MLflow's client exports each span as it ends, children first, so widening the info
per batch would rewrite it (and its index entries, and re-aggregate it) once per span, about doubling a trace's
write units; the root's batch (its range holds its children's) makes the info what MLflow's is, before
start_trace finalizes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Status

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import NOT_INDEXED_FLAG, PK, SK, TTL_ATTRIBUTE
from serverless_mlflow.store import trace_names, trace_partitions, trace_writes
from serverless_mlflow.store import traces as store

from . import retention, run_links

MAX_ATTEMPTS = 8
OPEN_STATES = ("IN_PROGRESS", "STATE_UNSPECIFIED")
# An earlier release's "not yet indexed" flag (its trace-name postings): an in-place rewrite keeps it as it was,
# so the info stays found by name until the ``trace_names`` migration step lists its name.
_FLAG_SK = NOT_INDEXED_FLAG


@dataclass(frozen=True)
class Batch:
    """What one request's spans of one trace say about the trace (times in ms)."""

    start: int
    end: int | None
    root_state: str | None

    @classmethod
    def of(cls, spans: list[Any]) -> Batch:
        ends = [span.end_time_unix_nano for span in spans if span.end_time_unix_nano]
        root = next((span for span in spans if not span.parent_span_id), None)
        state = None if root is None else "ERROR" if root.status.code == Status.STATUS_CODE_ERROR else "OK"
        return cls(min(span.start_time_unix_nano for span in spans) // 1_000_000, max(ends) // 1_000_000 if ends else None, state)


def record(trace_id: str, batch: Batch, before: dict[str, Any], applied: frozenset[str] = frozenset()) -> bool:
    """Widen the locator's span range by the batch (``before``: the locator as it was before the batch's counting
    update, which set the range when it had none, and the bounds in ``applied`` when they widened it). True when
    the batch changed what the info should say."""
    key = store.LOCATOR.key(trace_id=trace_id)
    changed = batch.root_state is not None
    old_start, old_end = before.get("span_start"), before.get("span_end")
    if old_start is None:
        changed = True
    elif batch.start < int(old_start):
        changed |= "span_start" in applied or _lower(key, "span_start", batch.start, ">")
    if batch.end is not None:
        if old_end is None:
            changed = True
        elif batch.end > int(old_end):
            changed |= "span_end" in applied or _lower(key, "span_end", batch.end, "<")
    return changed


def _lower(key: dict[str, str], attribute: str, value: int, beaten: str) -> bool:
    """Set ``attribute`` to ``value`` if the stored one is beaten by it (one conditional update)."""
    try:
        table.update(key, f"SET {attribute} = :v", values={":v": value}, condition=f"{attribute} {beaten} :v")
        return True
    except table.ConditionFailed:
        return False  # another batch stored a wider range meanwhile: its sync covers ours


@dataclass(frozen=True)
class RangeUpdate:
    """The counting update's range clauses: SET clauses, their values, the condition they need (None: none) and
    the bounds they set when it holds."""

    clauses: str
    values: dict[str, Any]
    condition: str | None
    applied: frozenset[str]


def range_expression(batch: Batch, widening: bool = True) -> RangeUpdate:
    """SET clauses for the counting update: the range where the locator has none yet, the root's state.

    ``widening``: also widen the range in the same write, under a condition that holds when the batch widens it
    (``record`` then has nothing left to write). Clients export each span as it ends, so a batch usually ends
    after every span stored before it, and the root's batch also starts first: one write per batch, not two.
    When the condition fails (a batch out of that order), the caller writes again without it (``widening=False``)
    and ``record`` widens what it still can, one conditional update per bound.
    """
    clauses, values = [], {":ss": batch.start}
    conditions, applied = [], set()
    # Not beaten by an equal bound either (spans of one millisecond): setting it again changes nothing.
    bounds = [("span_end", ":se", batch.end, "<=")] if batch.end is not None else []
    if batch.root_state is not None:
        bounds.append(("span_start", ":ss", batch.start, ">="))
    for attribute, name, value, beaten in bounds:
        values[name] = value
        if widening:
            clauses.append(f"{attribute} = {name}")
            conditions.append(f"(attribute_not_exists({attribute}) OR {attribute} {beaten} {name})")
            applied.add(attribute)
    for attribute, name in (("span_start", ":ss"), ("span_end", ":se")):
        if attribute not in applied and name in values:
            clauses.append(f"{attribute} = if_not_exists({attribute}, {name})")
    if batch.root_state is not None:
        clauses.append("root_state = :rs")
        values[":rs"] = batch.root_state
    return RangeUpdate(", ".join(clauses), values, " AND ".join(conditions) or None, frozenset(applied))


def create(experiment: dict[str, Any], trace_id: str, request_time: int, batch: Batch, linked_runs: set[str]) -> None:
    """The trace's info from its first span batch, at ``request_time`` (the claim the locator took)."""
    experiment_id = str(experiment["experiment_id"])
    attributes: dict[str, Any] = {
        "trace_id": trace_id,
        "experiment_id": experiment_id,
        "request_time": request_time,
        "execution_duration": None if batch.end is None else max(0, batch.end - request_time),
        "state": batch.root_state or "IN_PROGRESS",
        "trace_metadata": {},
        "tags": {store.SPANS_LOCATION_TAG: store.TRACKING_STORE},  # the artifact location is composed (store.tags_of)
        TTL_ATTRIBUTE: retention.expires_at(experiment_id, request_time),
    }
    if linked_runs:  # link-to-run before the trace arrived (run_links)
        attributes["linked_runs"] = linked_runs
    item = trace_writes.info_item(attributes)
    trace_partitions.ensure_partition(experiment_id, request_time, trace_id, attributes[TTL_ATTRIBUTE])
    try:
        table.put(item, condition="attribute_not_exists(pk)")
    except table.ConditionFailed:
        return  # start_trace (or an earlier copy of this batch) wrote the info already
    # start_trace may have placed the info at another request time meanwhile (after our claim, before this put,
    # finding nothing here to move): then this item is stale. Remove it unless something changed it since.
    latest = store.locate(trace_id)
    if (latest or {}).get("info_time") != request_time:
        _drop_stale(item)
        return
    # A link that reached the locator after our update and found no info yet: ours adds it (run_links).
    run_links.apply_missing(trace_id, item, latest)


def _drop_stale(item: dict[str, Any]) -> None:
    condition, values = ("rev = :rev", {":rev": item["rev"]}) if item.get("rev") is not None else ("attribute_not_exists(rev)", None)
    try:
        table.delete({PK: item[PK], SK: item[SK]}, condition=condition, values=values)
    except table.ConditionFailed:
        pass  # changed since: no longer ours to remove


def sync(trace_id: str) -> None:
    """Bring the trace's info in line with its locator's span range and root state, as log_spans' updates do."""
    for _ in range(MAX_ATTEMPTS):
        locator = store.locate(trace_id)
        if not locator or locator.get("info_time") is None:
            return  # no info placed (or a layout 1 info): nothing to widen
        info = store.read_info(locator, trace_id)
        if info is None:
            return  # its writer is placing it and syncs after its write
        target = _target(info, locator)
        if target is None:
            return
        request_time, duration, state = target
        try:
            if request_time == int(info["request_time"]):
                _rewrite(info, duration, state)
            else:
                _move(info, locator, request_time, duration, state)
        except table.ConditionFailed:
            pass  # changed meanwhile: read again


def _target(info: dict[str, Any], locator: dict[str, Any]) -> tuple[int, int | None, str] | None:
    """(request time, duration, state) the info should have, or None when it has them."""
    request_time, duration, state = int(info["request_time"]), info.get("execution_duration"), info.get("state")
    new_time, new_duration = request_time, None if duration is None else int(duration)
    if (info.get("trace_metadata") or {}).get(store.INFO_FINALIZED_METADATA) != "true":
        start, end = locator.get("span_start"), locator.get("span_end")
        if start is not None:
            new_time = min(request_time, int(start))
        if end is not None:
            ends = [int(end)] + ([request_time + int(duration)] if duration is not None else [])
            new_duration = max(ends) - new_time
    new_state = locator["root_state"] if state in OPEN_STATES and locator.get("root_state") else state
    if (new_time, new_duration, new_state) == (request_time, None if duration is None else int(duration), state):
        return None
    return new_time, new_duration, str(new_state)


def _attributes(info: dict[str, Any], request_time: int, duration: int | None, state: str) -> dict[str, Any]:
    attributes = {k: v for k, v in info.items() if k not in trace_writes.KEY_ATTRIBUTES}
    attributes.update(request_time=request_time, execution_duration=duration, state=state, rev=int(info.get("rev") or 0) + 1)
    return attributes


def _rewrite(info: dict[str, Any], duration: int | None, state: str) -> None:
    """The info with a new duration or state at its own key (the index keys follow), if it is still as read."""
    item = trace_writes.info_item(_attributes(info, int(info["request_time"]), duration, state), shard=trace_partitions.of_item(info).shard)
    if info.get(_FLAG_SK) is not None:
        item[_FLAG_SK] = info[_FLAG_SK]
    condition, values = ("rev = :rev", {":rev": info["rev"]}) if info.get("rev") is not None else ("attribute_not_exists(rev)", None)
    table.put(item, condition="attribute_exists(pk) AND " + condition, values=values)


def _move(info: dict[str, Any], locator: dict[str, Any], request_time: int, duration: int | None, state: str) -> None:
    """The info at an earlier request time, in one transaction with its locator: the new item, the old one's
    delete (if still as read) and the locator (if it still names the old place) land together or not at all, so
    a throttled or failed move leaves no second copy behind."""
    experiment_id = str(info["experiment_id"])
    attributes = _attributes(info, request_time, duration, state)
    attributes[TTL_ATTRIBUTE] = retention.expires_at(experiment_id, request_time)
    trace_partitions.ensure_partition(experiment_id, request_time, info["trace_id"], attributes[TTL_ATTRIBUTE])
    item = trace_writes.info_item(attributes)
    trace_names.ensure_for(item)  # its name in the new partition, before the item is there
    condition, values = ("rev = :rev", {":rev": info["rev"]}) if info.get("rev") is not None else ("attribute_not_exists(rev)", None)
    table.transact(
        [
            table.put_op(item, condition="attribute_not_exists(pk)"),
            table.delete_op({PK: info[PK], SK: info[SK]}, condition=condition, values=values),
            table.update_op(
                store.LOCATOR.key(trace_id=info["trace_id"]),
                "SET info_time = :n",
                values={":n": request_time, ":o": locator["info_time"]},
                condition="info_time = :o",
            ),
        ]
    )
