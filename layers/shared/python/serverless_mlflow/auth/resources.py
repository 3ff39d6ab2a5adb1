"""How a request names the resource it acts on: locators used by the rule table (``rules/``).

Each locator takes the request and answers the ``(kind, resource id)`` whose permission governs it, or
``None`` when the resource cannot be found (MLflow then denies a non-admin: a 403 is no oracle for which
run ids exist). Label schemas, review queues and issues are the exception, as in MLflow: their checks
(``review.py``) look the resource up first and a missing one answers 404. Locators read parameters exactly where the feature reads them (query for GET, JSON body
otherwise, path parameters) and cost at most one GetItem.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth.permissions import EXPERIMENT, GATEWAY_ENDPOINT, PROMPT, REGISTERED_MODEL
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import schema, table

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

Resource = tuple[str, str]
Locator = Callable[["Request"], "list[Resource] | None"]
IS_PROMPT_TAG_KEY = "mlflow.prompt.is_prompt"


def param(req: Request, name: str) -> Any:
    """MLflow's ``_get_request_param``: query for GET/DELETE-without-body, JSON otherwise, then path params."""
    if req.method == "GET" or (req.method == "DELETE" and not req.raw_body):
        args: dict[str, Any] = {k: v[0] for k, v in req.query.items()}
    else:
        args = dict(req.json)
    args.update(req.path_params)
    if name not in args:
        if name == "run_id":
            return param(req, "run_uuid")
        raise invalid(f"Missing value for required parameter '{name}'. See the API docs for more information about request parameters.")
    return args[name]


def optional_param(req: Request, name: str) -> Any:
    try:
        return param(req, name)
    except MlflowError:
        return None


# --- experiments ------------------------------------------------------------------------------


def experiment(req: Request) -> list[Resource]:
    return [(EXPERIMENT, str(param(req, "experiment_id")))]


def optional_experiment(req: Request) -> list[Resource]:
    """``experiment_id`` when the request names one (ListScorers), else nothing."""
    experiment_id = optional_param(req, "experiment_id")
    return [(EXPERIMENT, str(experiment_id))] if experiment_id else []


def experiment_by_name(req: Request) -> list[Resource]:
    name = param(req, "experiment_name")
    claim = (
        table.get(schema.entity("experiment_name").key(workspace=request_workspace.current(), name=name)) if isinstance(name, str) else None
    )
    if claim is None:
        raise not_found(f"Could not find experiment with name {name}")
    return [(EXPERIMENT, str(claim["experiment_id"]))]


def run(req: Request) -> list[Resource] | None:
    return runs_of([param(req, "run_id")])


def run_in_query(req: Request) -> list[Resource] | None:
    """MLflow's ``_run_id_or_uuid_param``: ``run_id`` or ``run_uuid`` of the query string whatever the method
    (upload-artifact's body is the file itself)."""
    values = req.query.get("run_id") or req.query.get("run_uuid")
    if not values or not values[0]:
        raise invalid("Request must specify run_id or run_uuid parameter")
    return runs_of(values[:1])


def runs_param(name: str) -> Locator:
    def locate(req: Request) -> list[Resource] | None:
        ids = req.query.get(name, []) if req.method == "GET" else req.json.get(name) or []
        return runs_of(list(ids))

    return locate


def runs_of(run_ids: list[Any]) -> list[Resource] | None:
    """The experiment of each run; None when one is not a run id (the request is then denied)."""
    from serverless_mlflow.store.runs import find_experiment_id

    out = []
    for run_id in run_ids:
        experiment_id = find_experiment_id(run_id) if isinstance(run_id, str) else None
        if experiment_id is None:
            return None
        out.append((EXPERIMENT, experiment_id))
    return out


def logged_model(req: Request) -> list[Resource] | None:
    from serverless_mlflow.store.logged_models import experiment_of

    experiment_id = experiment_of(str(param(req, "model_id")))
    return [(EXPERIMENT, experiment_id)] if experiment_id else None


def run_or_logged_model(req: Request) -> list[Resource] | None:
    """CreatePresignedUploadUrl names a run or a logged model."""
    return run(req) if optional_param(req, "run_id") else logged_model(req)


# MLflow's ``_EXPERIMENT_ID_PATTERN``: with workspaces on, a non-default workspace's experiments keep their
# artifacts under ``workspaces/<workspace>/<experiment_id>/...`` (their default artifact location).
_ARTIFACT_EXPERIMENT = re.compile(r"^(?:workspaces/[^/]+/)?(\d+)(/|$)")


def artifact_path(req: Request) -> list[Resource]:
    """Proxied artifact paths are ``[workspaces/<ws>/]<experiment_id>/<run_id>/artifacts/...``; other paths have
    no experiment. The experiment's grants then judge it in the request's workspace (``checks.permissions_on``)."""
    path = req.path_params.get("path") or (req.query.get("path") or [""])[0]
    found = _ARTIFACT_EXPERIMENT.match(path.lstrip("/"))
    return [(EXPERIMENT, found.group(1))] if found else [(EXPERIMENT, "")]


# --- AI gateway ---------------------------------------------------------------------------------


def gateway_endpoint(req: Request) -> list[Resource]:
    """GetGatewayEndpoint names the endpoint by id or by name; a name that claims none answers 404 (MLflow's
    validator reads it with ``get_gateway_endpoint(name=...)``, whose not-found escapes it)."""
    from serverless_mlflow.llm_gateway.config import endpoint_id_of

    endpoint_id = optional_param(req, "endpoint_id")
    if not endpoint_id and (name := optional_param(req, "name")):
        endpoint_id = endpoint_id_of(str(name))
    return [(GATEWAY_ENDPOINT, str(endpoint_id or ""))]


# --- registry ---------------------------------------------------------------------------------


def model_kind(name: Any) -> str | None:
    """``prompt`` or ``registered_model`` from the persisted model (never the request body); None if absent."""
    if not isinstance(name, str) or not name:
        return None
    key = schema.entity("registered_model").key(model_name=name, model_scope=schema.model_scope(request_workspace.current()))
    item = table.get(key, projection="is_prompt, #n", names={"#n": "name"})
    if item is None:
        return None
    return PROMPT if item.get("is_prompt") else REGISTERED_MODEL


def registered_model(req: Request) -> list[Resource]:
    """The model or prompt; a missing one is judged as a registered model (the handler then answers 404)."""
    name = param(req, "name")
    return [(model_kind(name) or REGISTERED_MODEL, str(name))]


def model_version_parent(req: Request) -> list[Resource] | None:
    """Version routes: the parent model or prompt; a missing parent denies (MLflow's target is None)."""
    name = param(req, "name")
    kind = model_kind(name)
    return [(kind, name)] if kind else None


def created_model(req: Request) -> list[Resource]:
    """CreateRegisteredModel: the family comes from the request's tags (nothing is persisted yet)."""
    tags = req.json.get("tags") or []
    is_prompt = any(isinstance(t, dict) and t.get("key") == IS_PROMPT_TAG_KEY and str(t.get("value")).lower() == "true" for t in tags)
    return [(PROMPT if is_prompt else REGISTERED_MODEL, str(req.json.get("name") or "*"))]


def kind_wildcard(kind: str) -> Locator:
    return lambda _req: [(kind, "*")]


# --- experiments named in lists (UI dataset listing, trace searches, GenAI datasets) -----------------


def _nonempty(resources: list[Resource]) -> list[Resource] | None:
    """MLflow's ``bool(experiment_ids) and all(...)``: naming no experiment denies a non-admin."""
    return resources or None


def experiment_ids_param(req: Request) -> list[Resource] | None:
    """``experiment_ids`` from the JSON body, or repeated query keys on GET (``_experiment_ids_from_request``)."""
    ids = req.query.get("experiment_ids", []) if req.method == "GET" else req.json.get("experiment_ids") or []
    if not isinstance(ids, list):
        return None
    return _nonempty([(EXPERIMENT, str(i)) for i in ids])


# --- traces -------------------------------------------------------------------------------------


def _trace_experiments(trace_ids: list[Any]) -> list[Resource] | None:
    """Each trace's experiment from its locator item; an unknown trace denies (a 403 is no oracle)."""
    out = []
    for trace_id in trace_ids:
        if not isinstance(trace_id, str) or not trace_id:
            return None
        locator = table.get(schema.entity("trace_locator").key(trace_id=trace_id), projection="experiment_id")
        if locator is None or locator.get("experiment_id") is None:
            return None  # none, or only run links waiting for the trace (``pending_runs``): no trace yet
        out.append((EXPERIMENT, str(locator["experiment_id"])))
    return _nonempty(out)


def trace(req: Request) -> list[Resource] | None:
    """The trace of a path (``{trace_id}`` / v2 ``{request_id}``) or query (``trace_id`` / ``request_id``)."""
    trace_id = req.path_params.get("trace_id") or req.path_params.get("request_id")
    if not trace_id:
        trace_id = optional_param(req, "trace_id") or optional_param(req, "request_id")
    return _trace_experiments([trace_id])


def traces_param(name: str) -> Locator:
    def locate(req: Request) -> list[Resource] | None:
        ids = req.query.get(name, []) if req.method == "GET" else req.json.get(name) or []
        return _trace_experiments(list(ids)) if isinstance(ids, list) else None

    return locate


def trace_search_experiments(req: Request) -> list[Resource] | None:
    """SearchTraces v3 names experiments in ``locations``; v2 (and older v3 clients) in ``experiment_ids``."""
    locations = req.json.get("locations") if req.method != "GET" else None
    if isinstance(locations, list) and locations:
        ids = [((loc or {}).get("mlflow_experiment") or {}).get("experiment_id") for loc in locations if isinstance(loc, dict)]
        if len(ids) != len(locations) or not all(ids):
            return None
        return _nonempty([(EXPERIMENT, str(i)) for i in ids])
    return experiment_ids_param(req)


def started_trace_experiment(req: Request) -> list[Resource] | None:
    """StartTraceV3: ``trace.trace_info.trace_location.mlflow_experiment.experiment_id``."""
    info = ((req.json.get("trace") or {}).get("trace_info") or {}) if isinstance(req.json.get("trace"), dict) else {}
    experiment_id = ((info.get("trace_location") or {}).get("mlflow_experiment") or {}).get("experiment_id")
    return [(EXPERIMENT, str(experiment_id))] if experiment_id else None


def otlp_experiment(req: Request) -> list[Resource] | None:
    """OTLP exports name their experiment in the ``x-mlflow-experiment-id`` header."""
    experiment_id = req.headers.get("x-mlflow-experiment-id")
    return [(EXPERIMENT, experiment_id)] if experiment_id else None


# --- GenAI evaluation -----------------------------------------------------------------------------


def dataset_experiments(req: Request) -> list[Resource] | None:
    """A dataset is governed by the experiments it is linked to (MLflow's ``_dataset_experiment_permissions``)."""
    dataset_id = req.path_params.get("dataset_id") or optional_param(req, "dataset_id")
    if not isinstance(dataset_id, str) or not dataset_id:
        return None
    links = table.query(**schema.entity("evaluation_dataset_experiment").query("of_dataset", dataset_id=dataset_id))
    return _nonempty([(EXPERIMENT, str(item["experiment_id"])) for item in links])
