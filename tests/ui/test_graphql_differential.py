"""``/graphql`` answers the UI's operations as MLflow's graphene schema does.

The queries are the ones the installed UI bundle sends (read from the wheel's JavaScript, with the
``__typename`` fields Apollo adds to every selection set), run against our local runtime and against
MLflow's own Flask app over SqlAlchemyStore (sqlite) holding the same data; ids, times and artifact
locations are the only values allowed to differ.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path
from typing import Any

import pytest
import requests

from serverless_mlflow.http.static_files import wheel_build_dir
from tests.conftest import unique
from tests.runs.conftest import reference_client

pytestmark = pytest.mark.e2e

OPERATIONS = ("MlflowGetExperimentQuery", "GetRun", "SearchRuns", "GetMetricHistoryBulkInterval")


def bundle_query(name: str) -> str:
    """The operation's text as the UI bundle holds it, with Apollo's ``__typename`` additions."""
    for path in sorted((wheel_build_dir() / "static" / "js").glob("*.js")):
        text = path.read_text(encoding="utf-8", errors="replace")
        found = re.search(r"(query " + name + r"\b[^`]*)`", text)
        if found:
            query = found.group(1).replace("\\n", "\n")
            first = query.index("{")
            # Apollo adds __typename to every selection set except the operation's own.
            return query[: first + 1] + re.sub(r"\{(?!\s*__typename)", "{ __typename", query[first + 1 :])
    raise AssertionError(f"the UI bundle has no operation {name}")


def test_bundle_sends_the_operations_we_answer() -> None:
    for name in OPERATIONS:
        assert "__typename" in bundle_query(name)


def _data(client: Any, suffix: str) -> dict[str, str]:
    experiment_id = client.create_experiment(f"gql-{suffix}", tags={"team": "ui", "mlflow.note.content": "notes"})
    run = client.create_run(experiment_id, run_name="gql-run", tags={"kind": "test"})
    run_id = run.info.run_id
    client.log_param(run_id, "alpha", "0.5")
    for step in range(7):
        client.log_metric(run_id, "loss", 1.0 / (step + 1), step=step, timestamp=1_000 + step)
    client.log_metric(run_id, "odd", float("nan"), step=0, timestamp=2_000)
    client.set_terminated(run_id, end_time=9_999_999)
    name = f"gql-model-{suffix}"
    client.create_registered_model(name)
    client.create_model_version(name, f"{run.info.artifact_uri}/model", run_id=run_id)
    return {"experiment_id": experiment_id, "run_id": run_id}


@pytest.fixture(scope="module")
def pair(server: str) -> dict[str, Any]:
    import mlflow

    reference = reference_client()
    suffix = unique("g")
    ours = _data(mlflow.MlflowClient(server, registry_uri=server), suffix)
    store_uri = os.environ["_MLFLOW_SERVER_FILE_STORE"]
    theirs = _data(mlflow.MlflowClient(tracking_uri=store_uri, registry_uri=store_uri), suffix)
    return {"server": server, "reference": reference, "ours": ours, "theirs": theirs}


# Values that differ between two stores holding the same data.
_VOLATILE = {
    "runUuid",
    "runId",
    "experimentId",
    "artifactUri",
    "artifactLocation",
    "startTime",
    "lastUpdateTime",
    "creationTime",
    "creationTimestamp",
    "source",
    "userId",
}


def _normalize(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: ("<volatile>" if k in _VOLATILE and v not in (None, "", "0") else _normalize(v, ids)) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalize(v, ids) for v in value]
    if isinstance(value, str):
        for real, placeholder in ids.items():
            value = value.replace(real, placeholder)
    return value


def _sorted_lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_lists(v) for k, v in value.items()}
    if isinstance(value, list):
        return sorted((_sorted_lists(v) for v in value), key=lambda v: json.dumps(v, sort_keys=True))
    return value


def _ask_both(pair: dict[str, Any], query: str, variables_of: Any, operation: str | None) -> tuple[Any, Any]:
    ours_body = {"query": query, "variables": variables_of(pair["ours"]), "operationName": operation}
    theirs_body = {"query": query, "variables": variables_of(pair["theirs"]), "operationName": operation}
    ours = requests.post(f"{pair['server']}/graphql", json=ours_body, timeout=30)
    theirs = pair["reference"].post("/graphql", json=theirs_body)
    assert ours.status_code == theirs.status_code == 200
    return (
        _sorted_lists(_normalize(ours.json(), {pair["ours"]["run_id"]: "<run>"})),
        _sorted_lists(_normalize(json.loads(theirs.data), {pair["theirs"]["run_id"]: "<run>"})),
    )


CASES = {
    "MlflowGetExperimentQuery": lambda ids: {"input": {"experimentId": ids["experiment_id"]}},
    "GetRun": lambda ids: {"data": {"runId": ids["run_id"]}},
    "SearchRuns": lambda ids: {"data": {"experimentIds": [ids["experiment_id"]], "filter": "params.alpha = '0.5'"}},
    "GetMetricHistoryBulkInterval": lambda ids: {"data": {"runIds": [ids["run_id"]], "metricKey": "loss", "maxResults": 3}},
}


@pytest.mark.parametrize("operation", OPERATIONS)
def test_ui_operation_answers_like_mlflow(pair: dict[str, Any], operation: str) -> None:
    ours, theirs = _ask_both(pair, bundle_query(operation), CASES[operation], operation)
    assert ours["errors"] is None
    assert ours == theirs


@pytest.mark.parametrize(
    ("operation", "variables"),
    [
        ("GetRun", lambda ids: {"data": {"runId": "0" * 32}}),
        ("MlflowGetExperimentQuery", lambda ids: {"input": {"experimentId": "99999999"}}),
        ("SearchRuns", lambda ids: {"data": {"experimentIds": [ids["experiment_id"]], "filter": "bad filter ==="}}),
        ("GetMetricHistoryBulkInterval", lambda ids: {"data": {"runIds": [ids["run_id"]], "metricKey": "odd", "maxResults": 5}}),
    ],
    ids=["missing-run", "missing-experiment", "bad-filter", "nan-metric"],
)
def test_failures_and_nan_answer_like_mlflow(pair: dict[str, Any], operation: str, variables: Any) -> None:
    ours, theirs = _ask_both(pair, bundle_query(operation), variables, operation)
    assert ours == theirs
    assert ours["errors"], ours


def test_hand_written_queries_answer_like_mlflow(pair: dict[str, Any]) -> None:
    query = """
      query Two($id: String = "0") {
        first: mlflowGetExperiment(input: {experimentId: $id}) { experiment { name ...Tags } }
        __typename
      }
      fragment Tags on MlflowExperiment { tags { key value } ... on MlflowExperiment { stage: lifecycleStage } }
    """
    ours, theirs = _ask_both(pair, query, lambda ids: {"id": ids["experiment_id"]}, "Two")
    assert ours == theirs and ours["data"]["first"]["experiment"]["name"].startswith("gql-")
    broken_queries = ("{ mlflowGetExperiment(input: {}) { nope } }", "{ notAField }", "{ __typename f: __typename @skip(if: true) }")
    for broken in broken_queries:
        ours, theirs = _ask_both(pair, broken, lambda ids: None, None)
        assert ours["data"] is theirs["data"] is None and ours["errors"] and theirs["errors"], broken


def test_a_query_that_does_not_parse_is_a_graphql_error_not_a_500(server: str) -> None:
    # MLflow's server lets graphql-core's syntax error escape (HTTP 500); here it is a GraphQL error.
    for broken in ("query {", "{ a(b: ) }", 'query Q { x(s: "unterminated) }', "", "fragment F on T { a }"):
        answer = requests.post(f"{server}/graphql", json={"query": broken}, timeout=30)
        assert answer.status_code == 200 and answer.json()["data"] is None and answer.json()["errors"], broken


def test_nan_metric_values_are_null_in_run_data(pair: dict[str, Any]) -> None:
    ours, _ = _ask_both(pair, bundle_query("GetRun"), CASES["GetRun"], "GetRun")
    metrics = {m["key"]: m["value"] for m in ours["data"]["mlflowGetRun"]["run"]["data"]["metrics"]}
    assert metrics["odd"] is None and math.isclose(metrics["loss"], 1 / 7)


def test_graphql_over_get_and_ajax_free_paths(pair: dict[str, Any]) -> None:
    query = "query Q($input: MlflowGetExperimentInput!) { mlflowGetExperiment(input: $input) { experiment { name } } }"
    variables = json.dumps({"input": {"experimentId": pair["ours"]["experiment_id"]}})
    answer = requests.get(f"{pair['server']}/graphql", params={"query": query, "variables": variables}, timeout=30).json()
    assert answer["data"]["mlflowGetExperiment"]["experiment"]["name"].startswith("gql-")
    assert Path(wheel_build_dir()).is_dir()


def _logged_files_and_inputs(client: Any, suffix: str, tmp: Path) -> dict[str, str]:
    from mlflow.entities import Dataset, DatasetInput, InputTag

    experiment_id = client.create_experiment(f"gql-files-{suffix}")
    run_id = client.create_run(experiment_id).info.run_id
    file_path = tmp / "test.txt"
    file_path.write_text("hello world")
    client.log_artifact(run_id, str(file_path))
    client.log_artifact(run_id, str(file_path), "testDir")
    context = [InputTag(key="mlflow.data.context", value="training")]
    inputs = [
        DatasetInput(Dataset(name="name1", digest="digest1", source_type="local", source="{}"), tags=context),
        DatasetInput(Dataset(name="name2", digest="digest2", source_type="local", source="{}")),
    ]
    client.log_inputs(run_id, inputs)
    return {"experiment_id": experiment_id, "run_id": run_id}


@pytest.fixture(scope="module")
def files_pair(server: str, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import mlflow

    reference = reference_client()
    suffix = unique("f")
    ours = _logged_files_and_inputs(mlflow.MlflowClient(server), suffix, tmp_path_factory.mktemp("ours"))
    store_uri = os.environ["_MLFLOW_SERVER_FILE_STORE"]
    theirs = _logged_files_and_inputs(mlflow.MlflowClient(tracking_uri=store_uri), suffix, tmp_path_factory.mktemp("theirs"))
    return {"server": server, "reference": reference, "ours": ours, "theirs": theirs}


def test_list_artifacts_answers_like_mlflow(files_pair: dict[str, Any]) -> None:
    # MLflow's test_list_artifacts_graphql (tests/tracking/test_rest_tracking.py), plus the fields it leaves out.
    query = """
      fragment FilesFragment on MlflowListArtifactsResponse { files { path isDir fileSize __typename } }
      query testQuery($runId: String, $uuid: String) {
        file: mlflowListArtifacts(input: { runId: $runId }) { ...FilesFragment rootUri nextPageToken apiError { code } __typename }
        subdir: mlflowListArtifacts(input: { runUuid: $uuid, path: "testDir" }) { ...FilesFragment }
        missing: mlflowListArtifacts(input: { runId: $runId, path: "nothing/here" }) { files { path } }
      }
    """
    ours, theirs = _ask_both(files_pair, query, lambda ids: {"runId": ids["run_id"], "uuid": ids["run_id"]}, "testQuery")
    ours_data, theirs_data = ours["data"], theirs["data"]
    # The roots differ by store (mlflow-artifacts: here, a local directory there); both end in the run's path.
    for data, ids in ((ours_data, files_pair["ours"]), (theirs_data, files_pair["theirs"])):
        assert data["file"].pop("rootUri").endswith(f"/{ids['experiment_id']}/<run>/artifacts")
    assert ours == theirs and ours["errors"] is None
    # In MLflow's order (by path): asked again without the comparison's list sorting.
    body = {"query": query, "variables": {"runId": files_pair["ours"]["run_id"], "uuid": files_pair["ours"]["run_id"]}}
    ours_data = requests.post(f"{files_pair['server']}/graphql", json=body, timeout=30).json()["data"]
    assert ours_data["file"]["files"] == [
        {"path": "test.txt", "isDir": False, "fileSize": "11", "__typename": "MlflowFileInfo"},
        {"path": "testDir", "isDir": True, "fileSize": "0", "__typename": "MlflowFileInfo"},
    ]
    assert ours_data["subdir"]["files"] == [{"path": "testDir/test.txt", "isDir": False, "fileSize": "11", "__typename": "MlflowFileInfo"}]
    assert ours_data["missing"] == {"files": []}


@pytest.mark.parametrize(
    "variables",
    [
        lambda ids: {"runId": "0" * 32, "path": None},
        lambda ids: {"runId": ids["run_id"], "path": "../outside"},
        lambda ids: {"runId": None, "path": None},
    ],
    ids=["missing-run", "bad-path", "no-run-id"],
)
def test_list_artifacts_failures_answer_like_mlflow(files_pair: dict[str, Any], variables: Any) -> None:
    query = "query Q($runId: String, $path: String) { mlflowListArtifacts(input: {runId: $runId, path: $path}) { files { path } } }"
    ours, theirs = _ask_both(files_pair, query, variables, "Q")
    assert ours == theirs and ours["data"] == {"mlflowListArtifacts": None} and ours["errors"], ours


def test_search_datasets_answers_like_mlflow(files_pair: dict[str, Any]) -> None:
    query = """
      mutation SearchDatasets($ids: [String]) {
        mlflowSearchDatasets(input: { experimentIds: $ids }) {
          datasetSummaries { experimentId name digest context __typename } apiError { code } __typename
        }
      }
    """
    ours, theirs = _ask_both(files_pair, query, lambda ids: {"ids": [ids["experiment_id"]]}, "SearchDatasets")
    assert ours == theirs and ours["errors"] is None
    names = {(s["name"], s["context"]) for s in ours["data"]["mlflowSearchDatasets"]["datasetSummaries"]}
    assert names == {("name1", "training"), ("name2", "")}
    for variables in ({"ids": []}, {"ids": ["not-a-number"]}, {"ids": [str(i) for i in range(21)]}):
        ours, theirs = _ask_both(files_pair, query, lambda ids, v=variables: v, "SearchDatasets")
        assert ours == theirs and ours["data"] == {"mlflowSearchDatasets": None} and ours["errors"], variables
