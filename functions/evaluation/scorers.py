"""Registered scorers: versioned, per experiment (SqlAlchemyStore semantics and messages).

A scorer is ``EXP#<exp>/SC#<name>`` (its id) with versions ``SC#<name>V#<padded version>`` right after it,
so one consistent Query reads a scorer with every version. Register claims version = latest + 1 with
``attribute_not_exists`` in a transaction with the scorer item, and retries on a lost race: concurrent
registrations get distinct consecutive versions. Like MLflow, deleting the latest version lets the next
registration reuse its number.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.errors import MlflowError, invalid, not_found, retry_later
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import experiment_items, scorer_payload, scorer_refs
from serverless_mlflow.store import experiments as experiment_store

from . import scorer_bindings

SCORER = ENTITY["scorer"]
SCORER_VERSION = ENTITY["scorer_version"]
ONLINE_CONFIG = ENTITY["online_scoring_config"]
ENDPOINT_NAME = ENTITY["gateway_endpoint_name"]
# Each round lets exactly one of the racing registrations win, so a burst of N needs up to N rounds.
MAX_REGISTER_RETRIES = 32

validate_payload = scorer_payload.validate_payload
_model = scorer_refs.model_of
_is_gateway_model = scorer_refs.is_gateway_model


def _check_model(model: Any) -> str | None:
    """``validate_scorer_model`` and the gateway endpoint lookup (the endpoint's name claim in the workspace); the
    endpoint's id for a gateway model."""
    if model is None:
        return None
    if not isinstance(model, str):
        raise invalid(f"Scorer model must be a string, got {type(model).__name__}.")
    if not model.strip():
        raise invalid("Scorer model cannot be empty or contain only whitespace.")
    provider, _, path = model.partition(":/")
    name = path.lstrip("/")
    if provider == "gateway" and name:
        key = ENDPOINT_NAME.key(workspace=request_workspace.current(), name=name) if len(name.encode("utf-8")) <= 1024 else None
        claim = table.get(key) if key is not None else None
        if claim is None:
            raise not_found(f"GatewayEndpoint not found (name='{name}')")
        return str(claim["endpoint_id"])
    return None


# mlflow.prompt.constants.PROMPT_TEMPLATE_VARIABLE_PATTERN and InstructionsJudge's reserved template variables.
_TEMPLATE_VARIABLE = re.compile(r"\{\{\s*([a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z_][a-zA-Z0-9_]*)*)\s*\}\}")
_JUDGE_VARIABLES = frozenset({"inputs", "outputs", "trace", "expectations", "conversation"})
_SCORER_KINDS = (
    "builtin_scorer_class",
    "call_source",
    "instructions_judge_pydantic_data",
    "memory_augmented_judge_data",
    "third_party_scorer_data",
    "ensemble_scorer_data",
)
_MODEL_APIS = frozenset({None, "default", "chat_completions", "decisions"})


def _requires_expectations(data: dict[str, Any]) -> bool:
    """MLflow's second online-scoring check: the latest version deserializes (``Scorer.model_validate_json``)
    as an InstructionsJudge whose instructions use ``{{ expectations }}``. MLflow skips the check ("fail open")
    when the scorer does not deserialize, so a judge its constructor would refuse passes here too."""
    if sum(data.get(kind) is not None for kind in _SCORER_KINDS) != 1:
        return False  # SerializedScorer refuses none or several kinds
    judge = data.get("instructions_judge_pydantic_data")
    if not isinstance(judge, dict) or not isinstance(judge.get("model"), str):
        return False
    instructions = judge.get("instructions")
    if not isinstance(instructions, str) or not instructions or judge.get("model_api") not in _MODEL_APIS:
        return False
    variables = set(_TEMPLATE_VARIABLE.findall(instructions))
    if variables - _JUDGE_VARIABLES or ("conversation" in variables and variables - {"expectations", "conversation"}):
        return False  # InstructionsJudge refuses such instructions
    return "expectations" in variables


# --- store ---------------------------------------------------------------------------------------------


def _not_found(name: str, experiment_id: str, version: int | None = None) -> MlflowError:
    if version is not None:
        return not_found(f"Scorer with name '{name}' and version {version} not found for experiment {experiment_id}.")
    return not_found(f"Scorer with name '{name}' not found for experiment {experiment_id}.")


def _experiment(experiment_id: str) -> str:
    meta = experiment_store.get_active_experiment_meta(experiment_id)
    return str(meta["experiment_id"])


def _read(experiment_id: str, name: str) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """(scorer item, versions ascending) of one name: one consistent Query."""
    scorer, versions = None, []
    for item in table.iter_query(**SCORER.query("with_versions", experiment_id=experiment_id, name=name)):
        if item["entity_type"] == SCORER.name:
            scorer = item
        else:
            versions.append(item)
    return scorer, versions


to_api = scorer_refs.scorer_version_json


def register_scorer(experiment_id: str, name: str, serialized_scorer: str) -> dict[str, Any]:
    data = validate_payload(serialized_scorer)
    if not name.strip():
        raise invalid("Scorer name cannot be empty or contain only whitespace.")
    experiment_id = _experiment(experiment_id)
    model = _model(data)
    for attempt in range(MAX_REGISTER_RETRIES):
        if attempt:
            table.backoff(min(attempt, 5))  # jitter spreads the losers of a race apart
        endpoint_id = _check_model(model)  # again after a lost race: the endpoint may be gone by then
        scorer, versions = _read(experiment_id, name)
        ops = []
        if scorer is None:
            scorer = SCORER.item(
                {"scorer_id": str(uuid.uuid4()), "name": name, "experiment_id": experiment_id}, experiment_id=experiment_id, name=name
            )
            if endpoint_id is not None:
                scorer["bound_endpoint_id"] = endpoint_id
            ops.append(table.put_op(scorer, condition="attribute_not_exists(pk)"))
            ops.append(table.put_op(scorer_refs.ref_item(scorer["scorer_id"], experiment_id, name)))
        elif endpoint_id is not None:
            ops.append(
                table.update_op(
                    table.key_of(scorer),
                    "SET bound_endpoint_id = :endpoint",
                    values={":id": scorer["scorer_id"], ":endpoint": endpoint_id},
                    condition="scorer_id = :id",
                )
            )
        else:
            ops.append(table.check_op(table.key_of(scorer), "scorer_id = :id", values={":id": scorer["scorer_id"]}))
        if endpoint_id is not None:
            ops += scorer_bindings.bind_ops(scorer, endpoint_id, name)
        version = (int(versions[-1]["version"]) if versions else 0) + 1
        attributes = {
            "scorer_id": scorer["scorer_id"],
            "name": name,
            "experiment_id": experiment_id,
            "version": version,
            "serialized_scorer": serialized_scorer,
            "creation_time": clock.now_millis(),
        }
        item = SCORER_VERSION.item(attributes, experiment_id=experiment_id, name=name, version=version)
        ops.append(table.put_op(item, condition="attribute_not_exists(pk)"))
        try:
            table.transact(ops)
        except table.ConditionFailed:
            continue  # another registration took this version (or created the scorer): read again
        return item
    raise retry_later("Too many concurrent registrations of this scorer; retry the request.")


def list_scorers(experiment_id: str) -> list[dict[str, Any]]:
    """The latest version of every scorer of an experiment, by name."""
    experiment_id = _experiment(experiment_id)
    latest: dict[str, dict[str, Any]] = {}
    for item in table.iter_query(**SCORER.query("with_versions", experiment_id=experiment_id)):
        if item["entity_type"] == SCORER_VERSION.name:
            latest[item["name"]] = item  # ascending key order: the last one is the latest
    return [to_api(latest[name]) for name in sorted(latest, key=lambda n: n.encode("utf-8"))]


def list_scorer_versions(experiment_id: str, name: str) -> list[dict[str, Any]]:
    experiment_id = _experiment(experiment_id)
    scorer, versions = _read(experiment_id, name)
    if scorer is None or not versions:
        raise _not_found(name, experiment_id)
    return [to_api(v) for v in versions]


def get_scorer(experiment_id: str, name: str, version: int | None) -> dict[str, Any]:
    experiment_id = _experiment(experiment_id)
    scorer, versions = _read(experiment_id, name)
    if scorer is None:
        raise _not_found(name, experiment_id)
    if version is None:
        if not versions:
            raise _not_found(name, experiment_id)
        return to_api(versions[-1])
    for item in versions:
        if int(item["version"]) == version:
            return to_api(item)
    raise _not_found(name, experiment_id, version)


def delete_scorer(experiment_id: str, name: str, version: int | None) -> None:
    """One version, or (version None) every version and the scorer itself."""
    experiment_id = _experiment(experiment_id)
    scorer, versions = _read(experiment_id, name)
    if scorer is None:
        raise _not_found(name, experiment_id)
    doomed = [v for v in versions if version is None or int(v["version"]) == version]
    if not doomed:
        raise _not_found(name, experiment_id, version)
    keys = [table.key_of(v) for v in doomed]
    if version is None:
        # The scorer goes with its online configuration (MLflow's ON DELETE CASCADE).
        keys += [table.key_of(scorer), ONLINE_CONFIG.key(scorer_id=scorer["scorer_id"]), scorer_refs.ref_key(scorer["scorer_id"])]
        keys += scorer_bindings.unbind_keys(scorer)  # MLflow deletes the scorer's endpoint bindings with it
    table.batch_write(deletes=keys)


def list_scorers_across(experiment_ids: list[str] | None) -> list[dict[str, Any]]:
    """Latest versions across experiments (the given active ones, or every active one of the workspace)."""
    if experiment_ids is None:
        entries = table.query(**experiment_items.EXPERIMENT_ENTRY.query("collection", workspace=request_workspace.current()))
        active = [
            str(e["experiment_id"]) for e in entries if e.get("entity_type") == "experiment_entry" and e.get("lifecycle_stage") == "active"
        ]
    else:
        active = []
        for experiment_id in experiment_ids:
            item = experiment_store.get_experiment_item(experiment_id)
            if item is not None and item.get("lifecycle_stage") == "active":
                active.append(str(item["experiment_id"]))
    found: list[dict[str, Any]] = []
    for experiment_id in sorted(set(active), key=int):
        found += list_scorers(experiment_id)
    return found


# --- online scoring configs ---------------------------------------------------------------------------


def _config_to_api(item: dict[str, Any]) -> dict[str, Any]:
    out = {
        "online_scoring_config_id": item["online_scoring_config_id"],
        "scorer_id": item["scorer_id"],
        "sample_rate": float(item["sample_rate"]),
        "experiment_id": str(item["experiment_id"]),
    }
    if item.get("filter_string") is not None:
        out["filter_string"] = item["filter_string"]
    return out


def get_online_scoring_configs(scorer_ids: list[str]) -> list[dict[str, Any]]:
    ids = [s for s in dict.fromkeys(scorer_ids) if 0 < len(s.encode("utf-8")) <= 1024]
    return [_config_to_api(item) for item in table.batch_get([ONLINE_CONFIG.key(scorer_id=s) for s in ids])]


def upsert_online_scoring_config(
    experiment_id: str, name: str, sample_rate: float, filter_string: str | None, user: str | None = None
) -> dict[str, Any]:
    """SqlAlchemyStore.upsert_online_scoring_config. A positive sample rate needs a scorer whose latest version
    judges with a gateway model (``gateway:/<endpoint>``, MLflow's ``is_gateway_model``) and needs no expectations.
    A positive rate also lists the configuration for the monitor (``serverless_mlflow.jobs.online_scoring``), whose jobs
    run as ``user`` (basic auth: the caller who turned scoring on)."""
    if not 0.0 <= sample_rate <= 1.0:
        raise invalid(f"sample_rate must be between 0.0 and 1.0, got {sample_rate}")
    experiment_id = _experiment(experiment_id)
    scorer, versions = _read(experiment_id, name)
    if scorer is None:
        raise _not_found(name, experiment_id)
    if versions and sample_rate > 0:
        latest = json.loads(versions[-1]["serialized_scorer"])
        if not _is_gateway_model(_model(latest)):
            raise invalid(
                f"Scorer '{name}' does not use a gateway model. Automatic evaluation is only supported for scorers that use gateway models."
            )
        if _requires_expectations(latest):
            raise invalid(
                f"Scorer '{name}' requires expectations, but scorers with expectations are not currently supported for automatic evaluation."
            )
    attributes = {
        "online_scoring_config_id": uuid.uuid4().hex,
        "scorer_id": scorer["scorer_id"],
        # Stored as text: the table codec keeps floats exact that way (NaN is refused above).
        "sample_rate": repr(sample_rate),
        "experiment_id": experiment_id,
        "filter_string": filter_string,
        "workspace": request_workspace.current(),
    }
    if user:
        attributes["created_by"] = user
    active = {"active_workspace": attributes["workspace"], "experiment_id": experiment_id} if sample_rate > 0 else {}
    item = ONLINE_CONFIG.item(attributes, scorer_id=scorer["scorer_id"], **active)
    table.put(item)
    return _config_to_api(item)
