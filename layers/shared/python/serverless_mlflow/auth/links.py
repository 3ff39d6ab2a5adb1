"""Second resources: what a request links to, reads from or writes onto besides the resource it is addressed to.

MLflow's auth app checks these too (``_validate_can_update_run_and_models``, ``validate_can_create_model_version``,
``validate_can_create_logged_model``, ``validate_can_read_online_scoring_configs``, ...): metrics logged onto a
logged model, a model version registered from a run, a logged model or another model's version, a logged
model created from a run. Where MLflow has no check but the request would change or expose another user's
resource, a locator here closes it too: a model version whose source is an S3 location under another
experiment (MLflow accepts any ``s3://`` source), a trace started or exported under an id that already
belongs to a trace of another experiment (MLflow's store moves that trace, or appends the spans to it).

Each locator answers the resources whose permission the request needs, ``[]`` when it names none, or None
when it names one that cannot be found (denied to non-admins, as MLflow does: a 403 is no oracle for which
ids exist). Locators read the fields where the feature reads them, and cost a GetItem per distinct id.
"""

from __future__ import annotations

import os
import re
import urllib.parse
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth.permissions import EXPERIMENT
from serverless_mlflow.auth.resources import Resource, model_kind, runs_of
from serverless_mlflow.storage import schema, table
from serverless_mlflow.store import artifact_locations

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

# Ids past this length name nothing (DynamoDB keys are at most 2,048 bytes): judged as unknown.
_MAX_ID_BYTES = 1024


def _string_id(value: Any) -> str | None:
    if not isinstance(value, str) or not value or len(value.encode("utf-8", "surrogatepass")) > _MAX_ID_BYTES:
        return None
    return value


def logged_models_of(model_ids: list[Any]) -> list[Resource] | None:
    """The experiment of each logged model; None when one does not exist."""
    from serverless_mlflow.store.logged_models import experiment_of

    out: list[Resource] = []
    for model_id in dict.fromkeys(model_ids):
        found = _string_id(model_id)
        experiment_id = experiment_of(found) if found else None
        if experiment_id is None:
            return None
        out.append((EXPERIMENT, experiment_id))
    return out


def _entries(value: Any) -> list[dict[str, Any]]:
    return [entry for entry in value if isinstance(entry, dict)] if isinstance(value, list) else []


def _ids_in(entries: list[dict[str, Any]], field: str) -> list[str]:
    """Values of ``field`` the feature would act on: strings, not empty (proto3 reads "" as unset). Any other
    type names nothing here: the feature's parser refuses it with MLflow's 400."""
    return [entry[field] for entry in entries if isinstance(entry.get(field), str) and entry[field]]


# --- runs: metrics, inputs and outputs onto logged models ---------------------------------------------


def metric_model(req: Request) -> list[Resource] | None:
    """LogMetric's ``model_id``: the metric is also written onto that logged model."""
    return logged_models_of(_ids_in([req.json], "model_id"))


def batch_metric_models(req: Request) -> list[Resource] | None:
    """LogBatch: each metric's ``model_id``."""
    return logged_models_of(_ids_in(_entries(req.json.get("metrics")), "model_id"))


def linked_models(req: Request) -> list[Resource] | None:
    """LogInputs / LogOutputs: ``models[].model_id`` are linked to the run (and the run to them)."""
    return logged_models_of(_ids_in(_entries(req.json.get("models")), "model_id"))


# --- logged models --------------------------------------------------------------------------------------


def source_run(req: Request) -> list[Resource] | None:
    """CreateLoggedModel's ``source_run_id`` (READ: the model records, and its page shows, that run)."""
    return runs_of(_ids_in([req.json], "source_run_id"))


# --- model versions -------------------------------------------------------------------------------------


def version_sources(req: Request) -> list[Resource] | None:
    """CreateModelVersion: what the new version reads its files from or names as its lineage (READ on each).

    MLflow's ``validate_can_create_model_version``: a ``models:/<name>/<version>`` source is governed by that
    registered model (or prompt) alone; otherwise a present ``run_id`` and ``model_id`` (present even when
    empty: an explicit empty id denies) and a ``models:/<model_id>`` source. A source the registry does not tie
    to ``run_id`` / ``model_id`` (S3 and other stores, where MLflow checks nothing) is judged by the
    experiment, run, logged model or trace whose artifacts hold it (``storage_owners``).
    """
    body = req.json
    source = body.get("source")
    scheme = urllib.parse.urlparse(source).scheme if isinstance(source, str) else None
    out: list[Resource] = []
    if scheme == "models":
        name, model_id = _models_uri(source)
        if name is not None:
            kind = model_kind(name)
            return [(kind, name)] if kind else None
        if model_id is not None:
            found = logged_models_of([model_id])
            if found is None:
                return None
            out += found
    for field, locate in (("run_id", runs_of), ("model_id", logged_models_of)):
        value = body.get(field)
        if not isinstance(value, str):
            continue  # absent, or a type the registry's parser refuses
        named = locate([value]) if value else None
        if named is None:
            return None
        out += named
    if isinstance(source, str) and scheme not in _TIED_SCHEMES and not _is_artifact_route(source):
        out += storage_owners(source)
    return out


def _models_uri(source: str) -> tuple[str | None, str | None]:
    """(registered model name, logged model id) of a ``models:/`` URI as MLflow's ``_parse_model_uri`` reads
    it; (None, None) when it is malformed (the registry answers that)."""
    path = urllib.parse.urlparse(source, allow_fragments=False).path
    parts = path.lstrip("/").split("/")
    if not path.startswith("/") or len(path) <= 1 or len(parts) > 2 or not parts[0].strip():
        return None, None
    if len(parts) == 2:
        return (parts[0], None) if parts[1].strip() else (None, None)
    if "@" in path:
        name, _, alias = parts[0].rpartition("@")
        return (name, None) if alias.strip() else (None, None)
    return None, parts[0]


# Schemes the registry ties to run_id / model_id itself (the source must lie in that run's or model's
# artifacts, MLflow's source validation), whose ids were judged above.
_TIED_SCHEMES = frozenset({"", "file", "runs", "models", "mlflow-artifacts"})
_ARTIFACT_ROUTE = ("api", "2.0", "mlflow-artifacts", "artifacts")
_EXPERIMENT_SEGMENT = re.compile(r"^\d+$")
_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


def _is_artifact_route(uri: str) -> bool:
    parsed = urllib.parse.urlparse(uri)
    parts = tuple(part for part in parsed.path.split("/") if part)
    size = len(_ARTIFACT_ROUTE)
    return parsed.scheme in ("http", "https") and any(parts[i : i + size] == _ARTIFACT_ROUTE for i in range(len(parts) - size + 1))


def storage_owners(uri: str) -> list[Resource]:
    """Who owns the files under ``uri``: in this stack's artifact store (``s3://<bucket>/<prefix>/<path>``, the
    same objects as ``mlflow-artifacts:/<path>``) the experiment the path starts with, as the proxied artifact
    routes judge a path; in any store, each existing run (``<run_id>/artifacts``), logged model
    (``models/<model_id>``) and trace (``traces/<trace_id>``) the path names."""
    from serverless_mlflow.store.logged_models import experiment_of

    parsed = urllib.parse.urlparse(uri)
    segments = [urllib.parse.unquote(segment) for segment in parsed.path.split("/") if segment]
    out: list[Resource] = []
    prefix = [segment for segment in artifact_locations.artifacts_prefix().split("/") if segment]
    if parsed.scheme == "s3" and parsed.netloc == os.environ.get("BUCKET_NAME") and segments[: len(prefix)] == prefix:
        relative = segments[len(prefix) :]
        if relative and _EXPERIMENT_SEGMENT.match(relative[0]):
            out.append((EXPERIMENT, relative[0]))
    for segment, following in zip(segments, [*segments[1:], ""], strict=True):
        if following == "artifacts" and _RUN_ID.match(segment):
            out += runs_of([segment]) or []
        elif segment == "models" and _string_id(following):
            out += [(EXPERIMENT, experiment_id)] if (experiment_id := experiment_of(following)) else []
        elif segment == "traces" and following.startswith("tr-"):
            out += [(EXPERIMENT, experiment_id)] if (experiment_id := _trace_experiment(following)) else []
    return out


# --- traces ---------------------------------------------------------------------------------------------


def _trace_experiment(trace_id: str) -> str | None:
    found = _string_id(trace_id)
    locator = table.get(schema.entity("trace_locator").key(trace_id=found), projection="experiment_id") if found else None
    return str(locator["experiment_id"]) if locator and "experiment_id" in locator else None


def started_trace_owner(req: Request) -> list[Resource]:
    """StartTraceV3 under a trace id that already exists: the trace's experiment (UPDATE), or MLflow's store
    would move another experiment's trace into the caller's."""
    trace = req.json.get("trace")
    info = trace.get("trace_info") if isinstance(trace, dict) else None
    trace_id = info.get("trace_id") if isinstance(info, dict) else None
    experiment_id = _trace_experiment(trace_id) if isinstance(trace_id, str) else None
    return [(EXPERIMENT, experiment_id)] if experiment_id is not None else []


def exported_trace_owners(req: Request) -> list[Resource]:
    """OTLP spans joining traces that already exist: each trace's experiment (UPDATE). A body the endpoint
    refuses names nothing here (the feature answers its error)."""
    from serverless_mlflow.request import otlp

    try:
        trace_ids = otlp.trace_ids(otlp.request_of(req))
    except otlp.OtlpError:
        return []
    if not trace_ids:
        return []
    keys = [schema.entity("trace_locator").key(trace_id=trace_id) for trace_id in trace_ids]
    found = table.batch_get(keys)
    return [(EXPERIMENT, str(item["experiment_id"])) for item in found if "experiment_id" in item]


# --- GenAI evaluation -----------------------------------------------------------------------------------


def scoring_config_experiments(req: Request) -> list[Resource]:
    """GetOnlineScoringConfigs: the experiment of every config found for ``scorer_ids`` (READ), as MLflow's
    ``validate_can_read_online_scoring_configs``; scorers without a config name nothing."""
    ids = req.query.get("scorer_ids", []) if req.method == "GET" else req.json.get("scorer_ids") or []
    wanted = [i for i in dict.fromkeys(ids if isinstance(ids, list) else []) if _string_id(i)]
    if not wanted:
        return []
    keys = [schema.entity("online_scoring_config").key(scorer_id=scorer_id) for scorer_id in wanted]
    return [(EXPERIMENT, str(item["experiment_id"])) for item in table.batch_get(keys)]
