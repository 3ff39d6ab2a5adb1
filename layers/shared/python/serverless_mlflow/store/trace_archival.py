"""The trace archival pass (MLflow's ``run_trace_archival_scheduler`` / ``SqlAlchemyStore.archive_traces``), run by
the monitor's minute tick when server-level archival is on (``trace_archival_config``).

Per workspace and active experiment: the cutoff is now minus the effective retention, or now minus the
``mlflow.trace.archiveNow`` request's ``older_than`` (everything when it has none) if that is later. Candidates
are found by Query, never Scan: the experiment's directory of trace partitions (``trace_partitions``) from the
experiment's cursor hour up to the cutoff, then each partition's infos by request time up to the cutoff. A
finished (not IN_PROGRESS) trace whose spans are all in the table is archived in three steps, each safe to re-run:

1. its spans are written to S3 as MLflow's ``traces.pb`` (``trace_archive.payload``);
2. one transaction flips it: the locator gets ``archived`` (on condition that it is not archived) with ``cleanup``
   set, and the info gets MLflow's tags (on condition of its revision: a change meanwhile makes the flip fail,
   and the pass deletes its unreferenced payload as MLflow does);
3. the trace's spans are read again: a span stored between the first read and the flip is added to the payload
   (span batches write no count to condition the flip on; one stored after the flip sees the mark and removes
   itself); the span items (and spilled payloads) are deleted, then ``cleanup`` is removed.

A pass that dies between 2 and 3 leaves ``cleanup`` on the locator: the next pass, still walking that hour (the
cursor moves past an hour only when nothing in it is left to do), finds it and finishes the deletes.
An info written into an hour the cursor has passed (a request time in a past hour: a trace that started before
the hour turned, an import) is reported by the stream indexer (``rewind``): the next pass walks that hour again.
A trace whose spans cannot be serialized is marked ``mlflow.trace.archivalFailure=MALFORMED_TRACE``, as MLflow does.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import s3, table
from serverless_mlflow.storage.schema import ENTITY, ENTITY_TYPE, PK, SK, TRACE_BUCKET_MS, trace_bucket
from serverless_mlflow.store import artifact_locations, experiment_items, span_content, trace_archive, trace_partitions, workspaces
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import trace_archival_config as config
from serverless_mlflow.store import traces as store

log = logging.getLogger(__name__)

CURSOR = ENTITY["trace_archival_cursor"]
CONFIG = ENTITY["config"]
PASS_KEY = "trace_archival_pass"  # CFG#trace_archival_pass: when the last pass started (MLflow's interval)
TRACKING_STORE = "TRACKING_STORE"
MALFORMED_TRACE = "MALFORMED_TRACE"
MAX_CURSOR_ATTEMPTS = 3


@dataclass
class Budget:
    """What is left of the pass: traces (MLflow's max_traces_per_pass) and time (the function's, monotonic)."""

    remaining: int | None
    stop_at: float | None = None

    def spent(self) -> bool:
        out_of_time = self.stop_at is not None and time.monotonic() >= self.stop_at
        return out_of_time or (self.remaining is not None and self.remaining <= 0)

    def take(self) -> None:
        if self.remaining is not None:
            self.remaining -= 1


@dataclass
class HourOutcome:
    archived: int = 0
    blocked: bool = False  # something in the hour is left for a later pass


@dataclass
class ExperimentPlan:
    experiment_id: str
    cutoff: int
    archive_now_raw: str | None
    workspace: str
    location: str
    archived: list[str] = field(default_factory=list)


def run_pass(now_ms: int | None = None, seconds: float | None = None) -> int:
    """One archival pass over every workspace; the number of traces archived. ``seconds``: stop starting new
    traces after this long (the function's time; what is left waits for the next pass)."""
    server = config.server_config()
    if server is None:
        return 0
    now = clock.now_millis() if now_ms is None else now_ms
    if not _due(now, server.interval_seconds):
        return 0
    budget = Budget(server.max_traces_per_pass, None if seconds is None else time.monotonic() + seconds)
    names = [w["name"] for w in workspaces.list_workspaces()] if request_workspace.enabled() else [None]
    total = 0
    for name in names:
        scope = config.scope_config(server, name)
        for experiment in experiment_store.list_experiments(name or experiment_items.DEFAULT_WORKSPACE):
            if budget.spent():
                return total
            if experiment["lifecycle_stage"] != experiment_items.ACTIVE:
                continue
            plan = _plan(experiment, scope, server, now, name)
            try:
                total += _archive_experiment(plan, budget)
            except Exception:
                log.exception("trace archival failed for experiment %s; the next pass retries", plan.experiment_id)
    return total


def _due(now: int, interval_seconds: int) -> bool:
    """MLflow's ``interval_seconds`` between passes (the monitor ticks every minute): the pass that moves the
    table's start time past the interval runs; the others skip. A minute or less: every tick."""
    if interval_seconds <= 60:
        return True
    try:
        table.update(
            CONFIG.key(key=PASS_KEY),
            "SET #v = :now, entity_type = :t",
            names={"#v": "value"},
            values={":now": now, ":due": now - interval_seconds * 1000 + 5_000, ":t": CONFIG.name},
            condition="attribute_not_exists(#v) OR #v <= :due",
        )
    except table.ConditionFailed:
        return False
    return True


def _plan(
    experiment: dict[str, Any], scope: config.ScopeConfig, server: config.ServerConfig, now: int, workspace: str | None
) -> ExperimentPlan:
    experiment_id = experiment["experiment_id"]
    tags = {t["key"]: t["value"] for t in experiment.get("tags") or []}
    retention = config.effective_retention(experiment_id, tags, scope.retention, server.long_retention_allowlist)
    cutoff = now - config.millis(retention)
    requested, older_than = config.archive_now_millis(tags.get(config.TRACE_ARCHIVE_NOW_TAG))
    if requested:
        cutoff = max(cutoff, now if older_than is None else now - older_than)
    raw = tags.get(config.TRACE_ARCHIVE_NOW_TAG) if requested else None
    return ExperimentPlan(experiment_id, cutoff, raw, workspace or experiment_items.DEFAULT_WORKSPACE, scope.location)


def _archive_experiment(plan: ExperimentPlan, budget: Budget) -> int:
    cursor = table.get(CURSOR.key(experiment_id=plan.experiment_id)) or {}
    start_bucket = _start_bucket(cursor)
    low = None if start_bucket is None else start_bucket * TRACE_BUCKET_MS
    # blocked: something up to the cutoff is left for a later pass. The cursor passes an hour only when nothing
    # before it is left and the whole hour is past the cutoff (a later trace of it is not archivable yet).
    archived, done_through, blocked, cursor_held = 0, start_bucket, False, False
    for hour in trace_partitions.by_hour(plan.experiment_id, low, plan.cutoff, descending=False):
        if budget.spent():
            blocked = True
            break
        outcome = HourOutcome()
        for partition in hour:
            _archive_partition(plan, partition, budget, outcome)
        archived += outcome.archived
        blocked = blocked or outcome.blocked
        cursor_held = cursor_held or blocked or (hour[0].bucket + 1) * TRACE_BUCKET_MS > plan.cutoff
        if not cursor_held:
            done_through = hour[0].bucket + 1
    if done_through is not None and (done_through != cursor.get("bucket") or cursor.get("rewinds")):
        _advance(plan.experiment_id, done_through, cursor)
    if plan.archive_now_raw is not None and not blocked:
        _clear_archive_now(plan)
    return archived


def _start_bucket(cursor: dict[str, Any]) -> int | None:
    """The first hour a pass walks: the cursor's, or an earlier hour an info was written into since (``rewind``).
    None: from the experiment's first hour (no pass has moved the cursor yet)."""
    if cursor.get("bucket") is None:
        return None
    return min([int(cursor["bucket"]), *(int(b) for b in cursor.get("rewinds") or [])])


def _advance(experiment_id: str, done_through: int, cursor: dict[str, Any]) -> None:
    """Move the cursor to ``done_through``. The hours rewound before the pass started were walked, so they are
    cleared, but only if no rewind came in meanwhile (``seq`` unchanged): an info written into an hour after the
    pass walked it rewinds after its write, so the next pass still walks that hour."""
    key = CURSOR.key(experiment_id=experiment_id)
    read, clear = cursor, bool(cursor.get("rewinds"))
    for _ in range(MAX_CURSOR_ATTEMPTS):
        seq = read.get("seq")
        values: dict[str, Any] = {":b": done_through, ":t": CURSOR.name}
        if seq is not None:
            values[":seq"] = seq
        try:
            table.update(
                key,
                "SET #b = :b, entity_type = :t" + (" REMOVE rewinds" if clear else ""),
                names={"#b": "bucket"},
                values=values,
                condition="attribute_not_exists(seq)" if seq is None else "seq = :seq",
            )
            return
        except table.ConditionFailed:
            # Rewound during the pass: keep every rewind (the next pass walks from the earliest) and move on.
            read, clear = table.get(key) or {}, False
    log.warning("the trace archival cursor of experiment %s kept moving; left for the next pass", experiment_id)


def rewind(experiment_id: str, bucket: int) -> None:
    """An info was written into this hour, which the cursor may have passed already (a request time in a past
    hour): the next pass walks it again. Called after the info's write (by the stream indexer), so a pass that
    walked the hour before the write sees the ``seq`` change and does not clear it (``_advance``)."""
    table.update(
        CURSOR.key(experiment_id=experiment_id),
        "SET rewinds = list_append(if_not_exists(rewinds, :none), :b), entity_type = :t ADD seq :one",
        values={":none": [], ":b": [bucket], ":t": CURSOR.name, ":one": 1},
    )


def _archive_partition(plan: ExperimentPlan, partition: trace_partitions.Partition, budget: Budget, outcome: HourOutcome) -> None:
    query = store.TRACE.query("by_request_time", experiment_id=partition.experiment_id, bucket=partition.bucket, shard=partition.shard)
    archived_ids: list[str] = []
    for info in table.iter_query(**query.range(None, {"request_time": plan.cutoff})):
        if info.get(ENTITY_TYPE) != store.TRACE.name or store.is_expired(info):
            continue
        tags = info.get("tags") or {}
        if trace_archive.is_archived(info):
            archived_ids.append(info["trace_id"])
            continue
        if tags.get(trace_archive.ARCHIVAL_FAILURE_TAG) or tags.get(store.SPANS_LOCATION_TAG) != TRACKING_STORE:
            continue  # marked failed, or its spans are a traces.json artifact: never archived here (as MLflow)
        if info.get("state") == "IN_PROGRESS":
            outcome.blocked = True
            continue
        if budget.spent():
            outcome.blocked = True
            return
        try:
            if archive_trace(info, plan.location):
                outcome.archived += 1
                budget.take()
            elif not trace_archive.is_archived(store.info_item_or_none(info["trace_id"]) or {}):
                outcome.blocked = True
        except Exception:
            log.warning("failed to archive trace %s; left for a later pass", info["trace_id"], exc_info=True)
            outcome.blocked = True
    _finish_cleanups(archived_ids, outcome)


def archive_trace(info: dict[str, Any], location: str) -> bool:
    """Archive one trace (steps 1-3 of the module doc); False when it changed meanwhile or is not archivable."""
    trace_id, experiment_id = info["trace_id"], str(info["experiment_id"])
    items = table.query(**store.LOCATOR.query("with_spans", trace_id=trace_id))
    locator = next((i for i in items if i.get(ENTITY_TYPE) == store.LOCATOR.name), None)
    span_items = [i for i in items if i.get(ENTITY_TYPE) == store.SPAN.name]
    if locator is None or locator.get(trace_archive.LOCATOR_MARK) or not span_items:
        return False
    try:
        body = trace_archive.payload([_decode(item) for item in span_items])
    except Exception:
        _mark_failure(info)
        return False
    artifact_uri = artifact_locations.append_to_uri_path(location, experiment_id, store.TRACE_FOLDER, trace_id, store.ARTIFACTS_FOLDER)
    key = trace_archive.object_key(artifact_uri)
    s3.client().put_object(Bucket=s3.bucket_name(), Key=key, Body=body)
    tags = {
        **(info.get("tags") or {}),
        store.SPANS_LOCATION_TAG: trace_archive.ARCHIVE_REPO,
        trace_archive.ARCHIVE_LOCATION_TAG: artifact_uri,
    }
    tags.pop(trace_archive.ARCHIVAL_FAILURE_TAG, None)
    rev_condition, rev_values = ("rev = :rev", {":rev": info["rev"]}) if info.get("rev") is not None else ("attribute_not_exists(rev)", {})
    try:
        table.transact(
            [
                table.update_op(
                    store.LOCATOR.key(trace_id=trace_id),
                    "SET #a = :u, cleanup = :one",
                    names={"#a": trace_archive.LOCATOR_MARK},
                    values={":u": artifact_uri, ":one": 1},
                    condition="attribute_not_exists(#a)",
                ),
                table.update_op(
                    {PK: info[PK], SK: info[SK]},
                    "SET tags = :t ADD rev :one",
                    values={":t": tags, ":one": 1, **rev_values},
                    condition=f"attribute_exists(pk) AND {rev_condition}",
                ),
            ]
        )
    except table.ConditionFailed:
        # Changed since it was read (a span, a tag): the payload is nobody's, as MLflow's
        # _delete_unreferenced_archived_trace_payload; the next pass tries again.
        s3.client().delete_object(Bucket=s3.bucket_name(), Key=key)
        return False
    _delete_spans(trace_id, _with_late_spans(trace_id, key, span_items))
    return True


def _with_late_spans(trace_id: str, key: str, span_items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The trace's span items once the locator is marked: a span batch stored after the first read but before the
    flip (span batches write no count the flip could be conditioned on) is archived too, its payload rewritten;
    a batch stored after the flip finds the mark and removes its own spans (``ingest``)."""
    latest = table.query(**store.SPAN.query("of_trace", trace_id=trace_id))
    if {item[SK] for item in latest} <= {item[SK] for item in span_items}:
        return span_items
    every = {item[SK]: item for item in span_items} | {item[SK]: item for item in latest}
    body = trace_archive.payload([_decode(item) for item in every.values()])
    s3.client().put_object(Bucket=s3.bucket_name(), Key=key, Body=body)
    return list(every.values())


def _decode(item: dict[str, Any]) -> Any:
    if item.get("spill_key"):
        return span_content.parse(s3.client().get_object(Bucket=s3.bucket_name(), Key=item["spill_key"])["Body"].read())
    return span_content.parse(bytes(item["span"]))


def _delete_spans(trace_id: str, span_items: list[dict[str, Any]]) -> None:
    table.batch_write(deletes=[{PK: item[PK], SK: item[SK]} for item in span_items])
    for item in span_items:
        if item.get("spill_key"):
            s3.client().delete_object(Bucket=s3.bucket_name(), Key=item["spill_key"])
    table.update(store.LOCATOR.key(trace_id=trace_id), "REMOVE cleanup")


def _finish_cleanups(trace_ids: list[str], outcome: HourOutcome) -> None:
    """Span deletes a pass that died after its flip left undone (the locator still says ``cleanup``)."""
    if not trace_ids:
        return
    for locator in table.batch_get([store.LOCATOR.key(trace_id=t) for t in trace_ids]):
        if not locator.get("cleanup"):
            continue
        trace_id = store.locator_trace_id(locator)
        try:
            _delete_spans(trace_id, table.query(**store.SPAN.query("of_trace", trace_id=trace_id)))
        except Exception:
            log.warning("span cleanup of archived trace %s failed; left for a later pass", trace_id, exc_info=True)
            outcome.blocked = True


def _mark_failure(info: dict[str, Any]) -> None:
    log.warning("marking trace %s as %s during archival", info["trace_id"], MALFORMED_TRACE)
    try:
        table.update(
            {PK: info[PK], SK: info[SK]},
            "SET tags.#f = :r ADD rev :one",
            names={"#f": trace_archive.ARCHIVAL_FAILURE_TAG},
            values={":r": MALFORMED_TRACE, ":one": 1},
            condition="attribute_exists(tags)",
        )
    except table.ConditionFailed:
        pass


def _clear_archive_now(plan: ExperimentPlan) -> None:
    """MLflow clears a fulfilled ``mlflow.trace.archiveNow`` request: only the value the pass started with (a newer
    request written meanwhile stays), the tag and its collection copy together."""
    try:
        table.transact(
            [
                table.delete_op(
                    experiment_items.tag_key(plan.experiment_id, config.TRACE_ARCHIVE_NOW_TAG),
                    condition="#v = :v",
                    names={"#v": "value"},
                    values={":v": plan.archive_now_raw},
                ),
                table.delete_op(experiment_items.entry_tag_key(plan.experiment_id, config.TRACE_ARCHIVE_NOW_TAG, plan.workspace)),
            ]
        )
    except table.ConditionFailed:
        pass


__all__ = ["archive_trace", "rewind", "run_pass", "trace_bucket"]
