"""``/graphql``: the operations the MLflow web UI sends, answered from the same domain functions as REST.

MLflow's graphene schema is generated from its protos: every object field resolves from the proto
message, so an unset string reads ``""``, an unset int64 ``"0"`` (int64s travel as strings, the
``LongString`` scalar), an unset message an empty object and an unset list ``[]``; enums are names. The
``shape`` below turns our REST JSON (proto JSON, unset fields left out) into those values, typed by the
small part of the schema the UI uses. ``apiError`` is always null (MLflow never fills it: failures come
back in ``errors`` with the root field null).
"""

from __future__ import annotations

import math
from typing import Any

from serverless_mlflow.request import graphql, parse_message
from serverless_mlflow.store import artifact_listing, experiments, model_versions
from serverless_mlflow.store import runs as store

from . import datasets, history, search
from .messages import MESSAGES

STR, LONG, FLOAT, NAN_FLOAT, ENUM, BOOL = "str", "long", "float", "nan_float", "enum", "bool"

# type -> field (proto name) -> kind: a scalar kind, "Type" (object) or ["Type"] / [STR] (lists).
TYPES: dict[str, dict[str, Any]] = {
    "ApiError": {"code": STR, "message": STR, "help_url": STR, "trace_id": STR},
    "MlflowExperimentTag": {"key": STR, "value": STR},
    "MlflowExperiment": {
        "experiment_id": STR,
        "name": STR,
        "artifact_location": STR,
        "lifecycle_stage": STR,
        "last_update_time": LONG,
        "creation_time": LONG,
        "tags": ["MlflowExperimentTag"],
        "effective_trace_archival_retention": STR,
        "workspace": STR,
    },
    "MlflowRunInfo": {
        "run_id": STR,
        "run_uuid": STR,
        "run_name": STR,
        "experiment_id": STR,
        "user_id": STR,
        "status": ENUM,
        "start_time": LONG,
        "end_time": LONG,
        "artifact_uri": STR,
        "lifecycle_stage": STR,
    },
    "MlflowMetricExtension": {
        "key": STR,
        "value": NAN_FLOAT,
        "timestamp": LONG,
        "step": LONG,
        "dataset_name": STR,
        "dataset_digest": STR,
        "model_id": STR,
        "run_id": STR,
    },
    "MlflowParam": {"key": STR, "value": STR},
    "MlflowRunTag": {"key": STR, "value": STR},
    "MlflowRunData": {"metrics": ["MlflowMetricExtension"], "params": ["MlflowParam"], "tags": ["MlflowRunTag"]},
    "MlflowDataset": {"name": STR, "digest": STR, "source_type": STR, "source": STR, "schema": STR, "profile": STR},
    "MlflowInputTag": {"key": STR, "value": STR},
    "MlflowDatasetInput": {"tags": ["MlflowInputTag"], "dataset": "MlflowDataset"},
    "MlflowModelInput": {"model_id": STR},
    "MlflowRunInputs": {"dataset_inputs": ["MlflowDatasetInput"], "model_inputs": ["MlflowModelInput"]},
    "MlflowModelOutput": {"model_id": STR, "step": LONG},
    "MlflowRunOutputs": {"model_outputs": ["MlflowModelOutput"]},
    "MlflowModelVersionTag": {"key": STR, "value": STR},
    "MlflowModelVersion": {
        "name": STR,
        "version": STR,
        "creation_timestamp": LONG,
        "last_updated_timestamp": LONG,
        "user_id": STR,
        "current_stage": STR,
        "description": STR,
        "source": STR,
        "run_id": STR,
        "status": ENUM,
        "status_message": STR,
        "tags": ["MlflowModelVersionTag"],
        "run_link": STR,
        "aliases": [STR],
        "model_id": STR,
    },
    "MlflowRunExtension": {"info": "MlflowRunInfo", "data": "MlflowRunData", "inputs": "MlflowRunInputs", "outputs": "MlflowRunOutputs"},
    "MlflowMetricWithRunId": {"key": STR, "value": FLOAT, "timestamp": LONG, "step": LONG, "run_id": STR},
    "MlflowFileInfo": {"path": STR, "is_dir": BOOL, "file_size": LONG},
    "MlflowListArtifactsResponse": {"root_uri": STR, "files": ["MlflowFileInfo"], "next_page_token": STR},
    "MlflowDatasetSummary": {"experiment_id": STR, "name": STR, "digest": STR, "context": STR},
    "MlflowSearchDatasetsResponse": {"dataset_summaries": ["MlflowDatasetSummary"]},
}
_DEFAULTS = {STR: "", LONG: "0", ENUM: None, BOOL: False}
# Proto2 enum defaults: the first value.
_ENUM_DEFAULTS = {("MlflowRunInfo", "status"): "RUNNING", ("MlflowModelVersion", "status"): "PENDING_REGISTRATION"}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def shape(type_name: str, proto_json: dict[str, Any] | None, errors: list[str] | None = None) -> dict[str, Any]:
    """A proto-JSON message as graphene resolves it (defaults for unset fields, GraphQL field names)."""
    proto_json = proto_json or {}
    out: dict[str, Any] = {"__typename": type_name}
    for name, kind in TYPES[type_name].items():
        value = proto_json.get(name)
        if isinstance(kind, list):
            item_kind = kind[0]
            items = value or []
            out[camel(name)] = [shape(item_kind, item, errors) if item_kind in TYPES else item for item in items]
        elif kind in TYPES:
            out[camel(name)] = shape(kind, value if isinstance(value, dict) else {}, errors)
        elif kind == LONG:
            out[camel(name)] = str(int(value)) if value is not None else "0"
        elif kind in (FLOAT, NAN_FLOAT):
            out[camel(name)] = _float(value, kind, errors)
        elif kind == ENUM:
            out[camel(name)] = value if value is not None else _ENUM_DEFAULTS.get((type_name, name))
        else:
            out[camel(name)] = value if value is not None else _DEFAULTS[kind]
    return out


def _float(value: Any, kind: str, errors: list[str] | None) -> float | None:
    if value is None:
        return 0.0
    number = float(value)  # "NaN" / "Infinity" strings of proto JSON included
    if math.isfinite(number):
        return number
    if kind == FLOAT and errors is not None:
        # graphene's Float refuses non-finite values: the value is nulled and the message reported.
        errors.append(f"Float cannot represent non numeric value: {'nan' if math.isnan(number) else ('inf' if number > 0 else '-inf')}")
    return None


# --- runs -------------------------------------------------------------------------------------------


def _run(run_json: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    run = shape("MlflowRunExtension", run_json, errors)
    info = run_json.get("info", {})
    run["experiment"] = lambda: _experiment(str(info.get("experiment_id", "")), errors)
    run["modelVersions"] = lambda: [
        shape("MlflowModelVersion", _version_json(hit)) for hit in model_versions.run_version_hits(info.get("run_id", ""))
    ]
    return run


def _version_json(item: dict[str, Any]) -> dict[str, Any]:
    out = {name: item.get(name) for name in TYPES["MlflowModelVersion"] if name not in ("tags", "aliases")}
    out["version"] = str(item.get("version", ""))
    return out


def _experiment(experiment_id: str, errors: list[str]) -> dict[str, Any]:
    return shape("MlflowExperiment", experiments.get_experiment(experiment_id), errors)


def get_run(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    given = graphql.input_of(arguments)
    run_id = given.get("run_id") or given.get("run_uuid") or ""
    return {"__typename": "MlflowGetRunResponse", "run": _run({"info": {}, **store.get_run(run_id)}, errors), "apiError": None}


def search_runs(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    given = graphql.input_of(arguments)
    found = search.search_runs(parse_message(given, MESSAGES["search_runs"]))
    return {
        "__typename": "MlflowSearchRunsResponse",
        "runs": [_run(run, errors) for run in found.get("runs", [])],
        "nextPageToken": found.get("next_page_token", ""),
        "apiError": None,
    }


def get_experiment(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    experiment_id = graphql.input_of(arguments).get("experiment_id", "")
    return {"__typename": "MlflowGetExperimentResponse", "experiment": _experiment(str(experiment_id), errors), "apiError": None}


def get_metric_history_bulk_interval(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    # MLflow's resolver reads max_results/start_step/end_step from the HTTP query string, which a GraphQL
    # POST does not have: the input's values are ignored and every run is sampled to 2,500 points.
    given = {key: value for key, value in graphql.input_of(arguments).items() if key in ("run_ids", "metric_key")}
    msg = parse_message(given, MESSAGES["get_metric_history_bulk_interval"])
    found = history.get_metric_history_bulk_interval(msg)
    return {
        "__typename": "MlflowGetMetricHistoryBulkIntervalResponse",
        "metrics": [shape("MlflowMetricWithRunId", metric, errors) for metric in found.get("metrics", [])],
        "apiError": None,
    }


def list_artifacts(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    # MLflow's list_artifacts_impl ignores page_token for a proxied (mlflow-artifacts:) root: one full listing.
    given = graphql.input_of(arguments)
    run_id = str(given.get("run_id") or given.get("run_uuid") or "")
    path = given.get("path")
    listing = artifact_listing.list_run_artifacts(run_id, str(path) if path is not None else None)
    return {**shape("MlflowListArtifactsResponse", listing, errors), "apiError": None}


def search_datasets(arguments: dict[str, Any], errors: list[str]) -> dict[str, Any]:
    ids = graphql.input_of(arguments).get("experiment_ids") or []
    found = datasets.search_datasets([str(i) for i in ids] if isinstance(ids, list) else [str(ids)])
    return {**shape("MlflowSearchDatasetsResponse", found, errors), "apiError": None}


ROOTS: dict[str, dict[str, graphql.Resolver]] = {
    "query": {
        "mlflowGetRun": get_run,
        "mlflowSearchRuns": search_runs,
        "mlflowGetExperiment": get_experiment,
        "mlflowGetMetricHistoryBulkInterval": get_metric_history_bulk_interval,
        "mlflowListArtifacts": list_artifacts,
    },
    "mutation": {"mlflowSearchRuns": search_runs, "mlflowSearchDatasets": search_datasets},
}


def execute(body: dict[str, Any], guard: graphql.Guard | None = None) -> dict[str, Any]:
    return graphql.execute(ROOTS, body.get("query"), body.get("variables"), body.get("operationName"), guard)
