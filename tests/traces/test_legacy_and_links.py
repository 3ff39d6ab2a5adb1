"""Traces whose spans live in a traces.json artifact (older clients) still read; traces link to runs."""

from __future__ import annotations

import json
import tempfile
import uuid
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import TraceData, TraceInfo, TraceLocation, TraceState
from mlflow.exceptions import MlflowException
from mlflow.store.artifact.artifact_repository_registry import get_artifact_repository
from packaging.version import Version

from tests.conftest import unique

pytestmark = pytest.mark.usefixtures("tracing")


def test_trace_with_spans_in_a_traces_json_artifact_reads_back(server: str, reference_uri: str) -> None:
    # Spans as an older client leaves them: logged against another store, then carried over as traces.json.
    mlflow.set_tracking_uri(reference_uri)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("source")))

    @mlflow.trace(name="legacy")
    def legacy(x: int) -> int:
        with mlflow.start_span(name="inner") as span:
            span.set_outputs(x)
        return x

    legacy(7)
    source = MlflowClient(reference_uri).get_trace(mlflow.get_last_active_trace_id())

    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("legacy"))
    trace_id = "tr-" + uuid.uuid4().hex
    store = MlflowClient(server)._tracing_client.store
    info = store.start_trace(
        TraceInfo(
            trace_id=trace_id,
            trace_location=TraceLocation.from_experiment_id(experiment_id),
            request_time=source.info.request_time,
            execution_duration=source.info.execution_duration,
            state=TraceState.OK,
            tags={"mlflow.traceName": "legacy"},
        )
    )
    # No span reached the store: the info does not claim them, and points at its artifact location.
    assert "mlflow.trace.spansLocation" not in info.tags
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory, "traces.json")
        path.write_text(json.dumps(source.data.to_dict()))
        get_artifact_repository(info.tags["mlflow.artifactLocation"]).log_artifact(str(path))

    fetched = MlflowClient().get_trace(trace_id)
    assert sorted(s.name for s in fetched.data.spans) == ["inner", "legacy"]
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    assert [(t.info.trace_id, len(t.data.spans)) for t in listed] == [(trace_id, 2)]
    # The UI's trace-data download is sent to the artifact that holds the spans.
    import requests

    artifact = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": trace_id}, timeout=30)
    assert artifact.status_code == 200
    assert sorted(span["name"] for span in artifact.json()["spans"]) == ["inner", "legacy"]


@pytest.mark.skipif(Version(mlflow.__version__) >= Version("3.18"), reason="3.18 sends the file name to mpu/create")
def test_the_3_17_clients_multipart_trace_data_upload_fails_in_the_client_and_its_path_as_text_is_served(
    server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A trace whose spans did not all arrive (a batch given up after 429s) gets no spans tag, so the client uploads
    traces.json. Under ``MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE=0`` 3.17 writes it to a temporary ``Path`` and
    puts that object into mpu/create's JSON body: the encoder refuses it inside the client, before any request is
    sent. The same upload with the path as text is served by our mpu routes; below 4 MiB the documented setting
    PUTs it through the API."""
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("fallback"))
    tracing = MlflowClient(server)._tracing_client
    data = json.dumps({"spans": []})

    def partial_trace() -> TraceInfo:
        info = TraceInfo(
            trace_id="tr-" + uuid.uuid4().hex,
            trace_location=TraceLocation.from_experiment_id(experiment_id),
            request_time=1_700_000_000_000,
            state=TraceState.OK,
        )
        return tracing.store.start_trace(info)

    monkeypatch.setenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", "0")
    info = partial_trace()
    repo = get_artifact_repository(info.tags["mlflow.artifactLocation"])
    with pytest.raises(MlflowException, match="Object of type PosixPath is not JSON serializable") as refused:
        repo.upload_trace_data(data)
    assert "mpu/create" in str(refused.value)
    with tempfile.TemporaryDirectory() as directory:  # the same file, its local path as text: served by multipart
        path = Path(directory, "traces.json")
        path.write_text(data)
        repo.log_artifact(str(path))
    assert tracing._download_trace_data(info).to_dict() == {"spans": []}

    monkeypatch.setenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", "4194304")  # README's setting for 3.17 clients
    info = partial_trace()
    tracing._upload_trace_data(info, TraceData(spans=[]))
    assert tracing._download_trace_data(info).to_dict() == {"spans": []}


def _linked(uri: str) -> dict[str, object]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("links"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def f(x: int) -> int:
        return x

    with mlflow.start_run() as run:
        f(1)
    in_run = mlflow.get_last_active_trace_id()
    f(2)
    outside = mlflow.get_last_active_trace_id()
    f(3)
    client = MlflowClient(uri)
    with mlflow.start_run() as other:
        pass
    client.link_traces_to_run([outside], other.info.run_id)
    first = mlflow.search_traces(locations=[experiment_id], run_id=run.info.run_id, return_type="list")
    second = mlflow.search_traces(locations=[experiment_id], run_id=other.info.run_id, return_type="list")
    return {
        "first": [t.info.trace_id == in_run for t in first],
        "second": [t.info.trace_id == outside for t in second],
    }


def test_link_traces_to_run_matches_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _linked(server)
    assert ours == _linked(reference_uri)
    assert ours == {"first": [True], "second": [True]}


def test_get_trace_artifact_answers_the_trace_data_the_client_reads(server: str) -> None:
    import requests

    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("artifact")))

    @mlflow.trace(span_type="LLM")
    def answer(question: str) -> dict:
        with mlflow.start_span(name="lookup") as span:
            span.set_attribute("hits", [1, 2, 3])
            span.add_event(mlflow.entities.SpanEvent(name="cache-miss", attributes={"key": "q"}))
        return {"answer": question.upper(), "score": 0.5}

    answer("why")
    trace_id = mlflow.get_last_active_trace_id()
    response = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": trace_id}, timeout=30)
    assert response.status_code == 200
    served = response.json()["spans"]
    expected = MlflowClient().get_trace(trace_id).data.to_dict()["spans"]
    # The 3.17 client's span dicts, plus 3.18's "kind" (tests/clients/core checks it against 3.18's own to_dict).
    assert {s["kind"] for s in served} == {"SPAN_KIND_INTERNAL"}
    served = [{k: v for k, v in s.items() if k != "kind"} for s in served]
    assert sorted(served, key=lambda s: s["name"]) == sorted(expected, key=lambda s: s["name"])

    missing = requests.get(f"{server}/ajax-api/2.0/mlflow/get-trace-artifact", timeout=30)
    assert (missing.status_code, missing.json()["error_code"]) == (400, "BAD_REQUEST")


def _prompts_linked(uri: str, prompt: str) -> dict[str, object]:
    """Two traces linked to prompt versions with the client's call, then found by MLflow's prompt filter."""
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    client = MlflowClient(uri, registry_uri=uri)
    experiment_id = mlflow.create_experiment(unique("prompts"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def f(x: int) -> int:
        return x

    f(1)
    first = mlflow.get_last_active_trace_id()
    f(2)
    second = mlflow.get_last_active_trace_id()
    client.register_prompt(name=prompt, template="Hello {{name}}")
    client.register_prompt(name=prompt, template="Hi {{name}}")
    v1, v2 = client.get_prompt_version(prompt, "1"), client.get_prompt_version(prompt, "2")
    client.link_prompt_versions_to_trace([v1, v2], first)
    client.link_prompt_versions_to_trace([v1], first)  # linked once, whatever the retries
    client.link_prompt_versions_to_trace([v2], second)
    names = {first: "first", second: "second"}

    def found(filter_string: str) -> list[str]:
        traces = mlflow.search_traces(locations=[experiment_id], filter_string=filter_string, return_type="list")
        return sorted(names.get(t.info.trace_id, "other") for t in traces)

    def refused(filter_string: str) -> str:
        with pytest.raises(mlflow.MlflowException) as error:
            found(filter_string)
        # Over REST the client puts the error code in front of the message.
        return error.value.message.removeprefix("INVALID_PARAMETER_VALUE: ")

    return {
        "tags": {names[t]: client.get_trace(t).info.tags.get("mlflow.linkedPrompts") for t in (first, second)},
        "v1": found(f'prompt = "{prompt}/1"'),
        "v2": found(f"prompt = '{prompt}/2'"),
        "v2 as a tag": found(f'tags.`mlflow.linkedPrompts` = "{prompt}/2"'),
        "v2 and a name": found(f'prompt = "{prompt}/2" AND name = "f"'),
        "unknown": found('prompt = "nope/1"'),
        "errors": [refused(f'prompt != "{prompt}/1"'), refused(f'prompt LIKE "{prompt}%"'), refused(f'prompt = "{prompt}"')],
    }


def test_link_prompts_to_trace_matches_sqlalchemy_store(server: str, reference_uri: str) -> None:
    prompt = unique("linked-prompt")
    ours = _prompts_linked(server, prompt)
    assert ours == _prompts_linked(reference_uri, prompt)
    assert ours["v1"] == ["first"] and ours["v2"] == ours["v2 and a name"] == ["first", "second"] and ours["unknown"] == []
    assert json.loads(ours["tags"]["first"]) == [{"name": prompt, "version": "1"}, {"name": prompt, "version": "2"}]


LINK_PROMPTS = "/api/2.0/mlflow/traces/link-prompts"


@pytest.mark.parametrize(
    "body",
    [
        {"prompt_versions": [{"name": "p", "version": "1"}]},
        {"trace_id": "tr-" + "0" * 32},
        {"trace_id": 5, "prompt_versions": []},
        {"trace_id": "tr-x", "prompt_versions": "p/1"},
        {"trace_id": "tr-" + "0" * 32, "prompt_versions": [{"name": "p", "version": "1"}]},
        {"trace_id": "tr-" + "0" * 32, "prompt_versions": []},
    ],
    ids=["no-trace-id", "no-versions", "int-trace-id", "versions-not-a-list", "unknown-trace", "nothing-to-link"],
)
def test_link_prompts_answers_like_mlflow(server: str, body: dict[str, object]) -> None:
    import requests

    from tests.mlflow_reference import reference_server

    ours = requests.post(f"{server}{LINK_PROMPTS}", json=body, timeout=30)
    theirs = requests.post(f"{reference_server().url}{LINK_PROMPTS}", json=body, timeout=30)
    assert ours.status_code == theirs.status_code
    assert ours.json() == theirs.json()


def test_link_prompts_refuses_what_mlflow_fails_on(server: str) -> None:
    # MLflow's handler reads the version with int() and its protobuf parse refuses a number: both answer 500 there.
    import requests

    mlflow.set_tracking_uri(server)
    mlflow.set_experiment(experiment_id=mlflow.create_experiment(unique("prompt-errors")))

    @mlflow.trace
    def f() -> int:
        return 1

    f()
    trace_id = mlflow.get_last_active_trace_id()
    for version in ("abc", None, 1):
        ref = {"name": "p", **({"version": version} if version is not None else {})}
        answer = requests.post(f"{server}{LINK_PROMPTS}", json={"trace_id": trace_id, "prompt_versions": [ref]}, timeout=30)
        assert answer.status_code == 400 and answer.json()["error_code"] == "INVALID_PARAMETER_VALUE", (version, answer.text)
    assert (
        mlflow.search_traces(locations=[mlflow.get_trace(trace_id).info.experiment_id], filter_string='prompt = "p/0"', return_type="list")
        == []
    )
