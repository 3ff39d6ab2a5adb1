"""Trace archival (MLflow 3.17, issue #42) end to end with the stock client: the monitor's pass (driven here with
``tick``) moves old traces' spans to the artifact store as MLflow's ``traces.pb`` and deletes their items; the
traces stay readable (get, batch get, the UI's trace data) with the same spans, span-content search stops for them,
new spans are refused, and the settings resolve at server, workspace and experiment level as MLflow's do.

The server-level retention is set very long here (other tests' traces in the shared table stay untouched); the
experiment's own shorter ``mlflow.trace.archivalRetention`` and ``mlflow.trace.archiveNow`` select what a pass takes.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import mlflow
import pytest
import requests
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tests.conftest import unique

pytestmark = pytest.mark.e2e

M3 = "/api/3.0/mlflow"
SERVER_RETENTION = "999999d"  # longer than any request time in the shared table: only what a test asks is archived
HOUR_MS = 3_600_000


@pytest.fixture
def archival(monkeypatch: pytest.MonkeyPatch, local_runtime: Any) -> Iterator[Any]:
    monkeypatch.setenv("TRACE_ARCHIVAL_INTERVAL_SECONDS", "60")  # every tick (the deployed default: 300 s)
    monkeypatch.setenv("TRACE_ARCHIVAL_RETENTION", SERVER_RETENTION)
    yield local_runtime


def _retention(value: str) -> str:
    return json.dumps({"type": "duration", "value": value})


def _trace(client: mlflow.MlflowClient, experiment_id: str, start_ms: int, text: str) -> str:
    """A finished two-span trace starting at ``start_ms`` (the client's own export), all spans in the table."""
    root = client.start_trace("root", experiment_id=experiment_id, inputs={"q": text}, start_time_ns=start_ms * 1_000_000)
    child = client.start_span(
        "child", trace_id=root.trace_id, parent_id=root.span_id, inputs={"x": text}, start_time_ns=(start_ms + 1) * 1_000_000
    )
    client.end_span(root.trace_id, child.span_id, outputs={"y": f"out-{text}"}, end_time_ns=(start_ms + 2) * 1_000_000)
    client.end_trace(root.trace_id, outputs={"a": text}, end_time_ns=(start_ms + 3) * 1_000_000)
    return root.trace_id


def _stored(server: str, trace_ids: list[str], headers: dict[str, str] | None = None) -> None:
    """Wait until the server holds each trace whole (its info says every span is in the table)."""
    mlflow.flush_trace_async_logging()
    deadline = time.monotonic() + 30
    for trace_id in trace_ids:
        while True:
            answer = requests.get(f"{server}{M3}/traces/{trace_id}", headers=headers, timeout=30)
            if answer.ok and answer.json()["trace"]["trace_info"].get("tags", {}).get("mlflow.trace.spansLocation") == "TRACKING_STORE":
                break
            assert time.monotonic() < deadline, trace_id
            time.sleep(0.2)


def _spans(server: str, trace_id: str) -> list[dict[str, Any]]:
    answer = requests.get(f"{server}{M3}/traces/get", params={"trace_id": trace_id}, timeout=30)
    assert answer.status_code == 200, answer.text
    return answer.json()["trace"]["spans"]


def _span_items(trace_id: str) -> list[dict[str, Any]]:
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import traces as store

    return table.query(**store.SPAN.query("of_trace", trace_id=trace_id))


def _search(server: str, experiment_id: str, filter_string: str) -> set[str]:
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}}
    body = {"locations": [location], "filter": filter_string, "max_results": 100}
    answer = requests.post(f"{server}{M3}/traces/search", json=body, timeout=30)
    assert answer.status_code == 200, answer.text
    return {info["trace_id"] for info in answer.json().get("traces", [])}


def _export_span(server: str, experiment_id: str, trace_id: str) -> requests.Response:
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = bytes.fromhex(trace_id.removeprefix("tr-")), b"\x09" * 8, "late"
    span.parent_span_id = b"\x01" * 8
    span.start_time_unix_nano, span.end_time_unix_nano = 1_000_000, 2_000_000
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    return requests.post(f"{server}/v1/traces", data=request.SerializeToString(), headers=headers, timeout=30)


def _export_root(server: str, experiment_id: str, start_ms: int, headers: dict[str, str]) -> str:
    """A finished one-span trace sent as OTLP (its info made from the span, as MLflow's log_spans makes it)."""
    trace_bytes = uuid.uuid4().bytes
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_bytes, b"\x01" * 8, "root"
    span.start_time_unix_nano, span.end_time_unix_nano = start_ms * 1_000_000, (start_ms + 5) * 1_000_000
    span.status.code = 1
    all_headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id, **headers}
    answer = requests.post(f"{server}/v1/traces", data=request.SerializeToString(), headers=all_headers, timeout=30)
    assert answer.status_code == 200, answer.text
    return "tr-" + trace_bytes.hex()


def _span_counts(client: mlflow.MlflowClient, experiment_id: str, now: int) -> list[dict[str, Any]]:
    """Spans per name over whole hours (the indexer's rollups) and the partial hour at the end (raw spans)."""
    from dataclasses import asdict

    from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

    points = client._tracing_client.store.query_trace_metrics(
        experiment_ids=[experiment_id],
        view_type=MetricViewType.SPANS,
        metric_name="span_count",
        aggregations=[MetricAggregation(aggregation_type=AggregationType.COUNT)],
        dimensions=["span_name"],
        start_time_ms=(now // HOUR_MS - 10) * HOUR_MS,
        end_time_ms=now + 60_000,
    )
    return [asdict(point) for point in points]


def test_old_traces_are_archived_and_stay_readable(archival: Any, server: str, client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("archival"))
    client.set_experiment_tag(experiment_id, "mlflow.trace.archivalRetention", _retention("1h"))
    now = int(time.time() * 1000)
    old = [_trace(client, experiment_id, now - 5 * HOUR_MS - n * HOUR_MS, f"old{n}") for n in range(2)]
    recent = _trace(client, experiment_id, now - 60_000, "recent")
    _stored(server, [*old, recent])
    before = {trace_id: _spans(server, trace_id) for trace_id in old}
    assert _search(server, experiment_id, "span.content LIKE '%old0%'") == {old[0]}
    archival.drain_stream()
    metrics_before = _span_counts(client, experiment_id, now)

    result = archival.monitor.tick()
    assert result["archived_traces"] == 2
    # The span metrics still count the archived spans (MLflow keeps their rows): rollups and raw rows alike.
    archival.drain_stream()
    assert _span_counts(client, experiment_id, now) == metrics_before
    assert sum(point["values"]["COUNT"] for point in metrics_before) == 6

    for trace_id in old:
        info = client.get_trace(trace_id).info
        assert info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
        location = info.tags["mlflow.trace.archiveLocation"]
        assert location.endswith(f"/{experiment_id}/traces/{trace_id}/artifacts"), location
        assert _spans(server, trace_id) == before[trace_id]  # the same spans, read back from the archive
        assert _span_items(trace_id) == []  # the table no longer holds them
    # The archive is MLflow's payload at MLflow's path: MLflow's own reader decodes it.
    from mlflow.tracing.otel.otel_archival import traces_data_pb_to_spans

    from serverless_mlflow.storage import s3
    from serverless_mlflow.store import trace_archive

    info = client.get_trace(old[0]).info
    body = s3.client().get_object(Bucket=s3.bucket_name(), Key=trace_archive.object_key(info.tags["mlflow.trace.archiveLocation"]))
    assert sorted(span.name for span in traces_data_pb_to_spans(body["Body"].read())) == ["child", "root"]
    # The stock client reads them whole (its get_trace goes through the server for ARCHIVE_REPO).
    trace = mlflow.get_trace(old[1])
    assert [span.name for span in trace.data.spans] == ["root", "child"]
    assert trace.data.spans[1].outputs == {"y": "out-old1"}
    batch = client.search_traces(locations=[experiment_id], max_results=10)
    assert {t.info.trace_id: len(t.data.spans) for t in batch} == {old[0]: 2, old[1]: 2, recent: 2}
    # The UI's trace view (get-trace-artifact) is served from the archive too.
    answer = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": old[0]}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert [span["name"] for span in answer.json()["spans"]] == [span["name"] for span in before[old[0]]]

    # The recent trace stays in the table.
    assert client.get_trace(recent).info.tags["mlflow.trace.spansLocation"] == "TRACKING_STORE"
    assert len(_span_items(recent)) == 2
    # Span-content search stops for archived traces; name filters still match their spans (MLflow keeps the rows).
    assert _search(server, experiment_id, "span.content LIKE '%old0%'") == set()
    assert _search(server, experiment_id, "span.content LIKE '%recent%'") == {recent}
    assert _search(server, experiment_id, "span.name = 'child'") == {*old, recent}

    # New spans for an archived trace are refused, as SqlAlchemyStore.log_spans does; nothing is stored.
    refused = _export_span(server, experiment_id, old[0])
    assert refused.status_code == 500
    body = refused.json()
    assert (body["error_code"], body["message"]) == ("INVALID_STATE", f"Cannot log spans to archived traces: '{old[0]}'.")
    assert _span_items(old[0]) == []
    assert _spans(server, old[0]) == before[old[0]]

    # The client's info sent again (start_trace) keeps the trace archived.
    again = client._tracing_client.store.start_trace(client.get_trace(old[0]).info)
    assert again.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    assert _spans(server, old[0]) == before[old[0]]

    # A second pass has nothing left to do.
    assert archival.monitor.tick()["archived_traces"] == 0

    # Deleting an archived trace deletes its archive too (MLflow's _delete_archived_trace_payloads).
    key = trace_archive.object_key(client.get_trace(old[1]).info.tags["mlflow.trace.archiveLocation"])
    assert client.delete_traces(experiment_id, trace_ids=[old[1]]) == 1
    listed = s3.client().list_objects_v2(Bucket=s3.bucket_name(), Prefix=key)
    assert listed.get("KeyCount") == 0


def test_archive_now_takes_everything_and_is_cleared(archival: Any, server: str, client: mlflow.MlflowClient) -> None:
    experiment_id = client.create_experiment(unique("archive-now"))
    trace_id = _trace(client, experiment_id, int(time.time() * 1000) - 1_000, "now")
    _stored(server, [trace_id])
    client.set_experiment_tag(experiment_id, "mlflow.trace.archiveNow", "{}")
    assert archival.monitor.tick()["archived_traces"] == 1
    assert client.get_trace(trace_id).info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    # Fulfilled: MLflow removes the request.
    assert "mlflow.trace.archiveNow" not in client.get_experiment(experiment_id).tags


def test_a_span_stored_while_the_pass_flips_the_trace_is_archived_with_it(archival: Any, server: str, client: mlflow.MlflowClient) -> None:
    """Span batches write no count the flip could be conditioned on: the pass reads the trace's spans again after
    its flip, so a span stored between its first read and the flip (its batch answered 200) is in the archive."""
    import boto3

    from serverless_mlflow.storage import table

    experiment_id = client.create_experiment(unique("archival-late"))
    trace_id = _trace(client, experiment_id, int(time.time() * 1000) - 1_000, "late")
    _stored(server, [trace_id])
    client.set_experiment_tag(experiment_id, "mlflow.trace.archiveNow", "{}")
    sent: list[int] = []

    def span_in_flight(params: dict[str, Any], **_: Any) -> None:
        flips = [
            op
            for op in params.get("TransactItems", [])
            if "archived" in (op.get("Update") or {}).get("ExpressionAttributeNames", {}).values()
        ]
        if flips and not sent:  # the pass read the spans and is about to flip: a batch lands just before
            sent.append(_export_span(server, experiment_id, trace_id).status_code)

    events = boto3._get_default_session().events
    events.register("before-parameter-build.dynamodb.TransactWriteItems", span_in_flight)
    table.reset_client()
    try:
        assert archival.monitor.tick()["archived_traces"] == 1
    finally:
        events.unregister("before-parameter-build.dynamodb.TransactWriteItems", span_in_flight)
        table.reset_client()
    assert sent == [200]
    assert client.get_trace(trace_id).info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    assert sorted(span["name"] for span in _spans(server, trace_id)) == ["child", "late", "root"]
    assert _span_items(trace_id) == []


def test_a_pass_that_dies_after_the_flip_is_finished_by_the_next(
    archival: Any, server: str, client: mlflow.MlflowClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from serverless_mlflow.store import trace_archival

    experiment_id = client.create_experiment(unique("archival-crash"))
    trace_id = _trace(client, experiment_id, int(time.time() * 1000) - 1_000, "crash")
    _stored(server, [trace_id])
    before = _spans(server, trace_id)
    client.set_experiment_tag(experiment_id, "mlflow.trace.archiveNow", "{}")

    def dies(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("the function timed out here")

    # The pass dies between its flip and its deletes (a timeout, a lost container).
    with monkeypatch.context() as patched:
        patched.setattr(trace_archival, "_delete_spans", dies)
        archival.monitor.tick()
    assert client.get_trace(trace_id).info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    assert len(_span_items(trace_id)) == 2  # left behind
    assert _spans(server, trace_id) == before  # readers already use the archive
    # The tag stays until the work is done.
    assert "mlflow.trace.archiveNow" in client.get_experiment(experiment_id).tags

    archival.monitor.tick()
    assert _span_items(trace_id) == []
    assert _spans(server, trace_id) == before
    assert "mlflow.trace.archiveNow" not in client.get_experiment(experiment_id).tags


def test_settings_resolve_as_in_mlflow(archival: Any, server: str, client: mlflow.MlflowClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACE_ARCHIVAL_RETENTION", "30d")
    info = requests.get(f"{server}/api/3.0/mlflow/server-info", timeout=30).json()
    assert info["trace_archival_enabled"] is True

    def effective(experiment_id: str) -> str | None:
        answer = requests.get(f"{server}/api/2.0/mlflow/experiments/get", params={"experiment_id": experiment_id}, timeout=30)
        return answer.json()["experiment"].get("effective_trace_archival_retention")

    plain = client.create_experiment(unique("eff"))
    assert effective(plain) == "30d"
    client.set_experiment_tag(plain, "mlflow.trace.archivalRetention", _retention("2h"))
    assert effective(plain) == "2h"  # shorter: the experiment's
    client.set_experiment_tag(plain, "mlflow.trace.archivalRetention", _retention("60d"))
    assert effective(plain) == "30d"  # longer: only for the allowlist
    monkeypatch.setenv("TRACE_ARCHIVAL_LONG_RETENTION_ALLOWLIST", f"{plain}, 12345")
    assert effective(plain) == "60d"
    # Malformed values are refused with MLflow's messages.
    for value, message in (
        ("30d", "Trace archival config must be encoded as a JSON object."),
        (json.dumps({"type": "x", "value": "1d"}), "Trace archival config must use type 'duration'."),
        (_retention("1w"), "Trace archival retention must be in the form `<int><unit>`, where unit is one of 'm', 'h', or 'd'."),
    ):
        answer = requests.post(
            f"{server}/api/2.0/mlflow/experiments/set-experiment-tag",
            json={"experiment_id": plain, "key": "mlflow.trace.archivalRetention", "value": value},
            timeout=30,
        )
        assert (answer.status_code, answer.json()["message"]) == (400, message)

    monkeypatch.delenv("TRACE_ARCHIVAL_RETENTION")
    assert requests.get(f"{server}/api/3.0/mlflow/server-info", timeout=30).json()["trace_archival_enabled"] is False
    assert effective(plain) is None


def test_a_workspace_retention_and_location_apply(archival: Any, server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from serverless_mlflow.storage import s3

    monkeypatch.setenv("MLFLOW_ENABLE_WORKSPACES", "true")
    name = unique("arch").lower()
    created = requests.post(f"{server}{M3}/workspaces", json={"name": name, "trace_archival_config": {"retention": "2h"}}, timeout=30)
    assert created.status_code == 201, created.text
    headers = {"x-mlflow-workspace": name}
    made = requests.post(f"{server}/api/2.0/mlflow/experiments/create", json={"name": unique("ws-arch")}, headers=headers, timeout=30)
    experiment_id = made.json()["experiment_id"]
    got = requests.get(f"{server}/api/2.0/mlflow/experiments/get", params={"experiment_id": experiment_id}, headers=headers, timeout=30)
    assert got.json()["experiment"]["effective_trace_archival_retention"] == "2h"  # the workspace's, over the server's

    # Over OTLP (the client's REST store remembers this server without workspaces from earlier tests).
    now = int(time.time() * 1000)
    old, recent = (_export_root(server, experiment_id, now - hours * HOUR_MS, headers) for hours in (5, 0))
    _stored(server, [old, recent], headers)

    assert archival.monitor.tick()["archived_traces"] == 1
    info = requests.get(f"{server}{M3}/traces/{old}", headers=headers, timeout=30).json()["trace"]["trace_info"]
    # Without a location of its own, the server's gets workspaces/<name> (MLflow's append_workspace_prefix).
    expected = f"s3://{s3.bucket_name()}/mlartifacts/workspaces/{name}/{experiment_id}/traces/{old}/artifacts"
    assert info["tags"]["mlflow.trace.archiveLocation"] == expected
    assert _span_items(old) == [] and len(_span_items(recent)) == 1


def test_passes_run_at_most_once_per_interval(
    archival: Any, server: str, client: mlflow.MlflowClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import trace_archival

    table.delete(trace_archival.CONFIG.key(key=trace_archival.PASS_KEY))  # no pass started yet in this table
    monkeypatch.setenv("TRACE_ARCHIVAL_INTERVAL_SECONDS", "300")  # MLflow's default
    experiment_id = client.create_experiment(unique("interval"))
    first = _trace(client, experiment_id, int(time.time() * 1000) - 1_000, "first")
    _stored(server, [first])
    client.set_experiment_tag(experiment_id, "mlflow.trace.archiveNow", "{}")
    assert archival.monitor.tick()["archived_traces"] == 1
    second = _trace(client, experiment_id, int(time.time() * 1000) - 1_000, "second")
    _stored(server, [second])
    client.set_experiment_tag(experiment_id, "mlflow.trace.archiveNow", "{}")
    assert archival.monitor.tick()["archived_traces"] == 0  # the next minute's tick: not yet due
    monkeypatch.setenv("TRACE_ARCHIVAL_INTERVAL_SECONDS", "60")
    assert archival.monitor.tick()["archived_traces"] == 1


def _expire(trace_id: str) -> None:
    """What the table's TTL does to an expired trace: every item of it deleted, by DynamoDB, not by a request."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import traces as store

    locator = store.locate(trace_id)
    assert locator is not None
    keys = [store.info_key(locator, trace_id), *({"pk": i["pk"], "sk": i["sk"]} for i in table.query(locator["pk"]))]
    table.batch_write(deletes=[key for key in keys if key is not None])


def _exists(key: str) -> bool:
    from serverless_mlflow.storage import s3

    return s3.client().list_objects_v2(Bucket=s3.bucket_name(), Prefix=key).get("KeyCount", 0) > 0


def test_a_trace_the_ttl_expires_leaves_no_objects(archival: Any, server: str, client: mlflow.MlflowClient) -> None:
    """An expired trace's spilled spans and archive go with its items (the indexer, from the REMOVE records), unless
    a span item came back meanwhile (a span sent again names its object)."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import trace_archive

    experiment_id = client.create_experiment(unique("expired-objects"))
    now = int(time.time() * 1000)
    big = "x" * (400 * 1024)  # each span's payload is over the item's spill threshold: kept in S3
    spilled, kept = _trace(client, experiment_id, now - 2_000, big), _trace(client, experiment_id, now - 1_500, big)
    archiving = client.create_experiment(unique("expired-archive"))
    archived = _trace(client, archiving, now - 1_000, "archived")
    _stored(server, [spilled, kept, archived])
    client.set_experiment_tag(archiving, "mlflow.trace.archiveNow", "{}")  # everything of that experiment
    assert archival.monitor.tick()["archived_traces"] == 1
    archive = trace_archive.object_key(client.get_trace(archived).info.tags["mlflow.trace.archiveLocation"])
    spill_keys = {trace_id: [item["spill_key"] for item in _span_items(trace_id)] for trace_id in (spilled, kept)}
    assert [len(keys) for keys in spill_keys.values()] == [2, 2]
    assert all(_exists(key) for key in [archive, *spill_keys[spilled], *spill_keys[kept]])
    archival.drain_stream()

    returned = _span_items(kept)
    for trace_id in (spilled, kept, archived):
        _expire(trace_id)
    table.batch_write(puts=returned)  # the spans of `kept` sent again before the indexer saw them go
    archival.drain_stream()
    assert not any(_exists(key) for key in [archive, *spill_keys[spilled]])
    assert all(_exists(key) for key in spill_keys[kept])


def _cursor(experiment_id: str) -> dict[str, Any]:
    from serverless_mlflow.storage import table
    from serverless_mlflow.store import trace_archival

    return table.get(trace_archival.CURSOR.key(experiment_id=experiment_id)) or {}


def test_a_trace_written_into_an_hour_the_pass_has_passed_is_archived_by_the_next(
    archival: Any, server: str, client: mlflow.MlflowClient
) -> None:
    """The pass's cursor only moves forward; a trace whose request time lies in an hour it has passed (an import of
    old traces, a trace that started before the hour turned) is reported by the indexer and archived next time."""
    experiment_id = client.create_experiment(unique("archival-behind"))
    client.set_experiment_tag(experiment_id, "mlflow.trace.archivalRetention", _retention("1h"))
    now = int(time.time() * 1000)
    first = _trace(client, experiment_id, now - 5 * HOUR_MS, "first")
    _stored(server, [first])
    archival.drain_stream()
    assert archival.monitor.tick()["archived_traces"] == 1
    assert int(_cursor(experiment_id)["bucket"]) == (now - 5 * HOUR_MS) // HOUR_MS + 1

    behind = _trace(client, experiment_id, now - 7 * HOUR_MS, "behind")
    _stored(server, [behind])
    archival.drain_stream()
    assert [int(b) for b in _cursor(experiment_id)["rewinds"]] == [(now - 7 * HOUR_MS) // HOUR_MS]
    assert archival.monitor.tick()["archived_traces"] == 1
    assert client.get_trace(behind).info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
    # Walked: the rewind is cleared and the cursor is back where it was.
    cursor = _cursor(experiment_id)
    assert "rewinds" not in cursor and int(cursor["bucket"]) == (now - 5 * HOUR_MS) // HOUR_MS + 1
    assert archival.monitor.tick()["archived_traces"] == 0


def test_a_trace_written_behind_a_running_pass_is_kept_for_the_next(
    archival: Any, server: str, client: mlflow.MlflowClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace that lands in an hour after the running pass walked it: the pass moves the cursor past the hour, but
    keeps the rewind the indexer recorded meanwhile, so the next pass walks the hour again."""
    from serverless_mlflow.store import trace_archival

    experiment_id = client.create_experiment(unique("archival-race"))
    client.set_experiment_tag(experiment_id, "mlflow.trace.archivalRetention", _retention("1h"))
    now = int(time.time() * 1000)
    first = _trace(client, experiment_id, now - 5 * HOUR_MS, "first")
    _stored(server, [first])
    archival.drain_stream()
    walk = trace_archival._archive_partition
    late: list[str] = []

    def lands() -> None:
        late.append(_trace(client, experiment_id, now - 5 * HOUR_MS + 1_000, "late"))
        _stored(server, late)
        archival.drain_stream()

    def walk_then_a_trace_lands(plan: Any, partition: Any, budget: Any, outcome: Any) -> None:
        walk(plan, partition, budget, outcome)
        if plan.experiment_id == experiment_id and not late:
            # Another client's thread (the pass runs as the monitor function: its rights are not the writer's).
            writer = threading.Thread(target=lands)
            writer.start()
            writer.join()

    with monkeypatch.context() as patched:
        patched.setattr(trace_archival, "_archive_partition", walk_then_a_trace_lands)
        assert archival.monitor.tick()["archived_traces"] == 1
    assert client.get_trace(late[0]).info.tags["mlflow.trace.spansLocation"] == "TRACKING_STORE"
    assert archival.monitor.tick()["archived_traces"] == 1
    assert client.get_trace(late[0]).info.tags["mlflow.trace.spansLocation"] == "ARCHIVE_REPO"
