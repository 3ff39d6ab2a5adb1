"""The end-to-end core every supported mlflow client must pass against our server.

Runs under the client's own interpreter (``build/clients/<version>/bin/python -m pytest``, started by
``tests/clients/test_client_matrix.py``), with ``MLFLOW_TRACKING_URI`` pointing at a local runtime. Only mlflow,
its dependencies and pytest are importable here. What a version lacks (GenAI datasets before 3.4, v3 traces
before 3.0) is chosen by the client's version, as a user of that version would write it.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import Metric, Param, RunTag
from packaging.version import Version

VERSION = Version(mlflow.__version__)
URI = os.environ["MLFLOW_TRACKING_URI"]


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client() -> MlflowClient:
    mlflow.set_tracking_uri(URI)
    mlflow.set_registry_uri(URI)
    return MlflowClient(URI, registry_uri=URI)


@pytest.fixture
def experiment_id(client: MlflowClient) -> str:
    experiment_id = client.create_experiment(unique("core"))
    mlflow.set_experiment(experiment_id=experiment_id)
    return experiment_id


# --- tracking ---------------------------------------------------------------------------------------


def test_runs_metrics_params_tags(client: MlflowClient, experiment_id: str) -> None:
    with mlflow.start_run(run_name="core") as run:
        mlflow.log_param("lr", "0.01")
        mlflow.log_params({"layers": 3, "act": "relu"})
        for step in range(3):
            mlflow.log_metric("loss", 1.0 / (step + 1), step=step)
        mlflow.set_tag("team", "core")
    client.log_batch(run.info.run_id, metrics=[Metric("acc", 0.9, 1, 0)], params=[Param("opt", "adam")], tags=[RunTag("t", "v")])
    fetched = client.get_run(run.info.run_id)
    assert fetched.info.status == "FINISHED" and fetched.info.run_name == "core"
    assert fetched.data.params == {"lr": "0.01", "layers": "3", "act": "relu", "opt": "adam"}
    assert fetched.data.metrics == {"loss": pytest.approx(1 / 3), "acc": 0.9}
    assert {"team": "core", "t": "v"}.items() <= fetched.data.tags.items()
    assert [m.value for m in client.get_metric_history(run.info.run_id, "loss")] == pytest.approx([1.0, 0.5, 1 / 3])
    found = client.search_runs([experiment_id], "params.lr = '0.01' and metrics.loss < 0.5", order_by=["metrics.acc DESC"])
    assert [r.info.run_id for r in found] == [run.info.run_id]
    client.delete_run(run.info.run_id)
    assert client.search_runs([experiment_id]) == []


def test_experiments(client: MlflowClient) -> None:
    name = unique("exp")
    experiment_id = client.create_experiment(name, tags={"k": "v"})
    assert client.get_experiment_by_name(name).experiment_id == experiment_id
    client.rename_experiment(experiment_id, name + "-renamed")
    assert client.get_experiment(experiment_id).name == name + "-renamed"
    assert experiment_id in {e.experiment_id for e in client.search_experiments(filter_string=f"name = '{name}-renamed'")}
    client.delete_experiment(experiment_id)
    assert client.get_experiment(experiment_id).lifecycle_stage == "deleted"


def test_dataset_inputs(client: MlflowClient, experiment_id: str) -> None:
    import pandas as pd

    dataset = mlflow.data.from_pandas(pd.DataFrame({"x": [1, 2], "y": [3, 4]}), name="train-data", targets="y")
    with mlflow.start_run() as run:
        mlflow.log_input(dataset, context="training")
    inputs = client.get_run(run.info.run_id).inputs.dataset_inputs
    assert [(i.dataset.name, i.dataset.digest, i.tags[0].value) for i in inputs] == [("train-data", dataset.digest, "training")]


# --- artifacts --------------------------------------------------------------------------------------


def test_artifacts(client: MlflowClient, experiment_id: str, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.csv").write_text("a,b\n1,2\n")
    with mlflow.start_run() as run:
        mlflow.log_artifact(str(tmp_path / "notes.txt"))
        mlflow.log_artifacts(str(tmp_path / "sub"), artifact_path="sub")
        mlflow.log_dict({"k": 1}, "config.json")
    listed = sorted(a.path for a in client.list_artifacts(run.info.run_id))
    assert listed == ["config.json", "notes.txt", "sub"]
    assert [a.path for a in client.list_artifacts(run.info.run_id, "sub")] == ["sub/data.csv"]
    local = Path(mlflow.artifacts.download_artifacts(run_id=run.info.run_id, dst_path=str(tmp_path / "down")))
    assert (local / "notes.txt").read_text() == "hello"
    assert (local / "sub" / "data.csv").read_text() == "a,b\n1,2\n"
    assert mlflow.artifacts.load_dict(f"runs:/{run.info.run_id}/config.json") == {"k": 1}


# --- registry ---------------------------------------------------------------------------------------


class AddN(mlflow.pyfunc.PythonModel):
    def __init__(self, n: int) -> None:
        self.n = n

    def predict(self, context, model_input, params=None):  # type: ignore[no-untyped-def]
        return model_input + self.n


def test_log_register_load_model(client: MlflowClient, experiment_id: str) -> None:
    import pandas as pd

    name = unique("model")
    with mlflow.start_run():
        if VERSION.major >= 3:
            info = mlflow.pyfunc.log_model(name="model", python_model=AddN(2), registered_model_name=name)
        else:
            info = mlflow.pyfunc.log_model(artifact_path="model", python_model=AddN(2), registered_model_name=name)
    version = client.get_latest_versions(name)[0] if VERSION.major < 3 else client.search_model_versions(f"name = '{name}'")[0]
    assert version.version == "1" and info.model_uri
    client.set_registered_model_alias(name, "champion", "1")
    assert client.get_model_version_by_alias(name, "champion").version == "1"
    client.set_model_version_tag(name, "1", "validated", "yes")
    assert client.get_model_version(name, "1").tags == {"validated": "yes"}
    model = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    assert model.predict(pd.DataFrame({"x": [1, 2]}))["x"].tolist() == [3, 4]
    assert [m.name for m in client.search_registered_models(f"name = '{name}'")] == [name]
    client.delete_registered_model(name)
    assert client.search_registered_models(f"name = '{name}'") == []


# --- prompt registry ----------------------------------------------------------------------------------


def test_prompts(client: MlflowClient) -> None:
    # mlflow.register_prompt/load_prompt/set_prompt_alias exist from 2.21 on (3.x keeps them beside mlflow.genai's).
    name = unique("prompt")
    first = mlflow.register_prompt(name=name, template="Hello {{name}}!", commit_message="first")
    second = mlflow.register_prompt(name=name, template="Hi {{name}}, {{mood}}?")
    assert (int(first.version), int(second.version)) == (1, 2)
    mlflow.set_prompt_alias(name=name, alias="prod", version=1)
    by_alias = mlflow.load_prompt(f"prompts:/{name}@prod")
    assert (int(by_alias.version), by_alias.template) == (1, "Hello {{name}}!")
    assert by_alias.format(name="you") == "Hello you!"
    assert mlflow.load_prompt(f"prompts:/{name}/2").template == "Hi {{name}}, {{mood}}?"
    if VERSION.major >= 3:
        assert [p.name for p in mlflow.genai.search_prompts(filter_string=f"name = '{name}'")] == [name]
        # A prompt is no model: the registry's model search leaves it out.
        assert name not in {m.name for m in client.search_registered_models(filter_string=f"name = '{name}'")}


# --- traces -----------------------------------------------------------------------------------------


def test_traces(client: MlflowClient, experiment_id: str) -> None:
    @mlflow.trace(name="outer")
    def outer(x: int) -> int:
        return inner(x) + 1

    @mlflow.trace
    def inner(x: int) -> int:
        return x * 2

    assert outer(3) == 7
    # The harness turns async trace export off (MLFLOW_ENABLE_ASYNC_TRACE_LOGGING=false): the trace is sent.
    traces = client.search_traces(experiment_ids=[experiment_id])
    assert len(traces) == 1
    trace = traces[0]
    assert sorted(span.name for span in trace.data.spans) == ["inner", "outer"]
    root = next(span for span in trace.data.spans if span.parent_id is None)
    assert root.inputs == {"x": 3} and root.outputs == 7
    trace_id = trace.info.trace_id if VERSION.major >= 3 else trace.info.request_id
    client.set_trace_tag(trace_id, "reviewed", "yes")
    fetched = client.get_trace(trace_id)
    assert fetched.info.tags["reviewed"] == "yes"
    assert str(fetched.info.status if VERSION.major < 3 else fetched.info.state).endswith("OK")


@pytest.mark.skipif(VERSION < Version("3.10"), reason="trace metrics (traces/metrics) arrived in 3.10")
def test_trace_metrics(client: MlflowClient, experiment_id: str) -> None:
    from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType

    for name in ("a", "a", "b"):
        with mlflow.start_span(name=name) as span:
            span.set_inputs({"x": 1})
    store = client._tracing_client.store

    def query(metric: str, aggregation: str, dimensions: list[str] | None = None) -> list[tuple[dict, dict]]:
        points = store.query_trace_metrics(
            experiment_ids=[experiment_id],
            view_type=MetricViewType.TRACES,
            metric_name=metric,
            aggregations=[MetricAggregation(aggregation_type=AggregationType(aggregation))],
            dimensions=dimensions,
        )
        return sorted(((p.dimensions, p.values) for p in points), key=repr)

    assert query("trace_count", "COUNT") == [({}, {"COUNT": 3.0})]
    assert query("trace_count", "COUNT", ["trace_name"]) == [({"trace_name": "a"}, {"COUNT": 2.0}), ({"trace_name": "b"}, {"COUNT": 1.0})]
    [(dimensions, values)] = query("latency", "MAX")
    assert dimensions == {} and values["MAX"] >= 0


# --- AI gateway configuration (3.10+) ----------------------------------------------------------------


@pytest.mark.skipif(VERSION < Version("3.10"), reason="the AI gateway's configuration routes arrived in 3.10")
def test_gateway_configuration(client: MlflowClient) -> None:
    from mlflow.entities import GatewayEndpointModelConfig, GatewayModelLinkageType

    store = client._tracking_client.store
    secret = store.create_gateway_secret(secret_name=unique("key"), secret_value={"api_key": "sk-core-0123456789"}, provider="openai")
    model = store.create_gateway_model_definition(
        name=unique("model"), secret_id=secret.secret_id, provider="openai", model_name="gpt-4o-mini"
    )
    config = GatewayEndpointModelConfig(model_definition_id=model.model_definition_id, linkage_type=GatewayModelLinkageType.PRIMARY)
    endpoint = store.create_gateway_endpoint(name=unique("endpoint"), model_configs=[config])
    fetched = store.get_gateway_endpoint(name=endpoint.name)
    assert fetched.endpoint_id == endpoint.endpoint_id
    assert [m.model_definition_id for m in fetched.model_mappings] == [model.model_definition_id]
    assert endpoint.endpoint_id in {e.endpoint_id for e in store.list_gateway_endpoints()}
    store.delete_gateway_endpoint(endpoint.endpoint_id)
    store.delete_gateway_model_definition(model.model_definition_id)
    store.delete_gateway_secret(secret.secret_id)
    assert secret.secret_id not in {s.secret_id for s in store.list_secret_infos()}


@pytest.mark.skipif(VERSION < Version("3.17"), reason="trace attachments arrived in 3.17")
def test_trace_attachment(client: MlflowClient, experiment_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A binary span input goes up beside the trace and the UI's download (get-trace-artifact?path=) serves it."""
    import requests
    from mlflow.tracing.attachments import Attachment

    if VERSION < Version("3.18"):
        # 3.17 sends the local file (a PosixPath for an attachment) as mpu/create's "path", which its JSON encoder
        # refuses: the README's 3.17 note, files below 4 MiB PUT through the API instead. 3.18 sends the basename.
        monkeypatch.setenv("MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE", "4194304")
    picture = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8
    with mlflow.start_span(name="look") as span:
        span.set_inputs({"image": Attachment(content_type="image/png", content_bytes=picture)})
    parsed = Attachment.parse_ref(client.get_trace(span.trace_id).data.spans[0].inputs["image"])
    assert parsed is not None and parsed["content_type"] == "image/png"
    params = {"request_id": span.trace_id, "path": parsed["attachment_id"]}
    response = requests.get(f"{URI}/ajax-api/2.0/mlflow/get-trace-artifact", params=params, timeout=30)
    assert (response.status_code, response.content) == (200, picture)


# --- GenAI evaluation datasets (3.4+) ---------------------------------------------------------------


@pytest.mark.skipif(VERSION < Version("3.4"), reason="mlflow.genai.datasets arrived in 3.4")
def test_genai_datasets(experiment_id: str) -> None:
    from mlflow.genai.datasets import create_dataset, get_dataset, search_datasets

    name = unique("ds")
    dataset = create_dataset(name=name, experiment_id=[experiment_id], tags={"stage": "dev"})
    dataset.merge_records([{"inputs": {"q": "1+1"}, "expectations": {"a": "2"}}, {"inputs": {"q": "2+2"}, "expectations": {"a": "4"}}])
    fetched = get_dataset(dataset_id=dataset.dataset_id)
    records = fetched.to_df()
    assert sorted(r["q"] for r in records["inputs"]) == ["1+1", "2+2"]
    assert [d.dataset_id for d in search_datasets(experiment_ids=[experiment_id])] == [dataset.dataset_id]


@pytest.mark.skipif(VERSION < Version("3.4"), reason="make_judge and the scorer registry's REST routes arrived in 3.4")
def test_registered_judges(experiment_id: str) -> None:
    from mlflow.genai.judges import make_judge
    from mlflow.genai.scorers import delete_scorer, get_scorer, list_scorers

    name = unique("judge")
    instructions = "Is the answer in {{ outputs }} polite? Answer yes or no."
    judge = make_judge(name=name, instructions=instructions, model="openai:/gpt-4o-mini")
    judge.register(experiment_id=experiment_id)
    make_judge(name=name, instructions=instructions + " Be strict.", model="openai:/gpt-4o-mini").register(experiment_id=experiment_id)
    assert get_scorer(name=name, experiment_id=experiment_id).instructions == instructions + " Be strict."
    assert get_scorer(name=name, experiment_id=experiment_id, version=1).instructions == instructions
    assert [s.name for s in list_scorers(experiment_id=experiment_id)] == [name]
    delete_scorer(name=name, experiment_id=experiment_id, version="all")
    assert list_scorers(experiment_id=experiment_id) == []


@pytest.mark.skipif(VERSION.major < 3, reason="2.x clients keep span data in traces.json, which get-trace-artifact redirects to")
def test_get_trace_artifact_is_this_clients_span_dicts(client: MlflowClient, experiment_id: str) -> None:
    """The UI's trace-data download: exactly what this client's ``TraceData.to_dict`` makes of the trace (3.18 adds
    each span's ``kind`` and real ``links``; older clients read the keys they know)."""
    import requests

    with mlflow.start_span(name="first") as first:
        pass
    linked = VERSION >= Version("3.18")
    with mlflow.start_span(name="second", span_type="LLM") as second:
        if linked:
            from mlflow.entities import Link

            second.add_link(Link(trace_id=first.trace_id, span_id=first.span_id, attributes={"why": "retry", "n": 2}))
    expected = client.get_trace(second.trace_id).data.to_dict()["spans"]
    assert len(expected) == 1
    response = requests.get(f"{URI}/ajax-api/2.0/mlflow/get-trace-artifact", params={"request_id": second.trace_id}, timeout=30)
    assert response.status_code == 200
    served = response.json()["spans"]
    # The answer is read by the bundled (3.18) UI, in 3.18's shape. Clients before 3.5 also wrote "trace_state" and an
    # empty parent_span_id for a root span ("" where newer ones write null), as MLflow's newer servers do not either.
    older_only = {"trace_state"}

    def shape(span: dict) -> dict:
        return {k: (v or None if k == "parent_span_id" else v) for k, v in span.items() if k not in older_only}

    assert [{k: v for k, v in shape(span).items() if k in want} for span, want in zip(served, expected, strict=True)] == [
        shape(want) for want in expected
    ]
    if linked:
        assert served[0]["kind"] == "SPAN_KIND_INTERNAL"
        assert served[0]["links"] == [{"trace_id": first.trace_id, "span_id": first.span_id, "attributes": {"why": "retry", "n": 2}}]


@pytest.mark.skipif(VERSION < Version("3.18"), reason="issue-detection schedules arrived in 3.18")
def test_issue_schedule_state_is_this_clients_own_arithmetic(client: MlflowClient, experiment_id: str) -> None:
    """``issues/schedule/state`` after the dialog saves a schedule: the answer and the state tag are what this client's
    own ``mlflow.genai.discovery.schedule`` makes of the stored tags at the moment of the save (the server's clock is
    bounded by the request: re-anchoring records that moment)."""
    import json
    import time

    import requests
    from mlflow.genai.discovery import schedule

    def sync() -> tuple[int | None, int, int]:
        before = int(time.time() * 1000)
        response = requests.post(f"{URI}/ajax-api/3.0/mlflow/issues/schedule/state", json={"experiment_id": experiment_id}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["next_fire_time_ms"], before, int(time.time() * 1000)

    assert sync()[0] is None
    saved = {"version": 1, "cadence": "weekly", "timezone": "Europe/Berlin", "paused": False, "fireTime": "16:45", "weekday": 3}
    for edit in ({}, {"cadence": "daily", "fireTime": "7:15"}, {"cadence": "hourly", "timezone": "Asia/Kolkata"}):
        saved = {**saved, **edit}
        client.set_experiment_tag(experiment_id, schedule.MLFLOW_ISSUE_DETECTION_SCHEDULE, json.dumps(saved))
        answer, before, after = sync()
        stored = client.get_experiment(experiment_id).tags[schedule.MLFLOW_ISSUE_DETECTION_SCHEDULE_STATE]
        state = schedule.parse_detection_schedule_state(stored)
        assert state is not None and before <= state.last_fire_time_ms <= after
        parsed = schedule.read_detection_schedule(client.get_experiment(experiment_id))
        assert parsed is not None
        assert stored == schedule.claim_first_occurrence(state.last_fire_time_ms, parsed).to_json()
        assert answer == state.next_fire_time_ms == schedule.next_fire_time_ms(parsed, state.last_fire_time_ms)
        # Saved again unchanged: the state stays as it is.
        assert sync()[0] == answer
        assert client.get_experiment(experiment_id).tags[schedule.MLFLOW_ISSUE_DETECTION_SCHEDULE_STATE] == stored
