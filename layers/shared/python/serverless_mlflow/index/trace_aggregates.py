"""The stream indexer's per-trace aggregates: metric rollups and the span-content signature.

Both are functions of a whole trace (its info and every span), so they are rebuilt per trace, once per stream
batch for every trace the batch touched (an info, a span, an assessment or tag change, a deletion, an
expiry). For each trace: its locator and contribution record in one BatchGetItem, its info in one GetItem, its
spans in one Query; the target contribution and signature (``Change``); then the writes (``trace_aggregate_writes``).
"""

from __future__ import annotations

import hashlib
import json
import zlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.index import trace_text
from serverless_mlflow.index.trace_metrics import rollups, rows
from serverless_mlflow.storage import layout, s3, table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, PK, SK
from serverless_mlflow.store import span_content, trace_archive, trace_partitions
from serverless_mlflow.store import traces as store

RECORD = ENTITY["trace_contribution"]
SIGNATURE = ENTITY["trace_text_signature"]
AGGREGATED_TYPES = frozenset({"trace", "trace_spans"})
IN_PROGRESS = "IN_PROGRESS"
# Operations of one transaction (DynamoDB allows 100): a change that moves more rollup items is applied in steps.
MAX_OPERATIONS = 90


@dataclass
class TraceState:
    trace_id: str
    experiment_id: str | None
    info: dict[str, Any] | None
    spans: list[Any]
    record: dict[str, Any] | None
    # Not aggregated now: a trace in progress that has not doubled its spans (``_due``), or spans that did not change.
    pending: bool = False
    span_ids: str | None = None  # digest of the ids of the spans read
    # Not aggregated now, nor read further: a trace in progress never aggregated, left for later (``load``'s ``defer``).
    deferred: bool = False


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


def load(trace_id: str, info_changed: bool = True, defer: bool = False) -> TraceState:
    """The trace's aggregation inputs. Spans are read and parsed only when the aggregates are due (``_due``);
    ``info_changed=False`` (only spans moved) lets a growing trace in progress be skipped on one request.

    ``defer``: a trace in progress that was never aggregated is left ``deferred`` (its spans unread): the indexer
    aggregates it after a delay instead (``trace_deferral``), by when most traces have ended and
    are aggregated once, finished, instead of in progress and again finished (every span slice keys the status)."""
    found = {item[SK]: item for item in table.batch_get([store.LOCATOR.key(trace_id=trace_id), RECORD.key(trace_id=trace_id)])}
    locator = found.get(store.LOCATOR.key(trace_id=trace_id)[SK])
    record = found.get(RECORD.key(trace_id=trace_id)[SK])
    experiment_id = str(locator["experiment_id"]) if locator and locator.get("experiment_id") is not None else None
    experiment_id = experiment_id or (record or {}).get("experiment_id")
    if locator is not None and not info_changed and record is not None and record.get("in_progress"):
        # Last aggregated in progress, and the info has not changed since: the info write that ends the trace
        # will deliver it again, so only the doubling rule of ``_due`` can make it due now.
        if _span_count(experiment_id, trace_id) < 2 * int(record.get("span_count") or 0):
            return TraceState(trace_id, experiment_id, None, [], record, pending=True)
    info = _info(locator, trace_id) if locator is not None else None
    if info is None:  # nothing to aggregate (the target is empty): no span is read
        return TraceState(trace_id, experiment_id, None, [], record)
    if defer and record is None and info.get("state") == IN_PROGRESS:
        return TraceState(trace_id, experiment_id, info, [], record, pending=True, deferred=True)
    if not _due(locator, info, record):
        return TraceState(trace_id, experiment_id, info, [], record, pending=True)
    if not info_changed and _spans_unchanged(trace_id, locator, record):
        return TraceState(trace_id, experiment_id, info, [], record, pending=True)
    if trace_archive.is_archived(info):
        # Its spans were moved to the archive (their items deleted): the metrics still count them, as MLflow's
        # span rows stay; their content is emptied (``_target``).
        spans = trace_archive.archived_spans(info)
        return TraceState(trace_id, experiment_id, info, spans, record, span_ids=_ids_digest([s.span_id.hex() for s in spans]))
    span_items = store.span_items(str(info["experiment_id"]), trace_id)
    ids = [store.span_id_of(item) for item in span_items]
    return TraceState(trace_id, experiment_id, info, [_span(i) for i in span_items], record, span_ids=_ids_digest(ids))


def _spans_unchanged(trace_id: str, locator: dict[str, Any], record: dict[str, Any] | None) -> bool:
    """Whether the trace holds exactly the spans its record was computed from, when only new spans were
    delivered (an overwritten or removed span, or any info change, always re-aggregates): one keys-only Query
    instead of reading and parsing every span. One OTLP request of 10,000 spans reaches the indexer as 10
    batches of span records (of 1,000); the first aggregates the whole trace, the others find nothing new."""
    if not record or record.get("in_progress") or not record.get("span_ids") or layout.layout1_traces_possible():
        return False
    keys = table.query(**store.SPAN.query("of_trace", trace_id=trace_id), keys_only=True)
    return _ids_digest([store.span_id_of(key) for key in keys]) == record["span_ids"]


def _ids_digest(span_ids: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(span_ids)).encode()).hexdigest()[:32]


def _info(locator: dict[str, Any], trace_id: str) -> dict[str, Any] | None:
    """The info where the locator (already read) says it is; a miss falls back to the re-reading lookup."""
    item = store.read_info(locator, trace_id)
    if item is None:
        return store.info_item_or_none(trace_id)
    return None if store.is_expired(item) else item


def _due(locator: dict[str, Any], info: dict[str, Any], record: dict[str, Any] | None) -> bool:
    """Whether to re-aggregate now. For a trace in progress, whose client logs each span as it ends, only once its
    span count has doubled since the last aggregation, so a trace of n spans is parsed O(n) times in all, not
    O(n^2). A finished trace is always aggregated: its last write makes the aggregates exact.

    Finished with fewer spans than its client announced (``expected_spans``) counts too, as SqlAlchemyStore counts
    every trace whose info exists with the spans it got: start_trace already waited for spans in flight before
    writing that info, so the missing ones were given up by the client or are being retried after 429s. There is
    no later moment to wait for (the stream delivers no timer); a late batch delivers the trace again and its
    recomputed contribution replaces the recorded one, so counts stay exact whichever batch comes last."""
    if info.get("state") == IN_PROGRESS and record is not None:
        return _span_count(str(info["experiment_id"]), str(info["trace_id"])) >= 2 * int(record.get("span_count") or 0)
    return True


def _span_count(experiment_id: str | None, trace_id: str) -> int:
    """The trace's stored spans, counted (span batches write no count on the locator: ``store.span_count``); an
    eventually consistent read is enough for a rule that only spaces out aggregations in progress."""
    return store.span_count(experiment_id or "", trace_id, consistent=False)


def _target(state: TraceState) -> tuple[dict[str, rollups.Part], dict[str, str] | None, bytes | None]:
    """The trace's contribution, and its signature's key and bits (None without an info, or while the trace is in
    progress: a search reads the spans of a trace without a signature, so it stays exact while spans arrive, and
    the signature is written once, when the trace ends, not again at every aggregation in progress and again at
    the end under the root's request time)."""
    info = state.info
    if info is None:
        return {}, None, None
    span_rows = [rows.span_row(span) for span in state.spans]
    parts = rollups.contribution(rows.trace_row(info), span_rows, rows.assessment_rows(info))
    if info.get("state") == IN_PROGRESS:
        return parts, None, None
    fields = trace_partitions.fields_of(info)  # next to the info, in the shard it was written with
    key = SIGNATURE.key(**fields, request_time=int(info["request_time"]), trace_id=state.trace_id)
    archived = trace_archive.is_archived(info)
    bits = trace_text.signature("" if archived else span_content.content(span, state.trace_id) for span in state.spans)
    return parts, key, bits


def expected_signature(trace_id: str) -> tuple[dict[str, Any] | None, bool]:
    """(the content signature the indexer keeps for this trace, or None; whether the indexer defers it: a trace in
    progress that has not doubled its spans): ``admin verify`` compares it with the stored one. A trace in
    progress has none, whether or not its aggregates are due."""
    state = load(trace_id)
    if (state.info or {}).get("state") == IN_PROGRESS:
        return None, False
    if state.pending:
        return None, True
    _, key, bits = _target(state)
    if key is None:
        return None, False
    return SIGNATURE.item(
        {"trace_id": trace_id, "bits": trace_text.stored(bits), "spans": len(state.spans)}, **_signature_fields(key, state)
    ), False


def _digest(bits: bytes | None, spans: int) -> str | None:
    return None if bits is None else hashlib.sha256(bits + spans.to_bytes(4, "big")).hexdigest()[:16]


# --- contribution records --------------------------------------------------------------------------------
# A record keeps, per rollup sort key, only what subtracting it needs: the row count and the values (the key
# names the family, buckets and slice; the dimensions are in the rollup item). zlib-compressed JSON: a 10-span
# trace's record is a few hundred bytes, so the transaction that replaces it costs 2 write units, not 10.

Share = tuple[int, dict[str, list[float]]]  # (rows, values per metric) of one rollup item


def share(part: rollups.Part) -> Share:
    return part.count, {metric: list(values) for metric, values in sorted(part.values.items())}


def recorded_shares(record: dict[str, Any] | None) -> dict[str, Share]:
    """The shares a record lists (either encoding: ``parts_z``, or the full parts of records written before it)."""
    if not record:
        return {}
    if record.get("parts_z") is not None:
        return {sk: (int(n), values) for sk, (n, values) in json.loads(zlib.decompress(bytes(record["parts_z"]))).items()}
    return {sk: share(rollups.Part.from_json(p)) for sk, p in json.loads(record.get("parts") or "{}").items()}


def encode_shares(shares: dict[str, Share]) -> bytes:
    return zlib.compress(json.dumps(shares, separators=(",", ":"), sort_keys=True).encode(), 6)


def record_shard(record: dict[str, Any] | None) -> int | None:
    """The rollup shard a recorded trace's shares are on (``rollups.LEGACY_SHARD`` before shards existed)."""
    return None if not record or record.get("shard") is None else int(record["shard"])


@dataclass
class Change:
    """What one trace's aggregates need: the shares to move (old -> new per rollup sort key), the record's
    final attributes and the signature writes. ``shard`` is None until a trace without a record is given one."""

    state: TraceState
    old: dict[str, Share]
    new: dict[str, rollups.Part]
    attributes: dict[str, Any]  # the record's attributes besides parts, shard and rev (None: delete the record)
    signature_ops: list[dict[str, Any]]
    experiment_id: str | None
    shard: int | None
    has_shard: bool
    moved: list[str] = field(default_factory=list)

    @property
    def trace_id(self) -> str:
        return self.state.trace_id


def _change(state: TraceState) -> Change | None:
    if state.pending:
        return None
    record = state.record or {}
    old = recorded_shares(state.record)
    new_parts, signature_key, bits = _target(state)
    old_key = json.loads(record["signature_key"]) if record.get("signature_key") else None
    digest = _digest(bits, len(state.spans))
    moved = sorted(sk for sk in set(old) | set(new_parts) if old.get(sk) != (share(new_parts[sk]) if sk in new_parts else None))
    in_progress = (state.info or {}).get("state") == IN_PROGRESS
    if (
        not moved
        and old_key == signature_key
        and record.get("signature_digest") == digest
        and bool(record.get("in_progress")) == in_progress
    ):
        return None
    signature_ops: list[dict[str, Any]] = []
    if old_key and old_key != signature_key:
        signature_ops.append(table.delete_op(old_key))
    if signature_key and (old_key != signature_key or record.get("signature_digest") != digest):
        signature = SIGNATURE.item(
            {"trace_id": state.trace_id, "bits": trace_text.stored(bits), "spans": len(state.spans)},
            **_signature_fields(signature_key, state),
        )
        signature_ops.append(table.put_op(signature))
    attributes = {
        "experiment_id": state.experiment_id,
        "signature_key": json.dumps(signature_key) if signature_key else None,
        "signature_digest": digest,
        "span_count": len(state.spans),
        "span_ids": state.span_ids,
        "in_progress": in_progress,
    }
    shard = record_shard(state.record)
    return Change(state, old, new_parts, attributes, signature_ops, state.experiment_id, shard, state.record is not None, moved)


def _signature_fields(key: dict[str, str], state: TraceState) -> dict[str, Any]:
    info = state.info or {}
    fields = trace_partitions.fields_of(info)
    return {**fields, "request_time": int(info["request_time"]), "trace_id": state.trace_id}
