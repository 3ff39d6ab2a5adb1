"""Writing traces: OTLP span ingestion (``POST /v1/traces``) and ``start_trace`` (``POST /api/3.0/mlflow/traces``).

The 3.17 client exports each span over OTLP as it ends, then sends the trace info once the root span ends.
Either may arrive first. Spans are stored one item per span (OTLP protobuf bytes and the span's start and end;
spilled to S3 past ``SPILL_BYTES``), in the trace's partition next to its locator. No span count is written:
``start_trace`` answers ``mlflow.trace.spansLocation=TRACKING_STORE`` only when the trace's span items number
every span the client says the trace has (its ``mlflow.trace.sizeStats`` metadata); otherwise the client uploads
``traces.json`` as well, so a span that never reached us (a 5 MB span over Lambda's 6 MB request limit) never
makes a trace partial. A late span that completes the count sets the tag then. The first span batch of a trace
makes its info and the root's brings it in line, as MLflow's log_spans does (``span_infos``); the batches
between write their span items only (and read the locator).
"""

from __future__ import annotations

import functools
import time
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from serverless_mlflow.core import clock, parallel
from serverless_mlflow.core.errors import invalid
from serverless_mlflow.request import json_text
from serverless_mlflow.request.otlp import OtlpError, mlflow_trace_id
from serverless_mlflow.storage import layout, s3, table
from serverless_mlflow.storage.schema import TTL_ATTRIBUTE
from serverless_mlflow.store import assessments, trace_archive, trace_names, trace_partitions, trace_writes
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import traces as store

from . import retention, run_links, span_infos

# A span item past this many bytes keeps its bytes in S3 (items stay well under DynamoDB's 400 KB).
SPILL_BYTES = 300 * 1024
SPILL_PREFIX = "trace-spans/"
# A span name is a dimension of the trace metrics: it must fit a rollup item (400 KB) with its summaries. MLflow's
# own column is TEXT, 65,535 bytes on MySQL; a longer name is refused before anything is written.
MAX_SPAN_NAME_BYTES = 65_535
SPAN_WAIT_SECONDS = 2.0
# Set on the locator by the span batch that places a trace (1); absent when start_trace placed it.
SPANS_PLACED = "spans_placed"
SPAN_POLL_SECONDS = 0.1


def log_spans(experiment_id: str, request: ExportTraceServiceRequest) -> None:
    """Store every span of the request, count them on their traces' locators, and make or widen each trace's
    info from its spans, as SqlAlchemyStore.log_spans does (span_infos)."""
    spans_by_trace: dict[str, list[Any]] = {}
    for resource_span in request.resource_spans:
        for scope_span in resource_span.scope_spans:
            for span in scope_span.spans:
                if len(span.trace_id) != 16 or len(span.span_id) != 8:
                    raise OtlpError(422, "Cannot convert OpenTelemetry span to MLflow span")
                if len(span.name.encode("utf-8")) > MAX_SPAN_NAME_BYTES:
                    raise OtlpError(400, f"Span name is {len(span.name.encode('utf-8'))} bytes, over the limit of {MAX_SPAN_NAME_BYTES}")
                spans_by_trace.setdefault(mlflow_trace_id(span.trace_id), []).append(span)
    experiment = experiment_store.get_experiment_meta(experiment_id)
    experiment_id = str(experiment["experiment_id"])
    for trace_id, spans in spans_by_trace.items():
        # In parallel: one request may carry a 10,000-span trace (each span is its own conditional put).
        new_spans = sum(parallel.parallel_map(functools.partial(_put_span, experiment_id, trace_id), spans))
        batch = span_infos.Batch.of(spans)
        claim = _claim(experiment_id, trace_id, batch.start)
        try:
            before = _locate_or_place(experiment_id, trace_id, claim, batch)
        except table.ConditionFailed:
            # Archived: its spans live in the archive only (the archiver reads the partition again after its flip,
            # so a span stored before the flip is archived, and one stored after it finds the mark here).
            table.batch_write(deletes=[store.SPAN.key(trace_id=trace_id, span_id=span.span_id.hex()) for span in spans])
            raise trace_archive.archived_error([trace_id]) from None
        expected = before.get("expected_spans")
        if expected is not None and new_spans and store.span_count(experiment_id, trace_id) >= int(expected):
            _mark_spans_stored(trace_id, {**before, "experiment_id": before.get("experiment_id", experiment_id)})
        if claim is None:
            continue  # a layout 1 info: the migration moves it, start_trace keeps it current
        placed = before.get("info_time")
        if placed is None or _unwritten(trace_id, before):  # ours to write: at our claim, else where placed
            span_infos.create(experiment, trace_id, claim if placed is None else int(placed), batch, run_links.pending(before))
            span_infos.sync(trace_id)  # batches stored while the info was not there yet
        elif batch.root_state is not None or before.get("root_state") is not None:
            span_infos.sync(trace_id)  # the root's batch, or one after it: the info follows the spans stored


def _unwritten(trace_id: str, before: dict[str, Any]) -> bool:
    """Whether the info the locator placed is not there: its writer (the batch that placed its time, or
    start_trace after its locator update) was throttled after placing it, and is retrying or gave up. Every batch
    looks (one read): MLflow lists a trace that any stored span batch made, and in a long storm the client may give
    up the placing batch, the root's batch and start_trace alike. A put conditioned on no info there makes it,
    whoever writes first (span_infos.create)."""
    return store.read_info(before, trace_id, projection="pk") is None


def _put_span(experiment_id: str, trace_id: str, span: Any) -> int:
    """Store one span; 1 if it was not stored before (a re-sent span overwrites without counting twice)."""
    span_id = span.span_id.hex()
    payload = span.SerializeToString()
    attributes: dict[str, Any] = {
        "start_time_unix_nano": span.start_time_unix_nano,
        "end_time_unix_nano": span.end_time_unix_nano or None,  # the trace's span range is read from its items
        TTL_ATTRIBUTE: retention.expires_at(experiment_id, span.start_time_unix_nano // 1_000_000),
    }
    if len(payload) > SPILL_BYTES:
        key = f"{SPILL_PREFIX}{experiment_id}/{trace_id}/{span_id}.pb"
        s3.client().put_object(Bucket=s3.bucket_name(), Key=key, Body=payload)
        attributes["spill_key"] = key
    else:
        attributes["span"] = payload
    item = store.SPAN.item(attributes, trace_id=trace_id, span_id=span_id)
    try:
        table.put(item, condition="attribute_not_exists(pk)")
        return 1
    except table.ConditionFailed:
        table.put(item)
        return 0


def _claim(experiment_id: str, trace_id: str, start: int) -> int | None:
    """The request time an info made from these spans would be keyed with, unless the trace has a layout 1 info."""
    if layout.layout1_traces_possible() and table.get(store.TRACE_V1.key(experiment_id=experiment_id, trace_id=trace_id), projection="pk"):
        return None
    return start


def _locate_or_place(experiment_id: str, trace_id: str, claim: int | None, batch: span_infos.Batch) -> dict[str, Any]:
    """The trace's locator as it was before this batch's write, if the batch writes it: only the batch that
    places the trace (its experiment, expiry and, with ``claim``, the info's request time unless one was placed)
    and the root's batch (its state) do. Other batches only read it, after their spans are stored: a batch that
    reads no ``root_state`` is in the span range the root's sync reads after recording it (``span_infos``), and a
    start_trace that set ``expected_spans`` after this read counts this batch's spans itself. ConditionFailed when
    the trace is archived."""
    key = store.LOCATOR.key(trace_id=trace_id)
    locator = store.locate(trace_id) or {}
    if locator.get(trace_archive.LOCATOR_MARK):
        raise table.ConditionFailed()
    placed = store.is_placed(locator) and (claim is None or locator.get("info_time") is not None)
    if placed and batch.root_state in (None, locator.get("root_state")):
        return locator
    expression = f"SET experiment_id = if_not_exists(experiment_id, :e), entity_type = :t, {SPANS_PLACED} = :one"
    values: dict[str, Any] = {":e": experiment_id, ":t": store.LOCATOR.name, ":one": 1}
    expires = retention.expires_at(experiment_id, batch.start)
    if expires is not None:  # a trace whose info never arrives still expires
        expression, values[":x"] = expression + f", {TTL_ATTRIBUTE} = if_not_exists({TTL_ATTRIBUTE}, :x)", expires
    if claim is not None:
        expression, values[":c"] = expression + ", info_time = if_not_exists(info_time, :c)", claim
    if batch.root_state is not None:
        expression, values[":rs"] = expression + ", root_state = :rs", batch.root_state
    before = (
        table.update(
            key,
            expression,
            values=values,
            names={"#archived": trace_archive.LOCATOR_MARK},
            condition="attribute_not_exists(#archived)",
            return_values="ALL_OLD",
        )
        or {}
    )
    return before


def _mark_spans_stored(trace_id: str, locator: dict[str, Any]) -> None:
    key = store.info_key(locator, trace_id)
    if key is None:
        return  # start_trace has not placed the info yet; it reads the count itself
    found = store.read_info(locator, trace_id, projection="tags")
    if found is not None and (found.get("tags") or {}).get(store.SPANS_LOCATION_TAG) == store.TRACKING_STORE:
        return  # a batch after the count was complete: nothing to change (no new revision, no rewrite)
    try:
        trace_writes.update_info(
            {**key, "trace_id": trace_id},
            "SET tags.#sl = :v",
            names={"#sl": store.SPANS_LOCATION_TAG},
            values={":v": store.TRACKING_STORE},
            condition="attribute_exists(tags)",
        )
    except table.ConditionFailed:
        pass  # start_trace has not written the info yet; it reads the count itself


# --- start_trace -----------------------------------------------------------------------------------


def _expected_spans(metadata: dict[str, str]) -> int | None:
    try:
        stats = json_text.loads(metadata.get(store.SIZE_STATS_METADATA, ""))
        value = stats.get("num_spans")
        return int(value) if isinstance(value, int) and value >= 0 else None
    except (ValueError, AttributeError, TypeError):
        return None


def _string_map(value: Any, field: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise invalid(f"Invalid value for {field}: expected a map of strings")
    return dict(value)


def start_trace(trace_info: dict[str, Any], *, finalized: bool = True) -> dict[str, Any]:
    """SqlAlchemyStore.start_trace: record the info; answer it with the artifact and spans locations.

    ``finalized=False`` for the v2 start/end of mlflow 2.x clients, which MLflow does not mark finalized.
    A repeated call merges into the stored info (tags and metadata added since are kept)."""
    trace_id = trace_info.get("trace_id")
    if not isinstance(trace_id, str) or not trace_id:
        raise invalid("Missing value for required parameter 'trace.trace_info.trace_id'.")
    location = trace_info.get("trace_location") or {}
    experiment_id = ((location.get("mlflow_experiment") or {}).get("experiment_id")) if isinstance(location, dict) else None
    experiment = experiment_store.get_experiment_meta(experiment_id)
    experiment_store.check_experiment_active(experiment)
    experiment_id = str(experiment["experiment_id"])
    metadata = _string_map(trace_info.get("trace_metadata"), "trace_metadata")
    tags = _string_map(trace_info.get("tags"), "tags")
    state = trace_info.get("state") or "STATE_UNSPECIFIED"
    if state not in store.STATES:
        raise invalid(f"Invalid value for state: {state!r}")
    trace_name = tags.pop(store.TRACE_NAME_TAG, None)
    if finalized:
        metadata[store.INFO_FINALIZED_METADATA] = "true"
    tags.pop(store.ARTIFACT_LOCATION_TAG, None)  # composed from the experiment's on read (store.tags_of), as MLflow sets it
    tags.pop(store.SPANS_LOCATION_TAG, None)  # set by the store only, never by the client
    attributes: dict[str, Any] = {
        "trace_id": trace_id,
        "experiment_id": experiment_id,
        "request_time": store.parse_timestamp_ms(trace_info.get("request_time"), "request_time"),
        "execution_duration": store.parse_duration_ms(trace_info.get("execution_duration"), "execution_duration"),
        "state": state,
        "client_request_id": trace_info.get("client_request_id") or None,
        "request_preview": trace_info.get("request_preview") or None,
        "response_preview": trace_info.get("response_preview") or None,
        "trace_name": trace_name,
        "trace_metadata": metadata,
        "tags": tags,
    }
    request_time = attributes["request_time"]
    attributes[TTL_ATTRIBUTE] = retention.expires_at(experiment_id, request_time)
    # The directory names the partition before any info is in it, and the locator names a new info's request time
    # before the info is written: a reader that finds either finds the info once it exists. An info placed
    # already (made from span batches) is found where it is until its move lands, with the locator's, at once.
    trace_partitions.ensure_partition(experiment_id, request_time, trace_id, attributes[TTL_ATTRIBUTE])
    if carried := _carried_assessments(trace_id, trace_info.get("assessments")):
        attributes["assessments"] = assessments.stored(carried)
    expected_spans = _expected_spans(metadata)
    expression = "SET experiment_id = :e, entity_type = :t, info_time = if_not_exists(info_time, :r)"
    values: dict[str, Any] = {":e": experiment_id, ":t": store.LOCATOR.name, ":r": request_time}
    if attributes[TTL_ATTRIBUTE] is not None:
        expression, values[":x"] = expression + f", {TTL_ATTRIBUTE} = :x", attributes[TTL_ATTRIBUTE]
    if expected_spans is not None:
        expression, values[":n"] = expression + ", expected_spans = :n", expected_spans
    started = time.monotonic()
    before = store.locate(trace_id) or {}
    current = _locator_current(before, trace_id, experiment_id, request_time, attributes[TTL_ATTRIBUTE], expected_spans)
    if not current:
        before = table.update(store.LOCATOR.key(trace_id=trace_id), expression, values=values, return_values="ALL_OLD") or {}
    if held := run_links.pending(before):  # link-to-run before the trace arrived
        attributes["linked_runs"] = held
    if before.get(trace_archive.LOCATOR_MARK):  # archived: its spans stay where its archive is
        tags[store.SPANS_LOCATION_TAG] = trace_archive.ARCHIVE_REPO
        tags[trace_archive.ARCHIVE_LOCATION_TAG] = before[trace_archive.LOCATOR_MARK]
    elif (current and expected_spans is not None) or _all_spans_stored(experiment_id, trace_id, expected_spans):
        tags[store.SPANS_LOCATION_TAG] = store.TRACKING_STORE
    item = trace_writes.info_item(attributes)
    trace_names.ensure_for(item)  # before the info names it: a name search finds the info once it exists
    placed = before.get("info_time")
    stored = trace_writes.save_info(
        item,
        previous=trace_writes.info_place(before, trace_id),
        expect_existing=placed == request_time,
        moved_from=None if placed is None or int(placed) == request_time else int(placed),
    )
    if store.SPANS_LOCATION_TAG not in stored["tags"] and expected_spans is not None:
        # The last span may have completed the count after our last look but before the info existed, when
        # its own attempt to set the tag found no info: look once more (the answer keeps the client's upload).
        if store.span_count(experiment_id, trace_id) >= expected_spans:
            _mark_spans_stored(trace_id, store.locate(trace_id) or {})
    run_links.apply_late(trace_id, stored, started)
    return store.info_json(stored)


def _locator_current(
    locator: dict[str, Any], trace_id: str, experiment_id: str, request_time: int, expires: int | None, expected: int | None
) -> bool:
    """Whether start_trace's locator update would change nothing a reader needs: the span batches placed the info
    at this request time in this experiment, the locator expires no earlier than the info, and every announced
    span is stored (so no late batch needs ``expected_spans`` to set the tag). The client sends the info after the
    root's batch, so this is the usual case: one write per trace less."""
    if locator.get(trace_archive.LOCATOR_MARK) or str(locator.get("experiment_id")) != experiment_id:
        return False
    if locator.get("info_time") is None or int(locator["info_time"]) != request_time:
        return False
    kept = locator.get(TTL_ATTRIBUTE)
    if kept != expires and (kept is None or expires is None or int(kept) < expires):
        return False
    return expected is None or store.span_count(experiment_id, trace_id) >= expected


def _carried_assessments(trace_id: str, raw: Any) -> dict[str, dict[str, Any]]:
    """Assessments logged while the trace was active (``log_feedback`` inside a traced call), by id.

    A client that sends no id gets one derived from the assessment itself, so a retried ``StartTraceV3``
    overwrites instead of adding a copy; ids a client assigns (3.18) are kept and upserted the same way.
    """
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise invalid(f"Invalid value {raw!r} for parameter 'trace.trace_info.assessments' supplied.")
    now = clock.now_millis()
    out: dict[str, dict[str, Any]] = {}
    for index, entry in enumerate(raw):
        stable_id = assessments.content_id(trace_id, entry) if isinstance(entry, dict) else None
        field = f"trace.trace_info.assessments[{index}]"
        assessment = assessments.canonical(entry, trace_id, now, stable_id, field=field)
        out[assessment["assessment_id"]] = assessment
    return out


def _all_spans_stored(experiment_id: str, trace_id: str, expected: int | None) -> bool:
    """Whether every span the client announced is stored; waits briefly for spans still in flight.

    The client's async export queue sends the last spans and the trace info concurrently, so the info often
    arrives a few milliseconds before the last span. Counting the trace's span items (a keys-only Query; the
    locator was updated first, so a batch stored after a count sees ``expected_spans`` and sets the tag itself)
    for up to ``SPAN_WAIT_SECONDS`` saves the client a redundant traces.json upload; past it the client uploads
    traces.json (never a loss).
    """
    if expected is None:
        return False
    deadline = time.monotonic() + SPAN_WAIT_SECONDS
    while store.span_count(experiment_id, trace_id) < expected:
        if time.monotonic() >= deadline:
            return False
        time.sleep(SPAN_POLL_SECONDS)
    return True


def otlp_error_body(error: OtlpError) -> tuple[int, dict[str, Any]]:
    return error.status, {"detail": error.detail, "error_code": "INVALID_PARAMETER_VALUE", "message": error.detail}
