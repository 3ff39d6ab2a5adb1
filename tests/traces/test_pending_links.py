"""link-to-run before the trace is stored: the client exports traces asynchronously, so a link often comes first.
MLflow's SqlAlchemyStore keeps the association without checking the trace; here the link waits on the trace's
locator and the info's writer adds it (functions/traces/run_links.py), in every ordering."""

from __future__ import annotations

import json
import threading
import time
import uuid
from typing import Any

import mlflow
import pytest
import requests
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException
from traces import ingest, run_links

from serverless_mlflow.store import traces as store
from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("tracing")]


def _names(experiment_id: str, run_id: str | None = None, filter_string: str | None = None) -> list[str]:
    found = mlflow.search_traces(
        locations=[experiment_id], run_id=run_id, filter_string=filter_string, return_type="list", include_spans=False
    )
    return sorted(t.info.tags.get("mlflow.traceName", "") for t in found)


def _error_code(call: Any) -> str | None:
    try:
        call()
    except MlflowException as error:
        return error.error_code
    return None


def _scenario(uri: str) -> dict[str, Any]:
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    experiment_id = mlflow.create_experiment(unique("pending-links"))
    mlflow.set_experiment(experiment_id=experiment_id)
    run = client.create_run(experiment_id).info.run_id
    other = client.create_run(experiment_id).info.run_id
    with mlflow.start_span(name="early") as span:
        # The trace is exported when its root span ends: these links come before the store has it.
        client.link_traces_to_run([span.trace_id], run)
        client.link_traces_to_run([span.trace_id], other)
    with mlflow.start_span(name="late") as span:
        pass
    client.link_traces_to_run([span.trace_id], run)  # after: the trace is stored
    with mlflow.start_span(name="unlinked"):
        pass
    before = {"run": _names(experiment_id, run), "other": _names(experiment_id, other), "all": _names(experiment_id)}
    never = "tr-" + uuid.uuid4().hex
    client.link_traces_to_run([never], other)  # a trace that never comes
    return {
        "run": _names(experiment_id, run),
        "other": _names(experiment_id, other),
        "filter": _names(experiment_id, filter_string=f"attribute.run_id = '{other}'"),
        "all": _names(experiment_id),
        "unchanged by the pending link": before
        == {"run": _names(experiment_id, run), "other": _names(experiment_id, other), "all": _names(experiment_id)},
        "never: get_trace": _error_code(lambda: client.get_trace(never)),
        "never: set_trace_tag": _error_code(lambda: client.set_trace_tag(never, "k", "v")),
    }


def test_links_before_and_after_the_trace_arrives_match_mlflow_server(server: str) -> None:
    ours = _scenario(server)
    assert ours == _scenario(reference_server().url)
    assert ours["run"] == ["early", "late"]
    assert ours["other"] == ours["filter"] == ["early"]
    assert ours["all"] == ["early", "late", "unlinked"]
    assert ours["unchanged by the pending link"] is True
    assert ours["never: get_trace"] == "RESOURCE_DOES_NOT_EXIST"


def _start_trace_waiting_for_spans(server: str, experiment_id: str) -> tuple[str, threading.Thread, list[requests.Response]]:
    """A start_trace that announces a span never sent: it waits SPAN_WAIT_SECONDS between naming the info's place
    on the locator and writing the info, the window where a link may find the place named and no info yet."""
    trace_id = "tr-" + uuid.uuid4().hex
    info = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
        "request_time": "2023-11-14T22:13:20Z",
        "execution_duration": "0.100s",
        "state": "OK",
        "tags": {"mlflow.traceName": "raced"},
        "trace_metadata": {"mlflow.trace.sizeStats": json.dumps({"num_spans": 1})},
    }
    answers: list[requests.Response] = []
    writer = threading.Thread(
        target=lambda: answers.append(requests.post(f"{server}/api/3.0/mlflow/traces", json={"trace": {"trace_info": info}}, timeout=60))
    )
    writer.start()
    deadline = time.monotonic() + ingest.SPAN_WAIT_SECONDS
    while (store.locate(trace_id) or {}).get("info_time") is None:
        assert time.monotonic() < deadline, "start_trace did not update the locator"
        time.sleep(0.02)
    # The ordering under test: the place is named, the info not written yet.
    assert store.info_item_or_none(trace_id) is None
    return trace_id, writer, answers


@pytest.mark.parametrize("who_adds_it", ["the waiting link", "the writer's second look"])
def test_a_link_between_start_traces_locator_update_and_info_write_is_kept(
    server: str, who_adds_it: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    if who_adds_it == "the writer's second look":
        # The link gives up at once (as after a writer stall past its wait): the writer, slower than its
        # threshold, reads the locator once more.
        monkeypatch.setattr(run_links, "LINK_WAIT_SECONDS", 0.0)
        monkeypatch.setattr(run_links, "WRITER_CHECK_SECONDS", ingest.SPAN_WAIT_SECONDS / 4)
    mlflow.set_tracking_uri(server)
    client = MlflowClient(server)
    experiment_id = mlflow.create_experiment(unique("raced-link"))
    run = client.create_run(experiment_id).info.run_id
    trace_id, writer, answers = _start_trace_waiting_for_spans(server, experiment_id)
    client.link_traces_to_run([trace_id], run)
    if who_adds_it == "the waiting link":
        assert store.info_item_or_none(trace_id) is not None  # the link returned once it had added itself to the info
    else:
        assert store.info_item_or_none(trace_id) is None  # the link left it to the writer
    writer.join()
    assert answers[0].status_code == 200, answers[0].text
    assert _names(experiment_id, run) == ["raced"]


def test_a_link_held_before_the_root_span_arrives_reaches_the_info_made_from_it(server: str) -> None:
    """Spans from an exporter that never sends start_trace: the info made from the root span carries the link."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    mlflow.set_tracking_uri(server)
    client = MlflowClient(server)
    experiment_id = mlflow.create_experiment(unique("root-span-link"))
    run = client.create_run(experiment_id).info.run_id
    trace_bytes = uuid.uuid4().bytes
    trace_id = "tr-" + trace_bytes.hex()
    client.link_traces_to_run([trace_id], run)
    assert _error_code(lambda: client.get_trace(trace_id)) == "RESOURCE_DOES_NOT_EXIST"
    request = ExportTraceServiceRequest()
    span = request.resource_spans.add().scope_spans.add().spans.add()
    span.trace_id, span.span_id, span.name = trace_bytes, b"\x02" * 8, "root"
    span.start_time_unix_nano, span.end_time_unix_nano = time.time_ns() - 1_000_000, time.time_ns()
    headers = {"Content-Type": "application/x-protobuf", "x-mlflow-experiment-id": experiment_id}
    requests.post(f"{server}/v1/traces", data=request.SerializeToString(), headers=headers, timeout=30).raise_for_status()
    found = mlflow.search_traces(locations=[experiment_id], run_id=run, return_type="list")
    assert [t.info.trace_id for t in found] == [trace_id]


def test_a_link_waits_once_for_a_writer_that_died_and_its_retry_adds_it(server: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A start_trace that named the info's place and died before writing the info (the locator as it left it):
    the link waits LINK_WAIT_SECONDS once for the whole request, then the client's retried start_trace adds it."""
    from serverless_mlflow.storage import table

    monkeypatch.setattr(run_links, "LINK_WAIT_SECONDS", 0.5)
    mlflow.set_tracking_uri(server)
    client = MlflowClient(server)
    experiment_id = mlflow.create_experiment(unique("dead-writer"))
    run = client.create_run(experiment_id).info.run_id
    trace_ids = ["tr-" + uuid.uuid4().hex for _ in range(3)]
    for trace_id in trace_ids:
        table.update(
            store.LOCATOR.key(trace_id=trace_id),
            "SET experiment_id = :e, entity_type = :t, info_time = :r",
            values={":e": experiment_id, ":t": store.LOCATOR.name, ":r": 1_700_000_000_000},
        )
    started = time.monotonic()
    client.link_traces_to_run(trace_ids, run)
    assert run_links.LINK_WAIT_SECONDS <= time.monotonic() - started < 3 * run_links.LINK_WAIT_SECONDS
    assert _names(experiment_id, run) == []
    info = {
        "trace_id": trace_ids[0],
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": experiment_id}},
        "request_time": "2023-11-14T22:13:20Z",
        "state": "OK",
        "tags": {"mlflow.traceName": "retried"},
    }
    requests.post(f"{server}/api/3.0/mlflow/traces", json={"trace": {"trace_info": info}}, timeout=30).raise_for_status()
    assert _names(experiment_id, run) == ["retried"]
