"""The route table: which feature Lambda answers which MLflow REST route.

One table serves three readers: the CDK stack (API Gateway HTTP API routes), the local runtime
(request -> handler), and each feature's handler (registering its operations with Powertools).
Paths use API Gateway syntax: ``{name}`` is one segment, ``{name+}`` is greedy. API Gateway picks the
most specific route, so literal routes (``/logged-models/search``) win over ``{model_id}``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    feature: str
    operation: str

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def powertools_rule(self) -> str:
        """Powertools resolver rule: greedy params become ``.+`` (read them from pathParameters)."""
        rule = re.sub(r"\{\w+\+\}", ".+", self.path)
        return re.sub(r"\{(\w+)\}", r"<\1>", rule)


M2 = "/api/2.0/mlflow"
M3 = "/api/3.0/mlflow"
ART = "/api/2.0/mlflow-artifacts"

_TABLE: tuple[tuple[str, str, str, str], ...] = (
    # --- meta -------------------------------------------------------------------------------
    ("GET", "/health", "meta", "health"),
    # Load balancers and uptime checks probe with HEAD (MLflow's Flask server answers HEAD for every GET).
    ("HEAD", "/health", "meta", "health"),
    ("GET", "/version", "meta", "version"),
    ("GET", f"{M3}/server-info", "meta", "server_info"),
    # --- experiments --------------------------------------------------------------------------
    ("POST", f"{M2}/experiments/create", "experiments", "create_experiment"),
    ("GET", f"{M2}/experiments/get", "experiments", "get_experiment"),
    ("GET", f"{M2}/experiments/get-by-name", "experiments", "get_experiment_by_name"),
    ("POST", f"{M2}/experiments/search", "experiments", "search_experiments"),
    ("GET", f"{M2}/experiments/search", "experiments", "search_experiments"),
    ("POST", f"{M2}/experiments/update", "experiments", "update_experiment"),
    ("POST", f"{M2}/experiments/delete", "experiments", "delete_experiment"),
    ("POST", f"{M2}/experiments/restore", "experiments", "restore_experiment"),
    ("POST", f"{M2}/experiments/set-experiment-tag", "experiments", "set_experiment_tag"),
    ("POST", f"{M2}/experiments/delete-experiment-tag", "experiments", "delete_experiment_tag"),
    # --- runs ---------------------------------------------------------------------------------
    ("POST", f"{M2}/runs/create", "runs", "create_run"),
    ("POST", f"{M2}/runs/update", "runs", "update_run"),
    ("POST", f"{M2}/runs/delete", "runs", "delete_run"),
    ("POST", f"{M2}/runs/restore", "runs", "restore_run"),
    ("GET", f"{M2}/runs/get", "runs", "get_run"),
    ("POST", f"{M2}/runs/search", "runs", "search_runs"),
    ("POST", f"{M2}/runs/log-metric", "runs", "log_metric"),
    ("POST", f"{M2}/runs/log-parameter", "runs", "log_param"),
    ("POST", f"{M2}/runs/set-tag", "runs", "set_tag"),
    ("POST", f"{M2}/runs/delete-tag", "runs", "delete_tag"),
    ("POST", f"{M2}/runs/log-batch", "runs", "log_batch"),
    ("POST", f"{M2}/runs/log-inputs", "runs", "log_inputs"),
    ("POST", f"{M2}/runs/outputs", "runs", "log_outputs"),
    ("POST", f"{M2}/runs/log-model", "runs", "log_model_json"),
    ("GET", f"{M2}/metrics/get-history", "runs", "get_metric_history"),
    ("GET", f"{M2}/metrics/get-history-bulk-interval", "runs", "get_metric_history_bulk_interval"),
    # --- logged models ------------------------------------------------------------------------
    ("POST", f"{M2}/logged-models", "logged_models", "create_logged_model"),
    ("POST", f"{M2}/logged-models/search", "logged_models", "search_logged_models"),
    ("GET", f"{M2}/logged-models/{{model_id}}", "logged_models", "get_logged_model"),
    ("PATCH", f"{M2}/logged-models/{{model_id}}", "logged_models", "finalize_logged_model"),
    ("DELETE", f"{M2}/logged-models/{{model_id}}", "logged_models", "delete_logged_model"),
    ("PATCH", f"{M2}/logged-models/{{model_id}}/tags", "logged_models", "set_logged_model_tags"),
    ("DELETE", f"{M2}/logged-models/{{model_id}}/tags/{{tag_key}}", "logged_models", "delete_logged_model_tag"),
    ("POST", f"{M2}/logged-models/{{model_id}}/params", "logged_models", "log_logged_model_params"),
    # --- model registry -----------------------------------------------------------------------
    ("POST", f"{M2}/registered-models/create", "registry", "create_registered_model"),
    ("POST", f"{M2}/registered-models/rename", "registry", "rename_registered_model"),
    ("PATCH", f"{M2}/registered-models/update", "registry", "update_registered_model"),
    ("DELETE", f"{M2}/registered-models/delete", "registry", "delete_registered_model"),
    ("GET", f"{M2}/registered-models/get", "registry", "get_registered_model"),
    ("GET", f"{M2}/registered-models/search", "registry", "search_registered_models"),
    ("POST", f"{M2}/registered-models/get-latest-versions", "registry", "get_latest_versions"),
    ("GET", f"{M2}/registered-models/get-latest-versions", "registry", "get_latest_versions"),
    ("POST", f"{M2}/registered-models/set-tag", "registry", "set_registered_model_tag"),
    ("DELETE", f"{M2}/registered-models/delete-tag", "registry", "delete_registered_model_tag"),
    ("POST", f"{M2}/registered-models/alias", "registry", "set_registered_model_alias"),
    ("DELETE", f"{M2}/registered-models/alias", "registry", "delete_registered_model_alias"),
    ("GET", f"{M2}/registered-models/alias", "registry", "get_model_version_by_alias"),
    ("POST", f"{M2}/model-versions/create", "registry", "create_model_version"),
    ("PATCH", f"{M2}/model-versions/update", "registry", "update_model_version"),
    ("POST", f"{M2}/model-versions/transition-stage", "registry", "transition_model_version_stage"),
    ("DELETE", f"{M2}/model-versions/delete", "registry", "delete_model_version"),
    ("GET", f"{M2}/model-versions/get", "registry", "get_model_version"),
    ("GET", f"{M2}/model-versions/search", "registry", "search_model_versions"),
    ("GET", f"{M2}/model-versions/get-download-uri", "registry", "get_model_version_download_uri"),
    ("POST", f"{M2}/model-versions/set-tag", "registry", "set_model_version_tag"),
    ("DELETE", f"{M2}/model-versions/delete-tag", "registry", "delete_model_version_tag"),
    # --- traces (MLflow 3 tracing; tags, delete-traces and link-to-run stay on /api/2.0 in the client) ---
    ("POST", "/v1/traces", "traces", "otlp_traces"),
    ("POST", f"{M3}/traces", "traces", "start_trace"),
    ("GET", f"{M3}/traces/{{trace_id}}", "traces", "get_trace_info"),
    ("GET", f"{M3}/traces/get", "traces", "get_trace"),
    ("GET", f"{M3}/traces/batchGet", "traces", "batch_get_traces"),
    ("POST", f"{M3}/traces/batchGetInfos", "traces", "batch_get_trace_infos"),
    ("POST", f"{M3}/traces/search", "traces", "search_traces"),
    ("PATCH", f"{M3}/traces/{{trace_id}}/tags", "traces", "set_trace_tag"),
    ("DELETE", f"{M3}/traces/{{trace_id}}/tags", "traces", "delete_trace_tag"),
    ("POST", f"{M3}/traces/delete-traces", "traces", "delete_traces"),
    ("POST", f"{M3}/traces/{{trace_id}}/assessments", "traces", "create_assessment"),
    ("GET", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "get_assessment"),
    ("PATCH", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "update_assessment"),
    ("DELETE", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "delete_assessment"),
    ("GET", f"{M2}/traces", "traces", "search_traces_v2"),
    ("GET", f"{M2}/traces/{{request_id}}/info", "traces", "get_trace_info_v2"),
    ("PATCH", f"{M2}/traces/{{request_id}}/tags", "traces", "set_trace_tag"),
    ("DELETE", f"{M2}/traces/{{request_id}}/tags", "traces", "delete_trace_tag"),
    ("POST", f"{M2}/traces/delete-traces", "traces", "delete_traces"),
    ("POST", f"{M2}/traces/link-to-run", "traces", "link_traces_to_run"),
    # The UI's download of a trace's data (MLflow serves it on the ajax prefix only).
    ("GET", "/ajax-api/2.0/mlflow/get-trace-artifact", "traces", "get_trace_artifact"),
    ("GET", "/ajax-api/3.0/mlflow/get-trace-artifact", "traces", "get_trace_artifact"),
    # --- artifacts (presigned S3; no artifact bytes through Lambda beyond small PUTs) ---------
    ("GET", f"{ART}/artifacts", "artifacts", "list_artifacts"),
    ("GET", f"{ART}/artifacts/{{path+}}", "artifacts", "download_artifact"),
    ("PUT", f"{ART}/artifacts/{{path+}}", "artifacts", "upload_artifact"),
    ("DELETE", f"{ART}/artifacts/{{path+}}", "artifacts", "delete_artifact"),
    ("POST", f"{ART}/mpu/create/{{path+}}", "artifacts", "create_multipart_upload"),
    ("POST", f"{ART}/mpu/complete/{{path+}}", "artifacts", "complete_multipart_upload"),
    ("POST", f"{ART}/mpu/abort/{{path+}}", "artifacts", "abort_multipart_upload"),
    ("GET", f"{ART}/presigned/{{path+}}", "artifacts", "presigned_download"),
)

ROUTES: tuple[Route, ...] = tuple(Route(*row) for row in _TABLE)

# Anything the table does not name is answered by the meta feature with ENDPOINT_NOT_FOUND
# (API Gateway's own 404 body would break the client's fallbacks).
DEFAULT_FEATURE = "meta"


def features() -> list[str]:
    return sorted({route.feature for route in ROUTES})


def routes_for(feature: str) -> list[Route]:
    return [route for route in ROUTES if route.feature == feature]


@cache
def _compiled() -> list[tuple[re.Pattern[str], Route, int]]:
    compiled = []
    for route in ROUTES:
        pattern = re.sub(r"\\\{(\w+)\\\+\\\}", r"(?P<\1>.+)", re.escape(route.path))
        pattern = re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>[^/]+)", pattern)
        literal_chars = len(re.sub(r"\{\w+\+?\}", "", route.path))
        compiled.append((re.compile(f"^{pattern}$"), route, literal_chars))
    return compiled


def match(method: str, path: str) -> tuple[Route, dict[str, str]] | None:
    """The route API Gateway would pick: exact method, most literal characters wins."""
    best: tuple[Route, dict[str, str], int] | None = None
    for pattern, route, literal_chars in _compiled():
        if route.method != method:
            continue
        found = pattern.match(path)
        if found and (best is None or literal_chars > best[2]):
            best = (route, found.groupdict(), literal_chars)
    return (best[0], best[1]) if best else None
