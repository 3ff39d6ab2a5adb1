"""Trace infos made from span batches, as SqlAlchemyStore.log_spans makes them: from any batch, root or not.

MLflow creates a trace's info from the first batch of its spans (request time: the earliest span start;
duration: to the latest span end; state: the root span's, else IN_PROGRESS), and every later batch widens it:
the earlier start, the later end (both only while start_trace has not finalized the info), the root's state
while the info is IN_PROGRESS or unspecified.

Here the batch that places the info's time on the locator (its claim) writes the info; the root's batch records
the root's state on the locator (``root_state``) and brings the info in line (``sync``) with the span range of the
spans stored (read from the trace's span partition, each span item carrying its start and end): in place when
the request time stays, else by moving it (the item and the locator in one transaction, as start_trace moves
it). Any batch after the root's syncs too (it sees ``root_state``; the root's batch recorded it before reading
the spans, so a batch the root's read missed finds it). Other batches write their span items only. A sync that
finds no info at the locator's place leaves the work to the writer placing it, which syncs after its write.
A writer throttled after placing the time (the client retries the batch, or gives up) leaves it to the retried
batch, or to the trace's first batch after a start_trace, which find no info there and make it (``ingest``).

One difference, for cost: between the first batch and the root's, the info keeps the first batch's range (the
spans stored hold the others). MLflow's client exports each span as it ends, children first, so widening the
info per batch would rewrite it (and its index entries, and re-aggregate it) once per span, about doubling a
trace's write units; the root's batch (its range holds its children's) makes the info what MLflow's is, before
start_trace finalizes it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.trace.v1.trace_pb2 import Status

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import NOT_INDEXED_FLAG, PK, SK, TTL_ATTRIBUTE
from serverless_mlflow.store import span_content, trace_names, trace_partitions, trace_writes
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
    """Bring the trace's info in line with its stored spans' range and its locator's root state, as log_spans'
    updates do."""
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


def span_range(experiment_id: str, trace_id: str) -> tuple[int | None, int | None]:
    """(earliest start, latest end) in ms of the trace's stored spans (one Query of its span partition; a span item
    written before items carried their end is parsed)."""
    starts, ends = [], []
    for item in store.span_items(experiment_id, trace_id):
        start, end = item.get("start_time_unix_nano"), item.get("end_time_unix_nano")
        if start is None or (end is None and item.get("span") is not None):
            parsed = span_content.parse(bytes(item["span"]))
            start, end = parsed.start_time_unix_nano, parsed.end_time_unix_nano
        starts.append(int(start))
        if end:
            ends.append(int(end))
    return (min(starts) // 1_000_000 if starts else None, max(ends) // 1_000_000 if ends else None)


def _target(info: dict[str, Any], locator: dict[str, Any]) -> tuple[int, int | None, str] | None:
    """(request time, duration, state) the info should have, or None when it has them."""
    request_time, duration, state = int(info["request_time"]), info.get("execution_duration"), info.get("state")
    new_time, new_duration = request_time, None if duration is None else int(duration)
    if (info.get("trace_metadata") or {}).get(store.INFO_FINALIZED_METADATA) != "true":
        start, end = span_range(str(info["experiment_id"]), info["trace_id"])
        if start is not None:
            new_time = min(request_time, start)
        if end is not None:
            ends = [end] + ([request_time + int(duration)] if duration is not None else [])
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
