"""How to build a request for every route of ``routes.ROUTES``, with every field that names a resource declared.

``SHAPES`` maps a route key (``"METHOD /path"``) to a ``Shape``: the request's id-bearing fields, each with the
kind of resource it names (``ids``), and ``build``, which turns the value chosen for each field into the
request (path parameters, query or JSON body, headers, raw body). ``test_every_route`` builds each request
once with gbob's own resources in every field, then once per field with galice's resource in that field
(the others still gbob's): gbob must be refused, or answered exactly as MLflow's basic-auth app answers.

``NO_RESOURCE_ID`` lists the routes whose requests name no per-user resource, each with the reason. A route in
neither table fails the test until someone declares how its ids are built.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from serverless_mlflow.request.routes import ROUTES

# Kinds of resource a field can name (``test_every_route.World`` creates each for each user).
EXPERIMENT = "experiment"  # id
EXPERIMENT_NAME = "experiment_name"
EXPERIMENT_LOCATION = "experiment_location"  # its artifact location (mlflow-artifacts:/<id>)
RUN = "run"  # id
RUN_SOURCE = "run_source"  # (run id, an artifact URI inside the run): a model version source
LOGGED_MODEL = "logged_model"  # id
MODEL = "model"  # registered model name (version 1 exists, alias "champ")
TRACE = "trace"  # trace id
TRACE_HEX = "trace_hex"  # the trace's OpenTelemetry id (32 hex)
ASSESSMENT = "assessment"  # (trace id, assessment id)
DATASET = "dataset"  # evaluation dataset id (linked to the user's experiment)
RECORD = "record"  # a record id of that dataset
SCORER = "scorer"  # (experiment id, scorer name)
SCORER_ID = "scorer_id"  # with an online scoring config
USER = "user"  # username
ARTIFACT = "artifact"  # proxied path <experiment>/<run>/artifacts/f.txt of an uploaded file
S3_SOURCE = "s3_source"  # s3://<this stack's bucket>/mlartifacts/<experiment>/<run>/artifacts/model
LABEL_SCHEMA = "label_schema"  # schema id (in the user's experiment)
REVIEW_QUEUE = "review_queue"  # queue id (in the user's experiment, the user assigned, the user's trace an item)
ISSUE = "issue"  # issue id (in the user's experiment)

M2, M3, ART = "/api/2.0/mlflow", "/api/3.0/mlflow", "/api/2.0/mlflow-artifacts"
AJAX2, AJAX3 = "/ajax-api/2.0/mlflow", "/ajax-api/3.0/mlflow"


@dataclass(frozen=True)
class Call:
    path: dict[str, str] = field(default_factory=dict)  # path parameters
    params: Any = None  # the query (GET, or beside a raw body) or the JSON body (other methods)
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None  # sent as the body instead of ``params``


V = dict[str, Any]  # field -> the value of the resource chosen for it


@dataclass(frozen=True)
class Shape:
    ids: dict[str, str]  # field -> kind
    build: Callable[[V], Call]
    # The request changes or removes what it names: gbob's own resources for it are made for this route alone.
    fresh: bool = False
    # Admin-only route: gbob is refused on his own resources too.
    admin_only: bool = False
    # GraphQL: root fields (by alias) that read a field's resource; a refused one must answer null.
    graphql_fields: dict[str, str] = field(default_factory=dict)
    # MLflow's answer is no reference (why); ours must then refuse or null every field naming galice's.
    mlflow_broken: str | None = None
    # A hole MLflow leaves open that this project closes (what MLflow does): ours must refuse every variant.
    closes: str | None = None


def _q(**params: Any) -> Callable[[V], Call]:
    """A GET query or JSON body of constant values and fields: ``key=field`` takes ``v[field]``."""
    return lambda v: Call(
        params={key: (v[value[1:]] if isinstance(value, str) and value.startswith("$") else value) for key, value in params.items()}
    )


def _metric(v: V) -> dict[str, Any]:
    return {"key": "m", "value": 1.0, "timestamp": 1, "step": 0}


def _version(v: V, **extra: Any) -> dict[str, Any]:
    return {"name": v["name"], "version": "1", **extra}


_GQL_RUN = "{{ run {{ info {{ runName }} data {{ params {{ key value }} }} }} }}"
_GQL = (
    "query Q($e: String, $runs: [String]) {{ "
    'r: mlflowGetRun(input: {{runId: "{run}"}}) ' + _GQL_RUN + " "
    "e: mlflowGetExperiment(input: {{experimentId: $e}}) {{ experiment {{ name }} }} "
    's: mlflowSearchRuns(input: {{experimentIds: ["{search}"]}}) {{ runs {{ info {{ runName }} }} }} '
    'h: mlflowGetMetricHistoryBulkInterval(input: {{runIds: $runs, metricKey: "m"}}) {{ metrics {{ key value }} }} '
    'a: mlflowListArtifacts(input: {{runId: "{artifacts}"}}) {{ files {{ path isDir }} }} }}'
)


def _graphql_body(v: V) -> dict[str, Any]:
    query = _GQL.format(run=v["run"], search=v["search"], artifacts=v["artifacts"])
    return {"query": query, "variables": {"e": v["experiment"], "runs": [v["runs"]]}}


_GRAPHQL_IDS = {"run": RUN, "experiment": EXPERIMENT, "search": EXPERIMENT, "runs": RUN, "artifacts": RUN}
_GRAPHQL_FIELDS = {"run": "r", "experiment": "e", "search": "s", "runs": "h", "artifacts": "a"}


def _otlp(v: V) -> Call:
    span = {
        "traceId": v["trace"],
        "spanId": "00f067aa0ba902b7",
        "name": "span",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
    }
    body = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}).encode()
    return Call(headers={"Content-Type": "application/json", "x-mlflow-experiment-id": v["experiment"]}, raw=body)


def _start_trace(v: V) -> Call:
    info = {
        "trace_id": v["trace"],
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": v["experiment"]}},
        "request_time": "2024-01-01T00:00:00Z",
        "execution_duration": "1s",
        "state": "OK",
    }
    return Call(params={"trace": {"trace_info": info}})


def _grant(v: V, kind: str) -> dict[str, Any]:
    """gbob grants galice READ on the resource (his own, or hers in a variant)."""
    return {"username": v["alice"], "resource_type": kind, "resource_id": v["resource"], "permission": "READ"}


def _new_name(v: V, name_field: str) -> str:
    """A create naming galice's existing name (a variant), or a new name next to gbob's (his own request)."""
    return v[name_field] if v[f"owner:{name_field}"] == "alice" else f"{v[name_field]}-{v['unique']}"


SHAPES: dict[str, Shape] = {
    # --- experiments ----------------------------------------------------------------------------------
    "POST /api/2.0/mlflow/experiments/create": Shape(
        {"name": EXPERIMENT_NAME, "location": EXPERIMENT_LOCATION},
        lambda v: Call(params={"name": _new_name(v, "name"), "artifact_location": v["location"]}),
    ),
    "GET /api/2.0/mlflow/experiments/get": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "GET /api/2.0/mlflow/experiments/get-by-name": Shape({"name": EXPERIMENT_NAME}, _q(experiment_name="$name")),
    "POST /api/2.0/mlflow/experiments/search": Shape({"name": EXPERIMENT_NAME}, lambda v: Call(params={"filter": f"name = '{v['name']}'"})),
    "GET /api/2.0/mlflow/experiments/search": Shape({"name": EXPERIMENT_NAME}, lambda v: Call(params={"filter": f"name = '{v['name']}'"})),
    "POST /api/2.0/mlflow/experiments/update": Shape(
        {"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id", new_name="renamed-by-bob"), fresh=True
    ),
    "POST /api/2.0/mlflow/experiments/delete": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id"), fresh=True),
    "POST /api/2.0/mlflow/experiments/restore": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id"), fresh=True),
    "POST /api/2.0/mlflow/experiments/set-experiment-tag": Shape(
        {"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id", key="k", value="bob")
    ),
    "POST /api/2.0/mlflow/experiments/delete-experiment-tag": Shape(
        {"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id", key="k"), fresh=True
    ),
    # --- runs -----------------------------------------------------------------------------------------
    "POST /api/2.0/mlflow/runs/create": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "POST /api/2.0/mlflow/runs/update": Shape({"run_id": RUN}, _q(run_id="$run_id", run_name="renamed-by-bob")),
    "POST /api/2.0/mlflow/runs/delete": Shape({"run_id": RUN}, _q(run_id="$run_id"), fresh=True),
    "POST /api/2.0/mlflow/runs/restore": Shape({"run_id": RUN}, _q(run_id="$run_id"), fresh=True),
    "GET /api/2.0/mlflow/runs/get": Shape({"run_id": RUN}, _q(run_id="$run_id")),
    "POST /api/2.0/mlflow/runs/search": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    "POST /api/2.0/mlflow/runs/log-metric": Shape(
        {"run_id": RUN, "model_id": LOGGED_MODEL}, lambda v: Call(params={"run_id": v["run_id"], **_metric(v), "model_id": v["model_id"]})
    ),
    "POST /api/2.0/mlflow/runs/log-parameter": Shape({"run_id": RUN}, _q(run_id="$run_id", key="p-bob", value="1")),
    "POST /api/2.0/mlflow/runs/set-tag": Shape({"run_id": RUN}, _q(run_id="$run_id", key="t", value="bob")),
    "POST /api/2.0/mlflow/runs/delete-tag": Shape({"run_id": RUN}, _q(run_id="$run_id", key="t"), fresh=True),
    "POST /api/2.0/mlflow/runs/log-batch": Shape(
        {"run_id": RUN, "model_id": LOGGED_MODEL},
        lambda v: Call(params={"run_id": v["run_id"], "metrics": [{**_metric(v), "model_id": v["model_id"]}]}),
    ),
    "POST /api/2.0/mlflow/runs/log-inputs": Shape(
        {"run_id": RUN, "model_id": LOGGED_MODEL}, lambda v: Call(params={"run_id": v["run_id"], "models": [{"model_id": v["model_id"]}]})
    ),
    "POST /api/2.0/mlflow/runs/outputs": Shape(
        {"run_id": RUN, "model_id": LOGGED_MODEL},
        lambda v: Call(params={"run_id": v["run_id"], "models": [{"model_id": v["model_id"], "step": 0}]}),
    ),
    "POST /api/2.0/mlflow/runs/log-model": Shape(
        {"run_id": RUN},
        lambda v: Call(
            params={
                "run_id": v["run_id"],
                "model_json": json.dumps(
                    {"artifact_path": "m", "flavors": {}, "utc_time_created": "2024-01-01 00:00:00.000000", "run_id": v["run_id"]}
                ),
            }
        ),
    ),
    "GET /api/2.0/mlflow/metrics/get-history": Shape({"run_id": RUN}, _q(run_id="$run_id", metric_key="m")),
    "GET /api/2.0/mlflow/metrics/get-history-bulk-interval": Shape(
        {"run_id": RUN}, lambda v: Call(params={"run_ids": [v["run_id"]], "metric_key": "m"})
    ),
    "GET /ajax-api/2.0/mlflow/metrics/get-history-bulk": Shape(
        {"run_id": RUN}, lambda v: Call(params={"run_id": [v["run_id"]], "metric_key": "m"})
    ),
    "POST /ajax-api/2.0/mlflow/experiments/search-datasets": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    # Fresh: gbob's experiment then holds exactly the run the answers show (MLflow's answer is compared whole).
    "POST /graphql": Shape(_GRAPHQL_IDS, lambda v: Call(params=_graphql_body(v)), fresh=True, graphql_fields=_GRAPHQL_FIELDS),
    "GET /graphql": Shape(
        _GRAPHQL_IDS,
        lambda v: Call(params={**_graphql_body(v), "variables": json.dumps(_graphql_body(v)["variables"])}),
        fresh=True,
        graphql_fields=_GRAPHQL_FIELDS,
        mlflow_broken="MLflow's /graphql reads a JSON body only: a GET answers 500",
    ),
    # --- logged models --------------------------------------------------------------------------------
    "POST /api/2.0/mlflow/logged-models": Shape(
        {"experiment_id": EXPERIMENT, "source_run_id": RUN}, _q(experiment_id="$experiment_id", source_run_id="$source_run_id")
    ),
    "POST /api/2.0/mlflow/logged-models/search": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    "GET /api/2.0/mlflow/logged-models/{model_id}": Shape({"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"]})),
    "PATCH /api/2.0/mlflow/logged-models/{model_id}": Shape(
        {"model_id": LOGGED_MODEL},
        lambda v: Call(path={"model_id": v["model_id"]}, params={"model_id": v["model_id"], "status": "LOGGED_MODEL_READY"}),
    ),
    "DELETE /api/2.0/mlflow/logged-models/{model_id}": Shape(
        {"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"]}), fresh=True
    ),
    "PATCH /api/2.0/mlflow/logged-models/{model_id}/tags": Shape(
        {"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"]}, params={"tags": [{"key": "t", "value": "bob"}]})
    ),
    "DELETE /api/2.0/mlflow/logged-models/{model_id}/tags/{tag_key}": Shape(
        {"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"], "tag_key": "t"}), fresh=True
    ),
    "POST /api/2.0/mlflow/logged-models/{model_id}/params": Shape(
        {"model_id": LOGGED_MODEL},
        lambda v: Call(path={"model_id": v["model_id"]}, params={"model_id": v["model_id"], "params": [{"key": "p-bob", "value": "1"}]}),
    ),
    # --- model registry -------------------------------------------------------------------------------
    "POST /api/2.0/mlflow/registered-models/create": Shape({"name": MODEL}, lambda v: Call(params={"name": _new_name(v, "name")})),
    "POST /api/2.0/mlflow/registered-models/rename": Shape(
        {"name": MODEL}, lambda v: Call(params={"name": v["name"], "new_name": v["name"] + "-renamed"}), fresh=True
    ),
    "PATCH /api/2.0/mlflow/registered-models/update": Shape({"name": MODEL}, _q(name="$name", description="by bob")),
    "DELETE /api/2.0/mlflow/registered-models/delete": Shape({"name": MODEL}, _q(name="$name"), fresh=True),
    "GET /api/2.0/mlflow/registered-models/get": Shape({"name": MODEL}, _q(name="$name")),
    "GET /api/2.0/mlflow/registered-models/search": Shape({"name": MODEL}, lambda v: Call(params={"filter": f"name = '{v['name']}'"})),
    "POST /api/2.0/mlflow/registered-models/get-latest-versions": Shape({"name": MODEL}, _q(name="$name")),
    "GET /api/2.0/mlflow/registered-models/get-latest-versions": Shape({"name": MODEL}, _q(name="$name")),
    "POST /api/2.0/mlflow/registered-models/set-tag": Shape({"name": MODEL}, _q(name="$name", key="k", value="bob")),
    "DELETE /api/2.0/mlflow/registered-models/delete-tag": Shape({"name": MODEL}, _q(name="$name", key="k"), fresh=True),
    "POST /api/2.0/mlflow/registered-models/alias": Shape({"name": MODEL}, _q(name="$name", alias="bob", version="1")),
    "DELETE /api/2.0/mlflow/registered-models/alias": Shape({"name": MODEL}, _q(name="$name", alias="champ"), fresh=True),
    "GET /api/2.0/mlflow/registered-models/alias": Shape({"name": MODEL}, _q(name="$name", alias="champ")),
    "POST /api/2.0/mlflow/model-versions/create": Shape(
        {"name": MODEL, "run": RUN_SOURCE}, lambda v: Call(params={"name": v["name"], "source": v["run"][1], "run_id": v["run"][0]})
    ),
    # The same route with the sources MLflow checks by URI alone (no run_id / model_id), and S3 (MLflow: none).
    "POST /api/2.0/mlflow/model-versions/create#models-uri": Shape(
        {"name": MODEL, "model_id": LOGGED_MODEL},
        lambda v: Call(params={"name": v["name"], "source": f"models:/{v['model_id']}", "model_id": v["model_id"]}),
    ),
    "POST /api/2.0/mlflow/model-versions/create#copy": Shape(
        {"name": MODEL, "from": MODEL}, lambda v: Call(params={"name": v["name"], "source": f"models:/{v['from']}/1"})
    ),
    "POST /api/2.0/mlflow/model-versions/create#s3": Shape(
        {"name": MODEL, "s3": S3_SOURCE},
        lambda v: Call(params={"name": v["name"], "source": v["s3"]}),
        closes="MLflow accepts any s3:// source unchecked: gbob's version would point its readers at galice's files",
    ),
    "PATCH /api/2.0/mlflow/model-versions/update": Shape({"name": MODEL}, lambda v: Call(params=_version(v, description="by bob"))),
    "POST /api/2.0/mlflow/model-versions/transition-stage": Shape(
        {"name": MODEL}, lambda v: Call(params=_version(v, stage="Staging", archive_existing_versions=False))
    ),
    "DELETE /api/2.0/mlflow/model-versions/delete": Shape({"name": MODEL}, lambda v: Call(params=_version(v)), fresh=True),
    "GET /api/2.0/mlflow/model-versions/get": Shape({"name": MODEL}, lambda v: Call(params=_version(v))),
    "GET /api/2.0/mlflow/model-versions/search": Shape({"run_id": RUN}, lambda v: Call(params={"filter": f"run_id = '{v['run_id']}'"})),
    "GET /api/2.0/mlflow/model-versions/get-download-uri": Shape({"name": MODEL}, lambda v: Call(params=_version(v))),
    "POST /api/2.0/mlflow/model-versions/set-tag": Shape({"name": MODEL}, lambda v: Call(params=_version(v, key="k", value="bob"))),
    "DELETE /api/2.0/mlflow/model-versions/delete-tag": Shape({"name": MODEL}, lambda v: Call(params=_version(v, key="k")), fresh=True),
    # --- GenAI evaluation -----------------------------------------------------------------------------
    "POST /api/3.0/mlflow/datasets/create": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"name": "bob-data", "experiment_ids": [v["experiment_id"]]})
    ),
    "POST /api/3.0/mlflow/datasets/search": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    "GET /api/3.0/mlflow/datasets/search": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    "GET /api/3.0/mlflow/datasets/{dataset_id}": Shape({"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"]})),
    "DELETE /api/3.0/mlflow/datasets/{dataset_id}": Shape(
        {"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"]}), fresh=True
    ),
    "PATCH /api/3.0/mlflow/datasets/{dataset_id}/tags": Shape(
        {"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"]}, params={"tags": json.dumps({"k": "bob"})})
    ),
    "DELETE /api/3.0/mlflow/datasets/{dataset_id}/tags/{key}": Shape(
        {"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"], "key": "k"}), fresh=True
    ),
    "POST /api/3.0/mlflow/datasets/{dataset_id}/records": Shape(
        {"dataset_id": DATASET},
        lambda v: Call(
            path={"dataset_id": v["dataset_id"]}, params={"records": json.dumps([{"inputs": {"q": "bob"}, "expectations": {"a": 1}}])}
        ),
    ),
    "GET /api/3.0/mlflow/datasets/{dataset_id}/records": Shape(
        {"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"]})
    ),
    "DELETE /api/3.0/mlflow/datasets/{dataset_id}/records": Shape(
        {"dataset_id": DATASET, "record": RECORD},
        lambda v: Call(path={"dataset_id": v["dataset_id"]}, params={"dataset_record_ids": [v["record"]]}),
        fresh=True,
    ),
    "GET /api/3.0/mlflow/datasets/{dataset_id}/experiment-ids": Shape(
        {"dataset_id": DATASET}, lambda v: Call(path={"dataset_id": v["dataset_id"]})
    ),
    "POST /api/3.0/mlflow/datasets/{dataset_id}/add-experiments": Shape(
        {"dataset_id": DATASET, "experiment_id": EXPERIMENT},
        lambda v: Call(path={"dataset_id": v["dataset_id"]}, params={"experiment_ids": [v["experiment_id"]]}),
        fresh=True,
    ),
    "POST /api/3.0/mlflow/datasets/{dataset_id}/remove-experiments": Shape(
        {"dataset_id": DATASET, "experiment_id": EXPERIMENT},
        lambda v: Call(path={"dataset_id": v["dataset_id"]}, params={"experiment_ids": [v["experiment_id"]]}),
        fresh=True,
    ),
    "POST /api/3.0/mlflow/scorers/register": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(
            params={"experiment_id": v["experiment_id"], "name": "bob-scorer", "serialized_scorer": json.dumps({"name": "bob-scorer"})}
        ),
    ),
    "GET /api/3.0/mlflow/scorers/list": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "GET /api/3.0/mlflow/scorers/list#across": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})
    ),
    "GET /api/3.0/mlflow/scorers/versions": Shape(
        {"scorer": SCORER}, lambda v: Call(params={"experiment_id": v["scorer"][0], "name": v["scorer"][1]})
    ),
    "GET /api/3.0/mlflow/scorers/get": Shape(
        {"scorer": SCORER}, lambda v: Call(params={"experiment_id": v["scorer"][0], "name": v["scorer"][1]})
    ),
    "DELETE /api/3.0/mlflow/scorers/delete": Shape(
        {"scorer": SCORER}, lambda v: Call(params={"experiment_id": v["scorer"][0], "name": v["scorer"][1]}), fresh=True
    ),
    "GET /api/3.0/mlflow/scorers/online-configs": Shape({"scorer_id": SCORER_ID}, lambda v: Call(params={"scorer_ids": [v["scorer_id"]]})),
    "PUT /api/3.0/mlflow/scorers/online-config": Shape(
        {"scorer": SCORER}, lambda v: Call(params={"experiment_id": v["scorer"][0], "name": v["scorer"][1], "sample_rate": 0})
    ),
    # --- users and permissions ------------------------------------------------------------------------
    "POST /api/2.0/mlflow/users/create": Shape(
        {"username": USER}, lambda v: Call(params={"username": v["username"], "password": "some-password-1"}), admin_only=True
    ),
    "GET /api/2.0/mlflow/users/get": Shape({"username": USER}, _q(username="$username")),
    "PATCH /api/2.0/mlflow/users/update-password": Shape(
        {"username": USER}, lambda v: Call(params={"username": v["username"], "password": "x" * 14})
    ),
    "PATCH /api/2.0/mlflow/users/update-admin": Shape({"username": USER}, _q(username="$username", is_admin=False), admin_only=True),
    "DELETE /api/2.0/mlflow/users/delete": Shape({"username": USER}, _q(username="$username"), admin_only=True),
    "POST /api/3.0/mlflow/users/permissions/grant": Shape({"resource": EXPERIMENT}, lambda v: Call(params=_grant(v, "experiment"))),
    "POST /api/3.0/mlflow/users/permissions/grant#model": Shape({"resource": MODEL}, lambda v: Call(params=_grant(v, "registered_model"))),
    "POST /api/3.0/mlflow/users/permissions/revoke": Shape(
        {"resource": EXPERIMENT},
        lambda v: Call(params={"username": v["alice"], "resource_type": "experiment", "resource_id": v["resource"]}),
    ),
    "GET /api/3.0/mlflow/users/permissions/get": Shape(
        {"username": USER}, lambda v: Call(params={"username": v["username"], "resource_type": "experiment", "resource_id": "0"})
    ),
    "GET /api/3.0/mlflow/users/permissions/list": Shape({"username": USER}, _q(username="$username")),
    "GET /api/3.0/mlflow/users/roles/list": Shape({"username": USER}, _q(username="$username")),
    # --- traces ---------------------------------------------------------------------------------------
    "POST /v1/traces": Shape(
        {"experiment": EXPERIMENT, "trace": TRACE_HEX}, _otlp, closes="MLflow appends spans to galice's trace from gbob's experiment"
    ),
    "POST /api/3.0/mlflow/traces": Shape(
        {"experiment": EXPERIMENT, "trace": TRACE}, _start_trace, closes="MLflow moves galice's trace into gbob's experiment"
    ),
    "GET /api/3.0/mlflow/traces/{trace_id}": Shape({"trace_id": TRACE}, lambda v: Call(path={"trace_id": v["trace_id"]})),
    "GET /api/3.0/mlflow/traces/get": Shape({"trace_id": TRACE}, _q(trace_id="$trace_id")),
    "GET /api/3.0/mlflow/traces/batchGet": Shape({"trace_id": TRACE}, lambda v: Call(params={"trace_ids": [v["trace_id"]]})),
    "POST /api/3.0/mlflow/traces/batchGetInfos": Shape({"trace_id": TRACE}, lambda v: Call(params={"trace_ids": [v["trace_id"]]})),
    "POST /api/3.0/mlflow/traces/search": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(params={"locations": [{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": v["experiment_id"]}}]}),
    ),
    "PATCH /api/3.0/mlflow/traces/{trace_id}/tags": Shape(
        {"trace_id": TRACE}, lambda v: Call(path={"trace_id": v["trace_id"]}, params={"key": "k", "value": "bob"})
    ),
    "DELETE /api/3.0/mlflow/traces/{trace_id}/tags": Shape(
        {"trace_id": TRACE}, lambda v: Call(path={"trace_id": v["trace_id"]}, params={"key": "k"}), fresh=True
    ),
    "POST /api/3.0/mlflow/traces/delete-traces": Shape(
        {"experiment_id": EXPERIMENT, "trace_id": TRACE},
        lambda v: Call(params={"experiment_id": v["experiment_id"], "request_ids": [v["trace_id"]]}),
        fresh=True,
    ),
    "POST /api/3.0/mlflow/traces/{trace_id}/assessments": Shape(
        {"trace_id": TRACE},
        lambda v: Call(path={"trace_id": v["trace_id"]}, params={"assessment": {"assessment_name": "bob", "feedback": {"value": 1}}}),
    ),
    "GET /api/3.0/mlflow/traces/{trace_id}/assessments/{assessment_id}": Shape(
        {"assessment": ASSESSMENT}, lambda v: Call(path={"trace_id": v["assessment"][0], "assessment_id": v["assessment"][1]})
    ),
    "PATCH /api/3.0/mlflow/traces/{trace_id}/assessments/{assessment_id}": Shape(
        {"assessment": ASSESSMENT},
        lambda v: Call(
            path={"trace_id": v["assessment"][0], "assessment_id": v["assessment"][1]},
            params={"assessment": {"assessment_name": "renamed-by-bob"}, "update_mask": "assessmentName"},
        ),
    ),
    "DELETE /api/3.0/mlflow/traces/{trace_id}/assessments/{assessment_id}": Shape(
        {"assessment": ASSESSMENT}, lambda v: Call(path={"trace_id": v["assessment"][0], "assessment_id": v["assessment"][1]}), fresh=True
    ),
    "GET /api/2.0/mlflow/traces": Shape({"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_ids": [v["experiment_id"]]})),
    # mlflow 2.x's StartTrace / EndTrace (v2): the experiment it starts in, the trace it ends.
    "POST /api/2.0/mlflow/traces": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(params={"experiment_id": v["experiment_id"], "timestamp_ms": 1700000000000, "request_metadata": [], "tags": []}),
    ),
    "PATCH /api/2.0/mlflow/traces/{request_id}": Shape(
        {"trace_id": TRACE},
        lambda v: Call(path={"request_id": v["trace_id"]}, params={"timestamp_ms": 1700000001000, "status": "OK"}),
        fresh=True,
    ),
    "GET /api/2.0/mlflow/traces/{request_id}/info": Shape({"trace_id": TRACE}, lambda v: Call(path={"request_id": v["trace_id"]})),
    "PATCH /api/2.0/mlflow/traces/{request_id}/tags": Shape(
        {"trace_id": TRACE}, lambda v: Call(path={"request_id": v["trace_id"]}, params={"key": "k", "value": "bob"})
    ),
    "DELETE /api/2.0/mlflow/traces/{request_id}/tags": Shape(
        {"trace_id": TRACE}, lambda v: Call(path={"request_id": v["trace_id"]}, params={"key": "k"}), fresh=True
    ),
    "POST /api/2.0/mlflow/traces/delete-traces": Shape(
        {"experiment_id": EXPERIMENT, "trace_id": TRACE},
        lambda v: Call(params={"experiment_id": v["experiment_id"], "request_ids": [v["trace_id"]]}),
        fresh=True,
    ),
    "POST /api/2.0/mlflow/traces/link-to-run": Shape(
        {"trace_id": TRACE, "run_id": RUN}, lambda v: Call(params={"trace_ids": [v["trace_id"]], "run_id": v["run_id"]})
    ),
    # Prompt versions are named, not checked (MLflow's validate_can_update_trace_by_trace_id judges the trace only).
    "POST /api/2.0/mlflow/traces/link-prompts": Shape(
        {"trace_id": TRACE}, lambda v: Call(params={"trace_id": v["trace_id"], "prompt_versions": [{"name": "bob-prompt", "version": "1"}]})
    ),
    "GET /ajax-api/2.0/mlflow/get-trace-artifact": Shape({"trace_id": TRACE}, _q(request_id="$trace_id")),
    "GET /ajax-api/3.0/mlflow/get-trace-artifact": Shape({"trace_id": TRACE}, _q(request_id="$trace_id")),
    # --- artifacts ------------------------------------------------------------------------------------
    "GET /api/2.0/mlflow/artifacts/list": Shape({"run_id": RUN}, _q(run_id="$run_id")),
    # Presigned URLs for a run's (or a logged model's) artifacts: MLflow refuses proxied storage (every location here).
    "POST /api/2.0/mlflow/artifacts/presigned-upload-url": Shape({"run_id": RUN}, _q(run_id="$run_id", path="f.txt")),
    "POST /api/2.0/mlflow/artifacts/presigned-upload-url#model": Shape({"model_id": LOGGED_MODEL}, _q(model_id="$model_id", path="f.txt")),
    "POST /api/2.0/mlflow/artifacts/presigned-download-url": Shape({"run_id": RUN}, _q(run_id="$run_id", path="f.txt")),
    "GET /api/2.0/mlflow/logged-models/{model_id}/artifacts/directories": Shape(
        {"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"]})
    ),
    "GET /api/2.0/mlflow-artifacts/artifacts": Shape({"path": ARTIFACT}, lambda v: Call(params={"path": v["path"].rsplit("/", 1)[0]})),
    "GET /api/2.0/mlflow-artifacts/artifacts/{path+}": Shape({"path": ARTIFACT}, lambda v: Call(path={"path": v["path"]})),
    "PUT /api/2.0/mlflow-artifacts/artifacts/{path+}": Shape(
        {"path": ARTIFACT}, lambda v: Call(path={"path": v["path"] + ".bob"}, raw=b"bob")
    ),
    "DELETE /api/2.0/mlflow-artifacts/artifacts/{path+}": Shape({"path": ARTIFACT}, lambda v: Call(path={"path": v["path"]}), fresh=True),
    "POST /api/2.0/mlflow-artifacts/mpu/create/{path+}": Shape(
        {"path": ARTIFACT}, lambda v: Call(path={"path": v["path"] + ".mpu"}, params={"path": v["path"] + ".mpu", "num_parts": 1})
    ),
    "POST /api/2.0/mlflow-artifacts/mpu/complete/{path+}": Shape(
        {"path": ARTIFACT},
        lambda v: Call(path={"path": v["path"] + ".mpu"}, params={"path": v["path"] + ".mpu", "upload_id": "x", "parts": []}),
    ),
    "POST /api/2.0/mlflow-artifacts/mpu/abort/{path+}": Shape(
        {"path": ARTIFACT}, lambda v: Call(path={"path": v["path"] + ".mpu"}, params={"path": v["path"] + ".mpu", "upload_id": "x"})
    ),
    "GET /api/2.0/mlflow-artifacts/presigned/{path+}": Shape({"path": ARTIFACT}, lambda v: Call(path={"path": v["path"]})),
    # The prompt engineering UI's run: created in the experiment named (validate_can_create_promptlab_run).
    "POST /ajax-api/2.0/mlflow/runs/create-promptlab-run": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(
            params={
                "experiment_id": v["experiment_id"],
                "prompt_template": "Say {{ a }}",
                "prompt_parameters": [{"key": "a", "value": "hi"}],
                "model_route": "chat",
                "model_input": "Say hi",
                "mlflow_version": "3.17.2",
            }
        ),
    ),
    # The UI's one-request upload: the run in the query, the file as the body (validate_can_update_run_artifact).
    "POST /ajax-api/2.0/mlflow/upload-artifact": Shape(
        {"run_id": RUN}, lambda v: Call(params={"run_uuid": v["run_id"], "path": "bob.json"}, raw=b'{"by": "bob"}')
    ),
    "GET /get-artifact": Shape({"run_id": RUN}, _q(run_id="$run_id", path="f.txt")),
    "GET /model-versions/get-artifact": Shape(
        {"name": MODEL}, lambda v: Call(params={"name": v["name"], "version": "1", "path": "MLmodel"})
    ),
    "GET /ajax-api/2.0/mlflow/logged-models/{model_id}/artifacts/files": Shape(
        {"model_id": LOGGED_MODEL}, lambda v: Call(path={"model_id": v["model_id"]}, params={"artifact_file_path": "MLmodel"})
    ),
    # --- trace metrics (the experiment Overview's charts) -----------------------------------------------
    "POST /api/3.0/mlflow/traces/metrics": Shape(
        {"experiment_ids": EXPERIMENT},
        lambda v: Call(
            params={
                "experiment_ids": [v["experiment_ids"]],
                "view_type": "TRACES",
                "metric_name": "trace_count",
                "aggregations": [{"aggregation_type": "COUNT"}],
            }
        ),
    ),
    "POST /api/3.0/mlflow/traces/calculate-filter-correlation": Shape(
        {"experiment_ids": EXPERIMENT},
        lambda v: Call(
            params={"experiment_ids": [v["experiment_ids"]], "filter_string1": "status = 'OK'", "filter_string2": "status = 'ERROR'"}
        ),
    ),
    # --- GenAI review: label schemas, review queues, issues ----------------------------------------------
    "POST /api/3.0/mlflow/label-schemas/create": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(params={"experiment_id": v["experiment_id"], "name": f"q-{v['unique']}", "type": "FEEDBACK", "input": {"text": {}}}),
    ),
    "GET /api/3.0/mlflow/label-schemas/get": Shape({"schema_id": LABEL_SCHEMA}, _q(schema_id="$schema_id")),
    "GET /api/3.0/mlflow/label-schemas/get-by-name": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id", name="q")),
    "GET /api/3.0/mlflow/label-schemas/list": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "PATCH /api/3.0/mlflow/label-schemas/update": Shape({"schema_id": LABEL_SCHEMA}, _q(schema_id="$schema_id", instruction="i")),
    "DELETE /api/3.0/mlflow/label-schemas/delete": Shape({"schema_id": LABEL_SCHEMA}, _q(schema_id="$schema_id"), fresh=True),
    "POST /api/3.0/mlflow/review-queues/create": Shape(
        {"experiment_id": EXPERIMENT},
        lambda v: Call(params={"experiment_id": v["experiment_id"], "name": f"rq-{v['unique']}", "queue_type": "CUSTOM"}),
    ),
    "POST /api/3.0/mlflow/review-queues/get-or-create-user": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_id": v["experiment_id"], "user": f"u-{v['unique']}"})
    ),
    "GET /api/3.0/mlflow/review-queues/get": Shape({"queue_id": REVIEW_QUEUE}, lambda v: Call(params={"queue_id": v["queue_id"][0]})),
    "GET /api/3.0/mlflow/review-queues/get-by-name": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id", name="rq")),
    "GET /api/3.0/mlflow/review-queues/list": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "POST /api/3.0/mlflow/review-queues/update": Shape(
        {"queue_id": REVIEW_QUEUE}, lambda v: Call(params={"queue_id": v["queue_id"][0], "name": f"rq-{v['unique']}"}), fresh=True
    ),
    "POST /api/3.0/mlflow/review-queues/delete": Shape(
        {"queue_id": REVIEW_QUEUE}, lambda v: Call(params={"queue_id": v["queue_id"][0]}), fresh=True
    ),
    "POST /api/3.0/mlflow/review-queues/items/add": Shape(
        {"queue_id": REVIEW_QUEUE, "item_ids": TRACE},
        lambda v: Call(params={"queue_id": v["queue_id"][0], "item_type": "TRACE", "item_ids": [v["item_ids"]]}),
        fresh=True,
    ),
    "POST /api/3.0/mlflow/review-queues/items/remove": Shape(
        {"queue_id": REVIEW_QUEUE}, lambda v: Call(params={"queue_id": v["queue_id"][0], "item_ids": [v["queue_id"][1]]}), fresh=True
    ),
    "GET /api/3.0/mlflow/review-queues/items/list": Shape(
        {"queue_id": REVIEW_QUEUE}, lambda v: Call(params={"queue_id": v["queue_id"][0]})
    ),
    "POST /api/3.0/mlflow/review-queues/items/set-status": Shape(
        {"queue_id": REVIEW_QUEUE},
        lambda v: Call(params={"queue_id": v["queue_id"][0], "item_id": v["queue_id"][1], "status": "COMPLETED"}),
        fresh=True,
    ),
    "POST /api/3.0/mlflow/issues": Shape(
        {"experiment_id": EXPERIMENT}, lambda v: Call(params={"experiment_id": v["experiment_id"], "name": "x", "description": "d"})
    ),
    "POST /api/3.0/mlflow/issues/search": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "GET /api/3.0/mlflow/issues/{issue_id}": Shape({"issue_id": ISSUE}, lambda v: Call(path={"issue_id": v["issue_id"]})),
    "PATCH /api/3.0/mlflow/issues/{issue_id}": Shape(
        {"issue_id": ISSUE}, lambda v: Call(path={"issue_id": v["issue_id"]}, params={"issue_id": v["issue_id"], "status": "resolved"})
    ),
    # The UI's judge runs: UPDATE on the experiment; trace ids of another experiment are refused by the handler (403).
    "POST /ajax-api/3.0/mlflow/scorer/invoke": Shape(
        {"experiment_id": EXPERIMENT, "trace_ids": TRACE},
        lambda v: Call(
            params={
                "experiment_id": v["experiment_id"],
                "serialized_scorer": json.dumps({"name": "bob-judge"}),
                "trace_ids": [v["trace_ids"]],
            }
        ),
    ),
    "POST /ajax-api/3.0/mlflow/genai/evaluate/invoke": Shape(
        {"experiment_id": EXPERIMENT, "trace_ids": TRACE},
        lambda v: Call(
            params={
                "experiment_id": v["experiment_id"],
                "serialized_scorers": [json.dumps({"name": "bob-judge"})],
                "trace_ids": [v["trace_ids"]],
            }
        ),
    ),
    # MLflow 3.18's auth app fails the /mlflow/issues/ family closed and has no validator for this route: admins only.
    "POST /ajax-api/3.0/mlflow/issues/schedule/state": Shape(
        {"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id"), admin_only=True
    ),
    # MLflow 3.18: issue detection creates a run in the experiment (validate_can_invoke_issue_detection).
    "POST /ajax-api/3.0/mlflow/issues/invoke": Shape(
        {"experiment_id": EXPERIMENT},
        _q(experiment_id="$experiment_id", trace_ids=["tr-x"], categories=["q"], provider="openai", endpoint_name="e"),
        fresh=True,
    ),
    # --- MLflow 3.18's prompt-optimization jobs (the job-id routes: NO_RESOURCE_ID) --------------------------
    "POST /api/3.0/mlflow/prompt-optimization/jobs": Shape(
        {"experiment_id": EXPERIMENT},
        _q(experiment_id="$experiment_id", source_prompt_uri="prompts:/bob-prompt/1", config={"optimizer_type": "OPTIMIZER_TYPE_GEPA"}),
    ),
    "GET /api/3.0/mlflow/prompt-optimization/jobs/search": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
    "POST /api/3.0/mlflow/prompt-optimization/jobs/search": Shape({"experiment_id": EXPERIMENT}, _q(experiment_id="$experiment_id")),
}

_GATEWAY = (
    "AI gateway configuration has no per-user owner here: changes are admin-only and reads are open to every "
    "user but one an endpoint's grant denies (tests/auth/test_admin_and_workspace_parity.py; rules/platform.py), "
    "so there is no galice resource to point at"
)
_PUBLIC = "public (no credentials needed) and names no resource; wrong credentials are cross_scenario's"
_WEBHOOKS = "webhooks are admin-only (MLflow's sender_is_admin): no per-user owner, so there is no galice resource to point at"

NO_RESOURCE_ID: dict[str, str] = {
    "GET /health": _PUBLIC,
    "HEAD /health": _PUBLIC,
    "GET /api/3.0/mlflow/server-info": _PUBLIC,
    "GET /": _PUBLIC,
    "GET /static-files/{path+}": _PUBLIC + " (the path is a file of the UI build)",
    "GET /login": _PUBLIC,
    "GET /signup": "the sign-up form (asks for credentials itself), for admins and workspace admins",
    "POST /api/2.0/mlflow/users/create-ui": "the sign-up form's POST creates a user: admins only (tests/auth/test_signup.py)",
    "GET /version": "the server's version, for any logged-in user",
    "GET /ajax-api/3.0/mlflow/ui-telemetry": "the UI's telemetry settings (constant), for any logged-in user",
    "POST /ajax-api/3.0/mlflow/ui-telemetry": "accepted and dropped (no telemetry is collected), for any logged-in user",
    "GET /api/2.0/mlflow/users/current": "the caller's own user",
    # MLflow's validate_gateway_proxy allows every user (the deployments target authorizes its own calls).
    "GET /ajax-api/2.0/mlflow/gateway-proxy": "the deployments target's endpoints (an empty gateway without one), for any logged-in user",
    "POST /ajax-api/2.0/mlflow/gateway-proxy": "an invocation proxied to the deployments target, for any logged-in user",
    "GET /ajax-api/3.0/mlflow/assistant/config": "no assistant provider configured (constant), for any logged-in user",
    "GET /ajax-api/3.0/mlflow/assistant/providers": "the assistant providers, none available (constant), for any logged-in user",
    "GET /api/2.0/mlflow/users/list": "user names, for any logged-in user (MLflow's validate_can_list_users)",
    "GET /api/3.0/mlflow/users/current/permissions": "the caller's own grants",
    **{
        f"{method} /api/2.0/mlflow/webhooks{path}": _WEBHOOKS
        for method, path in (
            ("POST", ""),
            ("GET", ""),
            ("GET", "/{webhook_id}"),
            ("PATCH", "/{webhook_id}"),
            ("DELETE", "/{webhook_id}"),
            ("POST", "/{webhook_id}/test"),
        )
    },
    **{
        f"{method} /api/3.0/mlflow/roles/{path}": "roles name no per-user resource: admins and the role's workspace admins "
        "change them, its members read them (tests/auth/test_roles.py plays them against MLflow's app)"
        for method, path in (
            ("POST", "create"),
            ("GET", "get"),
            ("GET", "list"),
            ("PATCH", "update"),
            ("DELETE", "delete"),
            ("POST", "permissions/add"),
            ("DELETE", "permissions/remove"),
            ("GET", "permissions/list"),
            ("PATCH", "permissions/update"),
            ("POST", "assign"),
            ("DELETE", "unassign"),
            ("GET", "users/list"),
        )
    },
    **{
        f"{method} /api/3.0/mlflow/gateway/{path}": _GATEWAY
        for method, path in (
            ("POST", "secrets/create"),
            ("GET", "secrets/get"),
            ("POST", "secrets/update"),
            ("DELETE", "secrets/delete"),
            ("GET", "secrets/list"),
            ("POST", "model-definitions/create"),
            ("GET", "model-definitions/get"),
            ("GET", "model-definitions/list"),
            ("POST", "model-definitions/update"),
            ("DELETE", "model-definitions/delete"),
            ("POST", "endpoints/create"),
            ("GET", "endpoints/get"),
            ("POST", "endpoints/update"),
            ("DELETE", "endpoints/delete"),
            ("GET", "endpoints/list"),
            ("POST", "endpoints/models/attach"),
            ("POST", "endpoints/models/detach"),
            ("POST", "endpoints/bindings/create"),
            ("DELETE", "endpoints/bindings/delete"),
            ("GET", "endpoints/bindings/list"),
            ("POST", "endpoints/set-tag"),
            ("DELETE", "endpoints/delete-tag"),
        )
    },
    **{
        f"{method} /api/3.0/mlflow/workspaces{path}": "workspaces are admin-only here (rules/platform.py; per-workspace grants are not "
        "served yet) and have no per-user owner"
        for method, path in (
            ("GET", ""),
            ("POST", ""),
            ("GET", "/{workspace_name}"),
            ("PATCH", "/{workspace_name}"),
            ("DELETE", "/{workspace_name}"),
        )
    },
    **{
        f"{method} /api/3.0/mlflow/gateway/budgets/{path}": "gateway budgets are admin-only (rules/platform.py) and have no per-user owner"
        for method, path in (
            ("POST", "create"),
            ("GET", "get"),
            ("POST", "update"),
            ("DELETE", "delete"),
            ("GET", "list"),
            ("GET", "windows"),
        )
    },
    **{
        f"{method} /api/3.0/mlflow/gateway/guardrails/{path}": "gateway guardrails are admin-only (rules/platform.py) and have no per-user owner"
        for method, path in (
            ("POST", "create"),
            ("GET", "get"),
            ("DELETE", "delete"),
            ("GET", "list"),
            ("POST", "add-to-endpoint"),
            ("DELETE", "remove-from-endpoint"),
            ("GET", "list-for-endpoint"),
            ("PATCH", "update-config"),
        )
    },
    **{
        f"{method} /gateway/{{path+}}": "the gateway runtime checks USE on the endpoint a call names itself (gateway_runtime/access.py, "
        "tests/gateway_runtime/test_runtime_access.py); endpoints have no per-user owner"
        for method in ("GET", "POST")
    },
    **{
        f"{method} /api/2.0/mlflow/webhooks{path}": "webhooks are admin-only (MLflow's sender_is_admin) and have no per-user owner"
        for method, path in (
            ("POST", ""),
            ("GET", ""),
            ("GET", "/{webhook_id}"),
            ("PATCH", "/{webhook_id}"),
            ("DELETE", "/{webhook_id}"),
            ("POST", "/{webhook_id}/test"),
        )
    },
    **{
        route.route_key: (
            "the MCP server registry has no per-user owner here: changes are admin-only and reads are open to every "
            "user (MLflow's per-server mcp_server grants are not served; rules/platform.py), so there is no galice resource"
        )
        for route in ROUTES
        if route.path.startswith(f"{M3}/mcp-servers")
    },
    **{
        route.route_key: (
            "the skill registry has no per-user owner here: changes are admin-only and reads are open to every user "
            "(MLflow's per-skill grants are not served; rules/platform.py), so there is no galice resource"
        )
        for route in ROUTES
        if route.path.startswith(f"{M3}/skills")
    },
    **{
        route.route_key: (
            "a job's owner is its creator (get and cancel are the creator's or an admin's, a search answers a user their "
            "own jobs): tests/jobs/test_jobs_auth.py; MLflow's reference app runs no jobs here (job execution is off)"
        )
        for route in ROUTES
        if route.path.startswith(("/ajax-api/3.0/jobs", "/ajax-api/3.0/mlflow/jobs/"))
    },
    **{
        f"{method} /api/3.0/mlflow/prompt-optimization/jobs/{{job_id}}{tail}": (
            "a prompt-optimization job is judged on the experiment its params name (READ, UPDATE to cancel, DELETE): "
            "tests/jobs/test_prompt_optimization_auth.py; MLflow's reference app runs no jobs here (job execution is off)"
        )
        for method, tail in (("GET", ""), ("DELETE", ""), ("POST", "/cancel"))
    },
    "POST /ajax-api/3.0/mlflow/demo/generate": "the demo data, for any logged-in user (MLflow's auth app lets every user in)",
    "POST /ajax-api/3.0/mlflow/demo/delete": "the demo data, deleted by admins only (MLflow's sender_is_admin): "
    "tests/auth/test_admin_and_workspace_parity.py compares it with MLflow's app",
    **{
        f"GET /ajax-api/3.0/mlflow/gateway/{path}": "the provider/model catalog or the secrets setup: constant, for any logged-in user"
        for path in ("supported-providers", "supported-models", "provider-config", "secrets/config")
    },
}


def route_key_of(shape_key: str) -> str:
    """``"POST /x#variant"`` -> ``"POST /x"``: a route may have several declared requests."""
    return shape_key.partition("#")[0]
