"""What the fuzz suite sends to each route, generated from the route table and each feature's request table.

Every route of ``routes.ROUTES`` gets a ``RoutePlan``: its method, its path with the path parameters filled in,
and its fields with their proto kinds from ``<feature>/messages.py``. A field's *good* value comes from its
name (ids of the objects the suite seeded, plausible names and numbers, well-formed nested messages), so
that a request with one or two hostile values reaches the code behind the parser; a *hostile* value comes
from ``values``. A route whose operation has no declaration cannot be planned: ``plan_for`` raises, and the
coverage test fails, so a route added later is fuzzed or the suite says why not.
"""

from __future__ import annotations

import importlib
import json
import re
import urllib.parse
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from serverless_mlflow.request import Message, routes

from . import values


@dataclass(frozen=True)
class RoutePlan:
    route: routes.Route
    fields: Mapping[str, str]  # name -> proto kind ("string", "[message]", ...)
    path_params: tuple[str, ...]

    @property
    def operation(self) -> str:
        return self.route.operation

    @property
    def in_query(self) -> bool:
        """Fields travel as query parameters (GET, and DELETE from the UI's fetch) or as a JSON body."""
        return self.route.method in ("GET", "HEAD")

    @property
    def id(self) -> str:
        return self.route.route_key


class Unplannable(LookupError):
    pass


def messages_of(feature: str) -> Mapping[str, Message]:
    try:
        return importlib.import_module(f"{feature}.messages").MESSAGES
    except ModuleNotFoundError as error:
        raise Unplannable(f"feature {feature!r} has no request table ({feature}/messages.py)") from error


def plan_for(route: routes.Route) -> RoutePlan:
    table = messages_of(route.feature)
    if route.operation not in table:
        raise Unplannable(f"{route.route_key}: {route.feature}/messages.py declares no Message for {route.operation!r}")
    spec = table[route.operation]
    fields = dict(spec.fields) if spec.fields is not None else {name: "string" for name in spec.checks or {}}
    return RoutePlan(route, fields, tuple(re.findall(r"\{(\w+)\+?\}", route.path)))


def all_plans() -> tuple[list[RoutePlan], list[str]]:
    """(the plans of every route that has one, why each other route has none)."""
    plans, missing = [], []
    for route in routes.ROUTES:
        try:
            plans.append(plan_for(route))
        except Unplannable as why:
            missing.append(str(why))
    return plans, missing


# --- good values -------------------------------------------------------------------------------------------

# Operations whose ``name`` field names the seeded registered model (the others create something new).
_REGISTRY_NAME_OPS = re.compile(r"registered_model|model_version|get_latest_versions")
_SCORER_OPS = {"list_scorer_versions", "get_scorer", "delete_scorer", "upsert_online_scoring_config"}


def fresh_name() -> st.SearchStrategy[str]:
    return st.builds(lambda: f"fz-{uuid.uuid4().hex[:10]}")


def _key() -> st.SearchStrategy[str]:
    return st.sampled_from(("k", "a.b", "mlflow.note.content", "tag-1", "k_2"))


def _text() -> st.SearchStrategy[str]:
    return st.sampled_from(("v", "", "a value", "0", "é"))


def _tags() -> st.SearchStrategy[list[dict[str, Any]]]:
    return st.lists(st.fixed_dictionaries({"key": _key(), "value": _text()}), max_size=2)


def _nested(name: str, op: str, seeds: Mapping[str, Any]) -> st.SearchStrategy[Any] | None:
    """Good values of the nested messages the suite knows by field name."""
    exp, run, model = seeds["experiment_id"], seeds["run_id"], seeds["model_id"]
    if name in ("tags", "params") and op not in ("create_dataset", "set_dataset_tags"):
        return _tags()
    if name == "metrics":
        metric = st.fixed_dictionaries(
            {"key": _key(), "value": st.floats(-1e6, 1e6), "timestamp": st.integers(0, 2**41), "step": st.integers(0, 100)}
        )
        return st.lists(metric, max_size=2)
    if name == "datasets" and op == "log_inputs":
        dataset = st.fixed_dictionaries(
            {
                "dataset": st.fixed_dictionaries(
                    {"name": st.just("ds"), "digest": st.just("d1"), "source_type": st.just("local"), "source": st.just("{}")}
                ),
                "tags": _tags(),
            }
        )
        return st.lists(dataset, max_size=1)
    if name == "datasets":
        return st.just([{"dataset_name": "ds", "dataset_digest": "d1"}])
    if name == "models":
        return st.just([{"model_id": model, "step": 0}] if op == "log_outputs" else [{"model_id": model}])
    if name in ("model_config", "model_configs"):
        config = st.fixed_dictionaries(
            {
                "model_definition_id": st.just(seeds["model_definition_id"]),
                "linkage_type": st.sampled_from(("PRIMARY", "FALLBACK")),
                "weight": st.floats(0, 1),
            }
        )
        return config if name == "model_config" else st.lists(config, min_size=1, max_size=1)
    if name == "fallback_config":
        return st.fixed_dictionaries({"strategy": st.just("SEQUENTIAL"), "max_attempts": st.integers(1, 3)})
    if name == "assessment":
        return st.fixed_dictionaries(
            {
                "assessment_name": st.just("quality"),
                "trace_id": st.just(seeds["trace_id"]),
                "source": st.just({"source_type": "HUMAN", "source_id": "fuzz"}),
                "feedback": st.fixed_dictionaries({"value": st.one_of(st.booleans(), st.integers(0, 5), st.just("ok"))}),
            }
        )
    if name == "trace":
        info = st.fixed_dictionaries(
            {
                "trace_id": st.builds(lambda: f"tr-{uuid.uuid4().hex}"),
                "trace_location": st.just({"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": exp}}),
                "request_time": st.just("2024-01-01T00:00:00Z"),
                "state": st.sampled_from(("OK", "IN_PROGRESS")),
            }
        )
        return st.fixed_dictionaries({"trace_info": info})
    if name == "locations":
        return st.just([{"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": exp}}])
    if name in ("prompt_parameters", "model_parameters", "model_output_parameters"):
        return st.lists(st.fixed_dictionaries({"key": _key(), "value": st.one_of(_text(), st.integers(0, 9))}), min_size=1, max_size=2)
    if name == "prompt_versions":
        return st.lists(st.fixed_dictionaries({"name": st.just("fz-prompt"), "version": st.sampled_from(("1", "2"))}), max_size=2)
    if name == "parts":
        return st.just([{"part_number": 1, "etag": "e"}])
    if name == "order_by" and op == "search_logged_models":
        return st.just([{"field_name": "creation_timestamp", "ascending": False}])
    if name == "records" and op == "upsert_dataset_records":
        record = {"inputs": {"question": "q"}, "expectations": {"answer": "a"}}
        return st.just(json.dumps([record]))
    if name in ("secret_value", "auth_config"):
        return st.just({"api_key": "sk-fuzz"} if name == "secret_value" else {})
    if name == "variables":
        return st.just({"data": {"runId": run}})
    if name == "resourceSpans":
        return st.just([])
    if name == "records":
        return st.just([])
    return None


def good_value(op: str, name: str, kind: str, seeds: Mapping[str, Any]) -> st.SearchStrategy[Any]:
    """A plausible value of ``name`` for ``op``: seeded ids, fresh names, small numbers, well-formed messages."""
    nested = _nested(name, op, seeds)
    if nested is not None:
        return nested
    ids = {
        "experiment_id": seeds["experiment_id"],
        "run_id": seeds["run_id"],
        "run_uuid": seeds["run_id"],
        "model_id": seeds["model_id"],
        "dataset_id": seeds["dataset_id"],
        "trace_id": seeds["trace_id"],
        "request_id": seeds["trace_id"],
        "secret_id": seeds["secret_id"],
        "endpoint_id": seeds["endpoint_id"],
        "model_definition_id": seeds["model_definition_id"],
        "webhook_id": seeds["webhook_id"],
        "job_id": seeds["job_id"],
        "issue_id": seeds["issue_id"],
        "guardrail_id": seeds["guardrail_id"],
        "scorer_id": seeds["scorer_id"],
        "resource_id": "scorer-fuzz",
        "username": seeds.get("username", "fuzz-user"),
    }
    lists = {
        "experiment_ids": [seeds["experiment_id"]],
        "run_ids": [seeds["run_id"]],
        "run_id": [seeds["run_id"]],
        "trace_ids": [seeds["trace_id"]],
        "request_ids": [seeds["trace_id"]],
        "scorer_ids": [seeds["scorer_id"]],
        "dataset_record_ids": [seeds["record_id"]],
        "stages": ["Production", "None"],
    }
    if kind.startswith("[") and name in lists:
        return st.just(lists[name])
    if name in ids:
        return st.just(ids[name])
    if name == "model" and op == "invoke":
        return st.just(seeds["endpoint_name"])  # the gateway runtime's endpoint (its provider is the mock)
    if name == "messages" and op == "invoke":
        return st.lists(st.fixed_dictionaries({"role": st.sampled_from(("user", "system")), "content": _text()}), min_size=1, max_size=2)
    if name == "name":
        if _REGISTRY_NAME_OPS.search(op):
            return st.just(seeds["model_name"]) if not op.startswith("create_registered") else fresh_name()
        if op in _SCORER_OPS:
            return st.just(seeds["scorer_name"])
        if op == "get_gateway_endpoint":
            return st.just(seeds["endpoint_name"])
        return fresh_name()
    if name in ("new_name", "secret_name", "experiment_name"):
        return st.just(seeds["experiment_name"]) if name == "experiment_name" else fresh_name()
    if name == "version":
        return st.just(1) if kind == "int32" else st.just(seeds["model_version"])
    scalars: dict[str, st.SearchStrategy[Any]] = {
        "key": _key(),
        "value": st.floats(-1e6, 1e6) if kind == "double" else _text(),
        "max_results": st.integers(1, 5),
        "filter": st.sampled_from(("", "name LIKE 'fz%'")),
        "filter_string": st.just(""),
        "order_by": st.just([]),
        "view_type": st.sampled_from(("ACTIVE_ONLY", "ALL")),
        "run_view_type": st.sampled_from(("ACTIVE_ONLY", "ALL")),
        "status": st.just("FINISHED" if op == "update_run" else "READY"),
        "timestamp": st.integers(0, 2**41),
        "start_time": st.integers(0, 2**41),
        "end_time": st.integers(0, 2**41),
        "step": st.integers(0, 10),
        "stage": st.sampled_from(("BEFORE", "AFTER"))
        if "guardrail" in op
        else st.sampled_from(("Staging", "Production", "Archived", "None")),
        **({"action": st.sampled_from(("VALIDATION", "SANITIZATION"))} if "guardrail" in op else {}),
        "scorer_version": st.just(1),
        "execution_order": st.integers(0, 5),
        "alias": st.just("champion"),
        "path": st.just("model/MLmodel"),
        "artifact_file_path": st.just("MLmodel"),
        "provider": st.just("openai"),
        "model_name": st.just("gpt-4o"),
        "resource_type": st.just("scorer"),
        "serialized_scorer": st.just(json.dumps({"name": "fuzz"})),
        "source": st.just(f"runs:/{seeds['run_id']}/model" if op == "create_model_version" else "{}"),
        "sample_rate": st.floats(0, 1),
        "metric_key": st.just("m"),
        "model_json": st.just(json.dumps({"artifact_path": "model", "flavors": {}})),
        "routing_strategy": st.just("REQUEST_BASED_TRAFFIC_SPLIT"),
        "permission": st.sampled_from(("READ", "EDIT", "MANAGE", "NO_PERMISSIONS")),
        "password": st.just("fuzz-password-1"),
        "query": st.just('query { mlflowGetRun(input: {runId: "' + seeds["run_id"] + '"}) { run { info { runId } } } }'),
        "tags": st.just(json.dumps({"k": "v"})),
        "schema": st.just("{}"),
        "profile": st.just("{}"),
    }
    if name in scalars:
        return scalars[name]
    base = kind.strip("[]")
    scalar = {
        "string": st.sampled_from(("fuzz", "")),
        "int32": st.integers(0, 10),
        "int64": st.integers(0, 2**41),
        "double": st.floats(-1.0, 1.0),
        "bool": st.booleans(),
        "enum": st.just(0),
        "message": st.just({}),
        "map": st.just({}),
    }[base]
    return st.lists(scalar, max_size=2) if kind.startswith("[") else scalar


# The gateway runtime's routes behind its one greedy path: unified chat, the OpenAI passthroughs, the endpoint's
# invocations and its raw proxy (each reads the body its own way).
GATEWAY_RUNTIME_PATHS = (
    "mlflow/v1/chat/completions",
    "openai/v1/chat/completions",
    "openai/v1/embeddings",
    "openai/v1/responses",
    "{endpoint}/mlflow/invocations",
    "proxy/{endpoint}/v1/chat/completions",
)


def good_path_param(name: str, route: routes.Route, seeds: Mapping[str, Any]) -> str:
    if name == "path":
        if route.feature == "gateway_runtime":
            return "mlflow/v1/chat/completions"  # the endpoint is named by the body's model (see path_params)
        return seeds["static_path"] if route.feature == "ui" else seeds["artifact_path"]
    if route.operation.endswith(("mcp_server", "mcp_servers")) or "_mcp_" in route.operation:
        return {
            "name": urllib.parse.quote(seeds["mcp_name"], safe=""),
            "version": "1.0.0",
            "alias": "champion",
            "endpoint_id": seeds["mcp_endpoint_id"],
            "key": "k",
        }[name]
    if "skill" in route.operation:
        return {"organization": "fuzz", "name": seeds["skill_name"], "version": "1", "alias": "champion", "key": "k"}[name]
    return {
        "model_id": seeds["model_id"],
        "dataset_id": seeds["dataset_id"],
        "trace_id": seeds["trace_id"],
        "request_id": seeds["trace_id"],
        "assessment_id": seeds["assessment_id"],
        "webhook_id": seeds["webhook_id"],
        "job_id": seeds["job_id"],
        "issue_id": seeds["issue_id"],
        "workspace_name": "default",
        "tag_key": "k",
        "key": "k",
    }[name]


@st.composite
def path_params(draw: Any, plan: RoutePlan, seeds: Mapping[str, Any], hostile: bool) -> dict[str, str]:
    out = {}
    for name in plan.path_params:
        good = good_path_param(name, plan.route, seeds)
        if plan.route.feature == "gateway_runtime":
            good = draw(st.sampled_from(GATEWAY_RUNTIME_PATHS)).replace("{endpoint}", seeds["endpoint_name"])
        out[name] = draw(st.one_of(values.odd_strings(), st.just(good + draw(values.odd_strings())))) if hostile else good
    return out


def mutate(draw: Any, value: Any) -> Any:
    """``value`` with one place inside it (a list entry, a dict value or a key) replaced by a hostile value."""
    if isinstance(value, dict) and value and draw(st.booleans()):
        key = draw(st.sampled_from(sorted(value)))
        out = dict(value)
        if draw(st.integers(0, 4)) == 0:
            out[draw(values.odd_strings())] = out.pop(key)
        else:
            out[key] = mutate(draw, value[key])
        return out
    if isinstance(value, list) and value and draw(st.booleans()):
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], mutate(draw, value[index]), *value[index + 1 :]]
    return draw(values.bad_values())


@st.composite
def messages(draw: Any, plan: RoutePlan, seeds: Mapping[str, Any]) -> dict[str, Any]:
    """A request message: every field good or left out, and one to three fields (or places inside a nested
    message) hostile; now and then an unknown field."""
    names = sorted(plan.fields)
    hostile = set(draw(st.lists(st.sampled_from(names), min_size=1, max_size=min(3, len(names)), unique=True))) if names else set()
    out: dict[str, Any] = {}
    for name in names:
        kind = plan.fields[name]
        if name in hostile:
            good = draw(good_value(plan.operation, name, kind, seeds))
            out[name] = mutate(draw, good) if isinstance(good, (dict, list)) and draw(st.booleans()) else draw(values.bad_values())
        elif draw(st.integers(0, 5)) > 0:
            out[name] = draw(good_value(plan.operation, name, kind, seeds))
    if draw(st.integers(0, 9)) == 0:
        out[draw(values.odd_strings())] = draw(values.bad_values())
    return out
