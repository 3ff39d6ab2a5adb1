"""GenAI evaluation routes (datasets and scorers): parse like MLflow's handlers, call one domain function."""

from __future__ import annotations

import json
import math
import urllib.parse
from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation import validate_experiment_id
from serverless_mlflow.http.api import Request, build_app, lambda_entry
from serverless_mlflow.request import json_text
from serverless_mlflow.request.pages import page_response

from . import datasets, records, scorers
from .messages import MESSAGES

DEFAULT_RECORDS_PAGE = 1000


def _dataset_id(req: Request) -> str:
    return req.path_params.get("dataset_id", "")


def _without_empty(out: dict[str, Any]) -> dict[str, Any]:
    # proto3 JSON leaves out empty repeated fields and unset optionals.
    return {k: v for k, v in out.items() if v not in (None, [], "")}


# --- datasets ---------------------------------------------------------------------------------------


def create_dataset(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["create_dataset"])
    tags = datasets.parse_tags_json(msg.get("tags", ""), required=False)
    return {"dataset": datasets.create_dataset(msg["name"], msg.get("experiment_ids") or None, tags)}


def get_dataset(req: Request) -> dict[str, Any]:
    return {"dataset": datasets.get_dataset(_dataset_id(req))}


def delete_dataset(req: Request) -> dict[str, Any]:
    datasets.delete_dataset(_dataset_id(req))
    return {}


DEFAULT_SEARCH_DATASETS_MAX_RESULTS = 1000


def search_datasets(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["search_datasets"])
    found, token = datasets.search_datasets(
        msg.get("experiment_ids") or None,
        msg.get("filter_string") or None,
        # SearchEvaluationDatasets.max_results is proto2 with [default = 1000]: unset reads as 1000 (0 stays refused).
        msg.get("max_results", DEFAULT_SEARCH_DATASETS_MAX_RESULTS) or None,
        msg.get("order_by") or None,
        msg.get("page_token") or None,
    )
    return page_response("datasets", found, token)


def set_dataset_tags(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["set_dataset_tags"])
    tags = datasets.parse_tags_json(msg["tags"], required=True) or {}
    datasets.set_dataset_tags(_dataset_id(req), tags)
    return {}


def delete_dataset_tag(req: Request) -> dict[str, Any]:
    # The key as the client wrote it: decoded once from the raw path (as Flask does), whatever the gateway
    # does to pathParameters, so a key that itself contains "%41" is not decoded twice.
    raw_key = req.path.split("/tags/", 1)[1] if "/tags/" in req.path else req.path_params.get("key", "")
    datasets.delete_dataset_tag(_dataset_id(req), urllib.parse.unquote(raw_key))
    return {}


def upsert_dataset_records(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["upsert_dataset_records"])
    try:
        parsed = json_text.loads(msg["records"])
    except ValueError:
        raise invalid("Invalid value for parameter 'records': must be a JSON list of records") from None
    counts = records.upsert(_dataset_id(req), parsed)
    return {"inserted_count": counts["inserted"], "updated_count": counts["updated"]}


def get_dataset_records(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_dataset_records"])
    found, token = records.get_records(_dataset_id(req), msg.get("max_results") or DEFAULT_RECORDS_PAGE, msg.get("page_token") or None)
    return page_response("records", json.dumps(found), token)


def delete_dataset_records(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_dataset_records"])
    return {"deleted_count": records.delete(_dataset_id(req), msg.get("dataset_record_ids", []))}


def get_dataset_experiment_ids(req: Request) -> dict[str, Any]:
    return _without_empty({"experiment_ids": datasets.get_dataset_experiment_ids(_dataset_id(req))})


def add_dataset_to_experiments(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["add_dataset_to_experiments"])
    return {"dataset": datasets.add_dataset_to_experiments(_dataset_id(req), msg.get("experiment_ids", []))}


def remove_dataset_from_experiments(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["remove_dataset_from_experiments"])
    return {"dataset": datasets.remove_dataset_from_experiments(_dataset_id(req), msg.get("experiment_ids", []))}


# --- scorers ------------------------------------------------------------------------------------------


def register_scorer(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["register_scorer"])
    version = scorers.register_scorer(msg["experiment_id"], msg["name"], msg["serialized_scorer"])
    return {
        "version": int(version["version"]),
        "scorer_id": version["scorer_id"],
        "experiment_id": version["experiment_id"],
        "name": version["name"],
        "serialized_scorer": version["serialized_scorer"],
        "creation_time": int(version["creation_time"]),
    }


def list_scorers(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["list_scorers"])
    experiment_id = msg.get("experiment_id")
    has_ids = "experiment_ids" in msg
    if experiment_id and has_ids:
        raise invalid(
            "Cannot specify both 'experiment_id' and 'experiment_ids'. Use 'experiment_ids' to scope the query to multiple "
            "experiments, or 'experiment_id' to scope it to a single experiment."
        )
    if has_ids:
        for eid in dict.fromkeys(msg["experiment_ids"]):
            validate_experiment_id(eid)
        found = scorers.list_scorers_across(list(dict.fromkeys(msg["experiment_ids"])))
    elif experiment_id:
        found = scorers.list_scorers(experiment_id)
    else:
        found = scorers.list_scorers_across(None)
    return _without_empty({"scorers": found})


def list_scorer_versions(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["list_scorer_versions"])
    return _without_empty({"scorers": scorers.list_scorer_versions(msg["experiment_id"], msg["name"])})


def get_scorer(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_scorer"])
    return {"scorer": scorers.get_scorer(msg["experiment_id"], msg["name"], msg.get("version"))}


def delete_scorer(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["delete_scorer"])
    scorers.delete_scorer(msg["experiment_id"], msg["name"], msg.get("version"))
    return {}


def get_online_scoring_configs(req: Request) -> dict[str, Any]:
    msg = req.message(MESSAGES["get_online_scoring_configs"])
    return {"configs": scorers.get_online_scoring_configs(msg["scorer_ids"])}


def upsert_online_scoring_config(req: Request) -> dict[str, Any]:
    body = req.message(MESSAGES["upsert_online_scoring_config"])
    filter_string = body.get("filter_string")
    if filter_string is not None and not isinstance(filter_string, str):
        raise invalid(
            f"Invalid value {filter_string!r} for parameter 'filter_string' supplied: "
            f"Value was of type '{type(filter_string).__name__}'. Expected type 'str' or None."
        )
    try:
        sample_rate = float(body["sample_rate"])
    except (TypeError, ValueError):
        raise invalid(f"sample_rate must be a number, got {type(body['sample_rate']).__name__}") from None
    if math.isnan(sample_rate):
        raise invalid(f"sample_rate must be between 0.0 and 1.0, got {sample_rate}")
    user = req.identity.username if req.identity is not None else None
    config = scorers.upsert_online_scoring_config(body["experiment_id"], body["name"], sample_rate, filter_string, user)
    return {"config": config}


app = build_app(
    "evaluation",
    {
        "create_dataset": create_dataset,
        "get_dataset": get_dataset,
        "delete_dataset": delete_dataset,
        "search_datasets": search_datasets,
        "set_dataset_tags": set_dataset_tags,
        "delete_dataset_tag": delete_dataset_tag,
        "upsert_dataset_records": upsert_dataset_records,
        "get_dataset_records": get_dataset_records,
        "delete_dataset_records": delete_dataset_records,
        "get_dataset_experiment_ids": get_dataset_experiment_ids,
        "add_dataset_to_experiments": add_dataset_to_experiments,
        "remove_dataset_from_experiments": remove_dataset_from_experiments,
        "register_scorer": register_scorer,
        "list_scorers": list_scorers,
        "list_scorer_versions": list_scorer_versions,
        "get_scorer": get_scorer,
        "delete_scorer": delete_scorer,
        "get_online_scoring_configs": get_online_scoring_configs,
        "upsert_online_scoring_config": upsert_online_scoring_config,
    },
)
lambda_handler = lambda_entry(app)
