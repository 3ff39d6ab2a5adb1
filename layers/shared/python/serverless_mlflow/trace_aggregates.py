"""The stream indexer's per-trace aggregates: metric rollups and the span-content signature.

Both are functions of a whole trace (its info and every span), so they are rebuilt per trace, once per stream
batch for every trace the batch touched (an info, a span, an assessment or tag change, a deletion, an
expiry). For each trace: its partition (locator, spans and its contribution record) in one Query, its info
in one GetItem; the target contribution and signature; then, for the traces of a chunk together, one
TransactWriteItems that applies the rollup deltas and replaces the records, conditioned on the revisions read
(a concurrent indexer or a replay makes it retry with fresh reads; a replay finds nothing to change).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from serverless_mlflow import parallel, s3, span_content, table, trace_text
from serverless_mlflow.schema import ENTITY, ENTITY_TYPE, PK, SK, TRACE_BUCKET_MS, trace_partition
from serverless_mlflow.store import traces as store
from serverless_mlflow.trace_metrics import rollups, rows

RECORD = ENTITY["trace_contribution"]
SIGNATURE = ENTITY["trace_text_signature"]
AGGREGATED_TYPES = frozenset({"trace", "trace_spans"})
MAX_OPERATIONS = 90
MAX_ATTEMPTS = 8
# Traces read (in parallel) before their writes are packed into transactions: bounds the spans held in memory
# (a deployed batch of 100 records names at most 100 traces; a bigger batch shares more hours' rollup items).
LOAD_WINDOW = 1000


@dataclass
class TraceState:
    trace_id: str
    experiment_id: str | None
    info: dict[str, Any] | None
    spans: list[Any]
    record: dict[str, Any] | None
    # Spans are still arriving (the locator counts fewer than the client announced): the info write that marks
    # them all stored delivers the trace again, so aggregating now would only re-parse a growing trace per batch.
    pending: bool = False


def traces_of(images: Iterable[dict[str, Any] | None]) -> dict[str, bool]:
    """Trace id -> whether its info is among the record images (infos and spans, either layout)."""
    out: dict[str, bool] = {}
    for image in images:
        if not image or image.get(ENTITY_TYPE) not in AGGREGATED_TYPES:
            continue
        if image[ENTITY_TYPE] == "trace":
            out[image["trace_id"]] = True
        else:
            out.setdefault(_span_trace_id(image), False)
    return out


def _span_trace_id(image: dict[str, Any]) -> str:
    """The trace id of a span item of either layout (its own partition, or the experiment's in layout 1)."""
    try:
        return store.SPAN.parse_pk(image[PK], fields=("trace_id",))["trace_id"]
    except ValueError:
        return store.SPAN_V1.parse(image[SK], fields=("trace_id",))["trace_id"]


def _span(item: dict[str, Any]) -> Any:
    if item.get("spill_key"):
        payload = s3.client().get_object(Bucket=s3.bucket_name(), Key=item["spill_key"])["Body"].read()
    else:
        payload = bytes(item["span"])
    return span_content.parse(payload)


def load(trace_id: str, info_changed: bool = True) -> TraceState:
    """The trace's aggregation inputs. Spans are read and parsed only when the aggregates are due (``_due``);
    ``info_changed=False`` (only spans moved) lets a growing trace in progress be skipped on one request."""
    found = {item[SK]: item for item in table.batch_get([store.LOCATOR.key(trace_id=trace_id), RECORD.key(trace_id=trace_id)])}
    locator = found.get(store.LOCATOR.key(trace_id=trace_id)[SK])
    record = found.get(RECORD.key(trace_id=trace_id)[SK])
    experiment_id = str(locator["experiment_id"]) if locator and locator.get("experiment_id") is not None else None
    experiment_id = experiment_id or (record or {}).get("experiment_id")
    if locator is not None and not info_changed and record is not None and record.get("in_progress"):
        # Last aggregated in progress, and the info has not changed since: the info write that ends the trace
        # will deliver it again, so only the doubling rule of ``_due`` can make it due now.
        if int(locator.get("span_count") or 0) < 2 * int(record.get("span_count") or 0):
            return TraceState(trace_id, experiment_id, None, [], record, pending=True)
    info = _info(locator, trace_id) if locator is not None else None
    if info is None:  # nothing to aggregate (the target is empty): no span is read
        return TraceState(trace_id, experiment_id, None, [], record)
    if not _due(locator, info, record):
        return TraceState(trace_id, experiment_id, info, [], record, pending=True)
    span_items = store.span_items(str(info["experiment_id"]), trace_id)
    return TraceState(trace_id, experiment_id, info, [_span(i) for i in span_items], record)


def _info(locator: dict[str, Any], trace_id: str) -> dict[str, Any] | None:
    """The info where the locator (already read) says it is; a miss falls back to the re-reading lookup."""
    key = store.info_key(locator, trace_id)
    item = table.get(key) if key else None
    if item is None:
        return store.info_item_or_none(trace_id)
    return None if store.is_expired(item) else item


def _due(locator: dict[str, Any], info: dict[str, Any], record: dict[str, Any] | None) -> bool:
    """Whether to re-aggregate now. Not while announced spans are still arriving (the info write that marks them
    all stored delivers the trace again); for a trace in progress, whose client logs each span as it ends, only
    once its span count has doubled since the last aggregation, so a trace of n spans is parsed O(n) times in
    all, not O(n^2). A finished trace is always aggregated: its last write makes the aggregates exact."""
    stored = int(locator.get("span_count") or 0)
    expected = locator.get("expected_spans")
    if expected is not None and stored < int(expected):
        return False
    if info.get("state") == "IN_PROGRESS" and record is not None:
        return stored >= 2 * int(record.get("span_count") or 0)
    return True


def _target(state: TraceState) -> tuple[dict[str, rollups.Part], dict[str, str] | None, bytes | None]:
    """The trace's contribution, and its signature's key and bits (None without an info)."""
    info = state.info
    if info is None:
        return {}, None, None
    span_rows = [rows.span_row(span) for span in state.spans]
    parts = rollups.contribution(rows.trace_row(info), span_rows, rows.assessment_rows(info))
    fields = trace_partition(str(info["experiment_id"]), int(info["request_time"]), state.trace_id)
    key = SIGNATURE.key(**fields, request_time=int(info["request_time"]), trace_id=state.trace_id)
    bits = trace_text.signature(span_content.content(span, state.trace_id) for span in state.spans)
    return parts, key, bits


def expected_signature(trace_id: str) -> tuple[dict[str, Any] | None, bool]:
    """(the content signature the indexer keeps for this trace, or None; whether its spans are still arriving):
    ``admin verify`` compares it with the stored one."""
    state = load(trace_id)
    if state.pending:
        return None, True
    _, key, bits = _target(state)
    if key is None:
        return None, False
    return SIGNATURE.item({"trace_id": trace_id, "bits": bits, "spans": len(state.spans)}, **_signature_fields(key, state)), False


def _digest(bits: bytes | None, spans: int) -> str | None:
    return None if bits is None else hashlib.sha256(bits + spans.to_bytes(4, "big")).hexdigest()[:16]


@dataclass
class Change:
    state: TraceState
    old_parts: dict[str, rollups.Part]
    new_parts: dict[str, rollups.Part]
    operations: list[dict[str, Any]]  # record and signature writes
    experiment_id: str | None


def _change(state: TraceState) -> Change | None:
    if state.pending:
        return None
    record = state.record or {}
    old_parts = {sk: rollups.Part.from_json(p) for sk, p in json.loads(record.get("parts") or "{}").items()}
    new_parts, signature_key, bits = _target(state)
    old_key = json.loads(record["signature_key"]) if record.get("signature_key") else None
    digest = _digest(bits, len(state.spans))
    unchanged_parts = {sk: p.to_json() for sk, p in old_parts.items()} == {sk: p.to_json() for sk, p in new_parts.items()}
    in_progress = (state.info or {}).get("state") == "IN_PROGRESS"
    if (
        unchanged_parts
        and old_key == signature_key
        and record.get("signature_digest") == digest
        and bool(record.get("in_progress")) == in_progress
    ):
        return None
    operations: list[dict[str, Any]] = []
    condition, values = ("rev = :rev", {":rev": record["rev"]}) if state.record else ("attribute_not_exists(pk)", None)
    experiment_id = state.experiment_id
    record_key = RECORD.key(trace_id=state.trace_id)
    if new_parts or signature_key:
        attributes = {
            "experiment_id": experiment_id,
            "parts": json.dumps({sk: p.to_json() for sk, p in new_parts.items()}),
            "signature_key": json.dumps(signature_key) if signature_key else None,
            "signature_digest": digest,
            "span_count": len(state.spans),
            "in_progress": in_progress,
            "rev": int(record.get("rev") or 0) + 1,
        }
        operations.append(table.put_op(RECORD.item(attributes, trace_id=state.trace_id), condition=condition, values=values))
    elif state.record:
        operations.append(table.delete_op(record_key, condition=condition, values=values))
    if old_key and old_key != signature_key:
        operations.append(table.delete_op(old_key))
    if signature_key and (old_key != signature_key or record.get("signature_digest") != digest):
        operations.append(
            table.put_op(
                SIGNATURE.item(
                    {"trace_id": state.trace_id, "bits": bits, "spans": len(state.spans)}, **_signature_fields(signature_key, state)
                )
            )
        )
    return Change(state, old_parts, new_parts, operations, experiment_id)


def _signature_fields(key: dict[str, str], state: TraceState) -> dict[str, Any]:
    info = state.info or {}
    fields = trace_partition(str(info["experiment_id"]), int(info["request_time"]), state.trace_id)
    return {**fields, "request_time": int(info["request_time"]), "trace_id": state.trace_id}


def _rollup_operations(changes: list[Change]) -> list[dict[str, Any]]:
    """The rollup items the changes move, read once and written once with their revision as condition."""
    deltas: dict[tuple[str, str], list[tuple[rollups.Part, int]]] = {}
    for change in changes:
        if change.experiment_id is None:
            continue
        for sk in set(change.old_parts) | set(change.new_parts):
            old, new = change.old_parts.get(sk), change.new_parts.get(sk)
            if old is not None and new is not None and old.to_json() == new.to_json():
                continue
            entry = deltas.setdefault((change.experiment_id, sk), [])
            if old is not None:
                entry.append((old, -1))
            if new is not None:
                entry.append((new, +1))
    if not deltas:
        return []
    keys = [{PK: rollups.ROLLUP.pk.render({"experiment_id": e}), SK: sk} for e, sk in deltas]
    current = {(item[PK], item[SK]): item for item in table.batch_get(keys)}
    operations = []
    for (experiment_id, sk), moves in deltas.items():
        pk = rollups.ROLLUP.pk.render({"experiment_id": experiment_id})
        item = current.get((pk, sk))
        rollup = rollups.Rollup.of_item(item) if item else rollups.Rollup.of_part(moves[0][0])
        for part, sign in sorted(moves, key=lambda m: -m[1]):  # additions first: a value moved stays countable
            rollup.apply(part, sign)
        slice_id = rollups.ROLLUP.parse(sk, fields=("slice",))["slice"]
        condition, values = ("rev = :rev", {":rev": item["rev"]}) if item else ("attribute_not_exists(pk)", None)
        if rollup.count <= 0 and not rollup.metrics:
            if item:
                operations.append(table.delete_op({PK: pk, SK: sk}, condition=condition, values=values))
        else:
            rev = int((item or {}).get("rev") or 0) + 1
            operations.append(table.put_op(rollup.item(experiment_id, slice_id, rev), condition=condition, values=values))
    return operations


def _max_durations(changes: list[Change]) -> None:
    """The experiments' longest trace durations (monotone: a replay or a race only ever raises it)."""
    longest: dict[str, int] = {}
    for change in changes:
        info = change.state.info
        if info and info.get("execution_duration") is not None and change.experiment_id:
            longest[change.experiment_id] = max(longest.get(change.experiment_id, 0), int(info["execution_duration"]))
    for experiment_id, duration in longest.items():
        try:
            table.update(
                rollups.META.key(experiment_id=experiment_id),
                "SET max_duration_ms = :d, entity_type = :t",
                values={":d": duration, ":t": rollups.META.name},
                condition="attribute_not_exists(max_duration_ms) OR max_duration_ms < :d",
            )
        except table.ConditionFailed:
            pass


def refresh(traces: Iterable[str] | Mapping[str, bool]) -> int:
    """Rebuild the aggregates of these traces (trace id -> whether its info changed: ``traces_of``; a plain
    iterable counts every info as changed); returns how many traces changed anything.

    Traces are read LOAD_WINDOW at a time, in parallel (each read is three requests that wait on DynamoDB), then
    written in transactions packed up to MAX_OPERATIONS, traces of the same hour together so that they share
    their hour's rollup items (one write for all of them). A transaction that meets a concurrent change is
    retried with fresh reads of its traces (``_refresh_chunk``)."""
    info_changed = dict(traces) if isinstance(traces, Mapping) else dict.fromkeys(traces, True)
    pending = sorted(info_changed)
    changed = 0
    while pending:
        window, pending = pending[:LOAD_WINDOW], pending[LOAD_WINDOW:]
        states = parallel.parallel_map(lambda trace_id: load(trace_id, info_changed.get(trace_id, True)), window)
        changes = [c for c in map(_change, states) if c is not None]
        changes.sort(key=_hour_order)
        for pack in _packs(changes):
            changed += _write_pack(pack, info_changed)
    return changed


def _hour_order(change: Change) -> tuple[str, int, str]:
    info = change.state.info or {}
    return (change.experiment_id or "", int(info.get("request_time") or 0) // TRACE_BUCKET_MS, change.state.trace_id)


def _packs(changes: list[Change]) -> Iterator[list[Change]]:
    """Consecutive changes grouped while their writes (records, signatures, distinct rollup items) fit one
    transaction: an upper bound, as a part that did not move is not written."""
    pack: list[Change] = []
    keys: set[tuple[str | None, str]] = set()
    operations = 0
    for change in changes:
        own = {(change.experiment_id, sk) for sk in set(change.old_parts) | set(change.new_parts)}
        if pack and operations + len(change.operations) + len(keys | own) > MAX_OPERATIONS:
            yield pack
            pack, keys, operations = [], set(), 0
        pack.append(change)
        keys |= own
        operations += len(change.operations)
    if pack:
        yield pack


def _write_pack(changes: list[Change], info_changed: Mapping[str, bool]) -> int:
    """One transaction for the changes as read; on a conflict, their traces again with fresh reads."""
    operations = [op for c in changes for op in c.operations] + _rollup_operations(changes)
    if len(operations) > MAX_OPERATIONS and len(changes) > 1:  # _packs bounds it: only if a bound was wrong
        half = len(changes) // 2
        return _write_pack(changes[:half], info_changed) + _write_pack(changes[half:], info_changed)
    try:
        table.transact(operations)
    except table.ConditionFailed:
        # Another indexer moved a record or rollup meanwhile: read again.
        return _refresh_chunk([c.state.trace_id for c in changes], info_changed)
    _max_durations(changes)
    return len(changes)


def _refresh_chunk(trace_ids: list[str], info_changed: Mapping[str, bool]) -> int:
    for _ in range(MAX_ATTEMPTS):
        changes = [c for c in (_change(load(t, info_changed.get(t, True))) for t in trace_ids) if c is not None]
        if not changes:
            return 0
        operations = [op for c in changes for op in c.operations] + _rollup_operations(changes)
        if len(operations) > MAX_OPERATIONS and len(trace_ids) > 1:
            half = len(trace_ids) // 2
            return _refresh_chunk(trace_ids[:half], info_changed) + _refresh_chunk(trace_ids[half:], info_changed)
        try:
            table.transact(operations)
        except table.ConditionFailed:
            continue  # another indexer moved a record or rollup meanwhile: read again
        _max_durations(changes)
        return len(changes)
    raise RuntimeError(f"trace aggregates of {trace_ids} kept changing while they were written")
