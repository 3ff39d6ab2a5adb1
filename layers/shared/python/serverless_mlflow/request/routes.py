"""The route table: which feature Lambda answers which MLflow REST route.

One table serves three readers: the CDK stack (API Gateway HTTP API routes), the local runtime
(request -> handler), and each feature's handler (registering its operations with Powertools).
Paths use API Gateway syntax: ``{name}`` is one segment, ``{name+}`` is greedy. API Gateway picks the
most specific route, so literal routes (``/logged-models/search``) win over ``{model_id}``.

The web UI calls every REST route under ``/ajax-api/`` instead of ``/api/`` (MLflow serves both). Doubling
the API Gateway routes would eat the HTTP API's route quota (300), so the gateway gets one greedy
``ANY /ajax-api/<version>/<service>/<group>/{proxy+}`` route per route group (``runs``, ``experiments``,
...) to the group's feature (``http_api.gateway_routes``); the feature's handler maps the path back to ``/api/``
before matching (``route_match.operation_path``). UI-only routes that MLflow serves under ``/ajax-api/`` alone are
written with that prefix in the table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    feature: str
    operation: str

    @property
    def public(self) -> bool:
        """Answers without credentials in ``authorization=basic`` mode (no authorizer on the route)."""
        return self.operation in PUBLIC_OPERATIONS

    @property
    def route_key(self) -> str:
        return f"{self.method} {self.path}"

    @property
    def powertools_rule(self) -> str:
        """Powertools resolver rule: greedy params become ``(.+)`` groups (read them from pathParameters).

        A group, so that Powertools counts the rule as dynamic: it tries rules without groups first, and a bare
        ``.+`` (``GET mcp-servers/{name+}``) would then shadow ``mcp-servers/{name+}/endpoints/{endpoint_id}``.
        Dynamic rules are tried in table order, which lists the most specific first."""
        rule = re.sub(r"\{\w+\+\}", "(.+)", self.path)
        return re.sub(r"\{(\w+)\}", r"<\1>", rule)


# Operations that answer without credentials under basic auth (MLflow's unprotected routes: health checks,
# capability discovery) plus the browser's login entry point, which asks for credentials itself.
PUBLIC_OPERATIONS: frozenset[str] = frozenset({"health", "server_info", "login", "signup", "index", "static_file"})

M2 = "/api/2.0/mlflow"
M3 = "/api/3.0/mlflow"
ART = "/api/2.0/mlflow-artifacts"
MCP = f"{M3}/mcp-servers"
SKILLS = f"{M3}/skills"
API_PREFIX = "/api/"
AJAX_PREFIX = "/ajax-api/"
# UI-only routes MLflow serves under /ajax-api/ alone.
AJAX2 = "/ajax-api/2.0/mlflow"
AJAX3 = "/ajax-api/3.0/mlflow"
JOBS = "/ajax-api/3.0/jobs"

_TABLE: tuple[tuple[str, str, str, str], ...] = (
    # --- meta -------------------------------------------------------------------------------
    ("GET", "/health", "meta", "health"),
    # Load balancers and uptime checks probe with HEAD (MLflow's Flask server answers HEAD for every GET).
    ("HEAD", "/health", "meta", "health"),
    ("GET", "/version", "meta", "version"),
    ("GET", f"{M3}/server-info", "meta", "server_info"),
    ("GET", f"{AJAX3}/ui-telemetry", "meta", "get_ui_telemetry"),
    ("POST", f"{AJAX3}/ui-telemetry", "meta", "post_ui_telemetry"),
    # The runs table probes the AI gateway's endpoints; the assistant panel reads its (empty) configuration.
    ("GET", f"{AJAX2}/gateway-proxy", "meta", "gateway_proxy"),
    ("POST", f"{AJAX2}/gateway-proxy", "meta", "gateway_proxy"),
    ("GET", f"{AJAX3}/assistant/config", "meta", "get_assistant_config"),
    ("GET", f"{AJAX3}/assistant/providers", "meta", "get_assistant_providers"),
    # Workspaces (served when the operator enables them), behind the greedy ``{M3}/workspaces`` family.
    ("GET", f"{M3}/workspaces", "experiments", "list_workspaces"),
    ("POST", f"{M3}/workspaces", "experiments", "create_workspace"),
    ("GET", f"{M3}/workspaces/{{workspace_name}}", "experiments", "get_workspace"),
    ("PATCH", f"{M3}/workspaces/{{workspace_name}}", "experiments", "update_workspace"),
    ("DELETE", f"{M3}/workspaces/{{workspace_name}}", "experiments", "delete_workspace"),
    # --- web UI: the static build of the mlflow wheel (index.html at the root) ---------------------
    ("GET", "/", "ui", "index"),
    ("GET", "/static-files/{path+}", "ui", "static_file"),
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
    ("GET", f"{AJAX2}/metrics/get-history-bulk", "runs", "get_metric_history_bulk"),
    ("POST", f"{AJAX2}/experiments/search-datasets", "runs", "search_datasets"),
    # The UI's GraphQL queries (runs, their experiment and model versions, sampled metric history).
    ("POST", "/graphql", "runs", "graphql"),
    ("GET", "/graphql", "runs", "graphql"),
    # The prompt engineering UI's run: a run, its params and tags, and the promptlab model's files in its artifacts.
    ("POST", f"{AJAX2}/runs/create-promptlab-run", "runs", "create_promptlab_run"),
    # MLflow 3.18's prompt-optimization jobs: a run of the experiment tracks each (greedy family: GREEDY_FAMILIES).
    ("POST", f"{M3}/prompt-optimization/jobs", "runs", "create_prompt_optimization_job"),
    ("GET", f"{M3}/prompt-optimization/jobs/search", "runs", "search_prompt_optimization_jobs"),
    ("POST", f"{M3}/prompt-optimization/jobs/search", "runs", "search_prompt_optimization_jobs"),
    ("GET", f"{M3}/prompt-optimization/jobs/{{job_id}}", "runs", "get_prompt_optimization_job"),
    ("DELETE", f"{M3}/prompt-optimization/jobs/{{job_id}}", "runs", "delete_prompt_optimization_job"),
    ("POST", f"{M3}/prompt-optimization/jobs/{{job_id}}/cancel", "runs", "cancel_prompt_optimization_job"),
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
    # --- GenAI evaluation: datasets and scorers -----------------------------------------------
    ("POST", f"{M3}/datasets/create", "evaluation", "create_dataset"),
    ("POST", f"{M3}/datasets/search", "evaluation", "search_datasets"),
    ("GET", f"{M3}/datasets/search", "evaluation", "search_datasets"),
    ("GET", f"{M3}/datasets/{{dataset_id}}", "evaluation", "get_dataset"),
    ("DELETE", f"{M3}/datasets/{{dataset_id}}", "evaluation", "delete_dataset"),
    ("PATCH", f"{M3}/datasets/{{dataset_id}}/tags", "evaluation", "set_dataset_tags"),
    ("DELETE", f"{M3}/datasets/{{dataset_id}}/tags/{{key}}", "evaluation", "delete_dataset_tag"),
    ("POST", f"{M3}/datasets/{{dataset_id}}/records", "evaluation", "upsert_dataset_records"),
    ("GET", f"{M3}/datasets/{{dataset_id}}/records", "evaluation", "get_dataset_records"),
    ("DELETE", f"{M3}/datasets/{{dataset_id}}/records", "evaluation", "delete_dataset_records"),
    ("GET", f"{M3}/datasets/{{dataset_id}}/experiment-ids", "evaluation", "get_dataset_experiment_ids"),
    ("POST", f"{M3}/datasets/{{dataset_id}}/add-experiments", "evaluation", "add_dataset_to_experiments"),
    ("POST", f"{M3}/datasets/{{dataset_id}}/remove-experiments", "evaluation", "remove_dataset_from_experiments"),
    ("POST", f"{M3}/scorers/register", "evaluation", "register_scorer"),
    ("GET", f"{M3}/scorers/list", "evaluation", "list_scorers"),
    ("GET", f"{M3}/scorers/versions", "evaluation", "list_scorer_versions"),
    ("GET", f"{M3}/scorers/get", "evaluation", "get_scorer"),
    ("DELETE", f"{M3}/scorers/delete", "evaluation", "delete_scorer"),
    ("GET", f"{M3}/scorers/online-configs", "evaluation", "get_online_scoring_configs"),
    ("PUT", f"{M3}/scorers/online-config", "evaluation", "upsert_online_scoring_config"),
    # --- GenAI review: label schemas, review queues, issues (greedy families: GREEDY_FAMILIES) ---
    ("POST", f"{M3}/label-schemas/create", "review", "create_label_schema"),
    ("GET", f"{M3}/label-schemas/get", "review", "get_label_schema"),
    ("GET", f"{M3}/label-schemas/get-by-name", "review", "get_label_schema_by_name"),
    ("GET", f"{M3}/label-schemas/list", "review", "list_label_schemas"),
    ("PATCH", f"{M3}/label-schemas/update", "review", "update_label_schema"),
    ("DELETE", f"{M3}/label-schemas/delete", "review", "delete_label_schema"),
    ("POST", f"{M3}/review-queues/create", "review", "create_review_queue"),
    ("POST", f"{M3}/review-queues/get-or-create-user", "review", "get_or_create_user_queue"),
    ("GET", f"{M3}/review-queues/get", "review", "get_review_queue"),
    ("GET", f"{M3}/review-queues/get-by-name", "review", "get_review_queue_by_name"),
    ("GET", f"{M3}/review-queues/list", "review", "list_review_queues"),
    ("POST", f"{M3}/review-queues/update", "review", "update_review_queue"),
    ("POST", f"{M3}/review-queues/delete", "review", "delete_review_queue"),
    ("POST", f"{M3}/review-queues/items/add", "review", "add_items_to_review_queue"),
    ("POST", f"{M3}/review-queues/items/remove", "review", "remove_items_from_review_queue"),
    ("GET", f"{M3}/review-queues/items/list", "review", "list_review_queue_items"),
    ("POST", f"{M3}/review-queues/items/set-status", "review", "set_review_queue_item_status"),
    ("POST", f"{M3}/issues", "review", "create_issue"),
    ("POST", f"{M3}/issues/search", "review", "search_issues"),
    ("GET", f"{M3}/issues/{{issue_id}}", "review", "get_issue"),
    ("PATCH", f"{M3}/issues/{{issue_id}}", "review", "update_issue"),
    # MLflow 3.18's schedule dialog, after saving the schedule tags (ajax only; behind the ajax issues group).
    ("POST", f"{AJAX3}/issues/schedule/state", "review", "sync_issue_detection_schedule_state"),
    # MLflow 3.18's issue detection over chosen traces, as a job (ajax only; behind the ajax issues group).
    ("POST", f"{AJAX3}/issues/invoke", "review", "invoke_issue_detection"),
    # --- AI gateway configuration (secrets stored KMS-encrypted) -------------------------------
    ("POST", f"{M3}/gateway/secrets/create", "gateway", "create_gateway_secret"),
    ("GET", f"{M3}/gateway/secrets/get", "gateway", "get_gateway_secret"),
    ("POST", f"{M3}/gateway/secrets/update", "gateway", "update_gateway_secret"),
    ("DELETE", f"{M3}/gateway/secrets/delete", "gateway", "delete_gateway_secret"),
    ("GET", f"{M3}/gateway/secrets/list", "gateway", "list_gateway_secrets"),
    ("POST", f"{M3}/gateway/model-definitions/create", "gateway", "create_gateway_model_definition"),
    ("GET", f"{M3}/gateway/model-definitions/get", "gateway", "get_gateway_model_definition"),
    ("GET", f"{M3}/gateway/model-definitions/list", "gateway", "list_gateway_model_definitions"),
    ("POST", f"{M3}/gateway/model-definitions/update", "gateway", "update_gateway_model_definition"),
    ("DELETE", f"{M3}/gateway/model-definitions/delete", "gateway", "delete_gateway_model_definition"),
    ("POST", f"{M3}/gateway/endpoints/create", "gateway", "create_gateway_endpoint"),
    ("GET", f"{M3}/gateway/endpoints/get", "gateway", "get_gateway_endpoint"),
    ("POST", f"{M3}/gateway/endpoints/update", "gateway", "update_gateway_endpoint"),
    ("DELETE", f"{M3}/gateway/endpoints/delete", "gateway", "delete_gateway_endpoint"),
    ("GET", f"{M3}/gateway/endpoints/list", "gateway", "list_gateway_endpoints"),
    ("POST", f"{M3}/gateway/endpoints/models/attach", "gateway", "attach_model_to_gateway_endpoint"),
    ("POST", f"{M3}/gateway/endpoints/models/detach", "gateway", "detach_model_from_gateway_endpoint"),
    ("POST", f"{M3}/gateway/endpoints/bindings/create", "gateway", "create_gateway_endpoint_binding"),
    ("DELETE", f"{M3}/gateway/endpoints/bindings/delete", "gateway", "delete_gateway_endpoint_binding"),
    ("GET", f"{M3}/gateway/endpoints/bindings/list", "gateway", "list_gateway_endpoint_bindings"),
    ("POST", f"{M3}/gateway/endpoints/set-tag", "gateway", "set_gateway_endpoint_tag"),
    ("DELETE", f"{M3}/gateway/endpoints/delete-tag", "gateway", "delete_gateway_endpoint_tag"),
    ("POST", f"{M3}/gateway/budgets/create", "gateway", "create_gateway_budget_policy"),
    ("GET", f"{M3}/gateway/budgets/get", "gateway", "get_gateway_budget_policy"),
    ("POST", f"{M3}/gateway/budgets/update", "gateway", "update_gateway_budget_policy"),
    ("DELETE", f"{M3}/gateway/budgets/delete", "gateway", "delete_gateway_budget_policy"),
    ("GET", f"{M3}/gateway/budgets/list", "gateway", "list_gateway_budget_policies"),
    ("GET", f"{M3}/gateway/budgets/windows", "gateway", "list_gateway_budget_windows"),
    ("POST", f"{M3}/gateway/guardrails/create", "gateway", "create_gateway_guardrail"),
    ("GET", f"{M3}/gateway/guardrails/get", "gateway", "get_gateway_guardrail"),
    ("DELETE", f"{M3}/gateway/guardrails/delete", "gateway", "delete_gateway_guardrail"),
    ("GET", f"{M3}/gateway/guardrails/list", "gateway", "list_gateway_guardrails"),
    ("POST", f"{M3}/gateway/guardrails/add-to-endpoint", "gateway", "add_guardrail_to_endpoint"),
    ("DELETE", f"{M3}/gateway/guardrails/remove-from-endpoint", "gateway", "remove_guardrail_from_endpoint"),
    ("GET", f"{M3}/gateway/guardrails/list-for-endpoint", "gateway", "list_endpoint_guardrail_configs"),
    ("PATCH", f"{M3}/gateway/guardrails/update-config", "gateway", "update_endpoint_guardrail_config"),
    # The UI's provider/model catalog: MLflow serves these under the ajax prefix only.
    ("GET", f"{AJAX3}/gateway/supported-providers", "gateway", "list_gateway_supported_providers"),
    ("GET", f"{AJAX3}/gateway/supported-models", "gateway", "list_gateway_supported_models"),
    ("GET", f"{AJAX3}/gateway/provider-config", "gateway", "get_gateway_provider_config"),
    ("GET", f"{AJAX3}/gateway/secrets/config", "gateway", "get_gateway_secrets_config"),
    # --- MCP server registry (FastAPI routes in MLflow; names are ``<namespace>/<slug>``, so ``{name+}``).
    # Listed in MLflow's registration order (most specific first): Powertools tries rules in table order.
    ("POST", MCP, "gateway", "create_mcp_server"),
    ("GET", MCP, "gateway", "search_mcp_servers"),
    ("GET", f"{MCP}/endpoints", "gateway", "search_all_mcp_access_endpoints"),
    ("POST", f"{MCP}/{{name+}}/versions/{{version+}}/tags", "gateway", "set_mcp_server_version_tag"),
    ("DELETE", f"{MCP}/{{name+}}/versions/{{version+}}/tags/{{key+}}", "gateway", "delete_mcp_server_version_tag"),
    ("GET", f"{MCP}/{{name+}}/versions/{{version+}}", "gateway", "get_mcp_server_version"),
    ("PATCH", f"{MCP}/{{name+}}/versions/{{version+}}", "gateway", "update_mcp_server_version"),
    ("DELETE", f"{MCP}/{{name+}}/versions/{{version+}}", "gateway", "delete_mcp_server_version"),
    ("POST", f"{MCP}/{{name+}}/versions", "gateway", "create_mcp_server_version"),
    ("GET", f"{MCP}/{{name+}}/versions", "gateway", "search_mcp_server_versions"),
    ("POST", f"{MCP}/{{name+}}/endpoints", "gateway", "create_mcp_access_endpoint"),
    ("GET", f"{MCP}/{{name+}}/endpoints/{{endpoint_id}}", "gateway", "get_mcp_access_endpoint"),
    ("PATCH", f"{MCP}/{{name+}}/endpoints/{{endpoint_id}}", "gateway", "update_mcp_access_endpoint"),
    ("DELETE", f"{MCP}/{{name+}}/endpoints/{{endpoint_id}}", "gateway", "delete_mcp_access_endpoint"),
    ("GET", f"{MCP}/{{name+}}/endpoints", "gateway", "search_mcp_access_endpoints"),
    ("POST", f"{MCP}/{{name+}}/tags", "gateway", "set_mcp_server_tag"),
    ("DELETE", f"{MCP}/{{name+}}/tags/{{key+}}", "gateway", "delete_mcp_server_tag"),
    ("POST", f"{MCP}/{{name+}}/aliases", "gateway", "set_mcp_server_alias"),
    ("GET", f"{MCP}/{{name+}}/aliases/{{alias+}}", "gateway", "get_mcp_server_version_by_alias"),
    ("DELETE", f"{MCP}/{{name+}}/aliases/{{alias+}}", "gateway", "delete_mcp_server_alias"),
    ("GET", f"{MCP}/{{name+}}", "gateway", "get_mcp_server"),
    ("PATCH", f"{MCP}/{{name+}}", "gateway", "update_mcp_server"),
    ("DELETE", f"{MCP}/{{name+}}", "gateway", "delete_mcp_server"),
    # --- AI gateway runtime: MLflow's invocation routes (one greedy route per method; the function routes) ---
    ("POST", "/gateway/{path+}", "gateway_runtime", "invoke"),
    ("GET", "/gateway/{path+}", "gateway_runtime", "invoke"),
    # --- skill registry (FastAPI routes in MLflow 3.18). Every per-skill route has an ``@organization`` twin,
    # listed first: Powertools tries dynamic rules in table order, and MLflow matches ``/@acme/versions`` as the
    # skill ``versions`` of ``acme`` (its ``@{organization}`` routes are registered before ``/{name}/versions``).
    ("POST", SKILLS, "gateway", "create_skill"),
    ("GET", SKILLS, "gateway", "search_skills"),
    ("POST", f"{SKILLS}/bulk-register", "gateway", "bulk_register_skills"),
    ("GET", f"{SKILLS}/@{{organization}}/{{name}}/versions", "gateway", "search_organization_skill_versions"),
    ("POST", f"{SKILLS}/@{{organization}}/{{name}}/versions/{{version}}/tags", "gateway", "set_organization_skill_version_tag"),
    (
        "DELETE",
        f"{SKILLS}/@{{organization}}/{{name}}/versions/{{version}}/tags/{{key+}}",
        "gateway",
        "delete_organization_skill_version_tag",
    ),
    ("GET", f"{SKILLS}/@{{organization}}/{{name}}/versions/{{version}}", "gateway", "get_organization_skill_version"),
    ("PATCH", f"{SKILLS}/@{{organization}}/{{name}}/versions/{{version}}", "gateway", "update_organization_skill_version"),
    ("DELETE", f"{SKILLS}/@{{organization}}/{{name}}/versions/{{version}}", "gateway", "delete_organization_skill_version"),
    ("POST", f"{SKILLS}/@{{organization}}/{{name}}/versions", "gateway", "create_organization_skill_version"),
    ("POST", f"{SKILLS}/@{{organization}}/{{name}}/tags", "gateway", "set_organization_skill_tag"),
    ("DELETE", f"{SKILLS}/@{{organization}}/{{name}}/tags/{{key+}}", "gateway", "delete_organization_skill_tag"),
    ("POST", f"{SKILLS}/@{{organization}}/{{name}}/aliases", "gateway", "set_organization_skill_alias"),
    ("GET", f"{SKILLS}/@{{organization}}/{{name}}/aliases/{{alias}}", "gateway", "get_organization_skill_version_by_alias"),
    ("DELETE", f"{SKILLS}/@{{organization}}/{{name}}/aliases/{{alias}}", "gateway", "delete_organization_skill_alias"),
    ("GET", f"{SKILLS}/@{{organization}}/{{name}}", "gateway", "get_organization_skill"),
    ("PATCH", f"{SKILLS}/@{{organization}}/{{name}}", "gateway", "update_organization_skill"),
    ("DELETE", f"{SKILLS}/@{{organization}}/{{name}}", "gateway", "delete_organization_skill"),
    ("GET", f"{SKILLS}/{{name}}/versions", "gateway", "search_skill_versions"),
    ("POST", f"{SKILLS}/{{name}}/versions/{{version}}/tags", "gateway", "set_skill_version_tag"),
    ("DELETE", f"{SKILLS}/{{name}}/versions/{{version}}/tags/{{key+}}", "gateway", "delete_skill_version_tag"),
    ("GET", f"{SKILLS}/{{name}}/versions/{{version}}", "gateway", "get_skill_version"),
    ("PATCH", f"{SKILLS}/{{name}}/versions/{{version}}", "gateway", "update_skill_version"),
    ("DELETE", f"{SKILLS}/{{name}}/versions/{{version}}", "gateway", "delete_skill_version"),
    ("POST", f"{SKILLS}/{{name}}/versions", "gateway", "create_skill_version"),
    ("POST", f"{SKILLS}/{{name}}/tags", "gateway", "set_skill_tag"),
    ("DELETE", f"{SKILLS}/{{name}}/tags/{{key+}}", "gateway", "delete_skill_tag"),
    ("POST", f"{SKILLS}/{{name}}/aliases", "gateway", "set_skill_alias"),
    ("GET", f"{SKILLS}/{{name}}/aliases/{{alias}}", "gateway", "get_skill_version_by_alias"),
    ("DELETE", f"{SKILLS}/{{name}}/aliases/{{alias}}", "gateway", "delete_skill_alias"),
    ("GET", f"{SKILLS}/{{name}}", "gateway", "get_skill"),
    ("PATCH", f"{SKILLS}/{{name}}", "gateway", "update_skill"),
    ("DELETE", f"{SKILLS}/{{name}}", "gateway", "delete_skill"),
    # --- users and permissions (MLflow's basic-auth app; ENDPOINT_NOT_FOUND unless authorization=basic) ---
    ("GET", "/login", "auth", "login"),
    # MLflow's server-rendered sign-up form and its POST (public: the form asks for credentials itself).
    ("GET", "/signup", "auth", "signup"),
    ("POST", f"{M2}/users/create-ui", "auth", "create_user_ui"),
    ("POST", f"{M2}/users/create", "auth", "create_user"),
    ("GET", f"{M2}/users/get", "auth", "get_user"),
    ("GET", f"{M2}/users/current", "auth", "get_current_user"),
    ("GET", f"{M2}/users/list", "auth", "list_users"),
    ("PATCH", f"{M2}/users/update-password", "auth", "update_user_password"),
    ("PATCH", f"{M2}/users/update-admin", "auth", "update_user_admin"),
    ("DELETE", f"{M2}/users/delete", "auth", "delete_user"),
    ("POST", f"{M3}/users/permissions/grant", "auth", "grant_user_permission"),
    ("POST", f"{M3}/users/permissions/revoke", "auth", "revoke_user_permission"),
    ("GET", f"{M3}/users/permissions/get", "auth", "get_user_permission"),
    ("GET", f"{M3}/users/permissions/list", "auth", "list_user_permissions"),
    ("GET", f"{M3}/users/current/permissions", "auth", "list_current_user_permissions"),
    ("GET", f"{M3}/users/roles/list", "auth", "list_user_roles"),
    # Roles (MLflow 3's RBAC), behind the greedy ``{M3}/roles`` family.
    ("POST", f"{M3}/roles/create", "auth", "create_role"),
    ("GET", f"{M3}/roles/get", "auth", "get_role"),
    ("GET", f"{M3}/roles/list", "auth", "list_roles"),
    ("PATCH", f"{M3}/roles/update", "auth", "update_role"),
    ("DELETE", f"{M3}/roles/delete", "auth", "delete_role"),
    ("POST", f"{M3}/roles/permissions/add", "auth", "add_role_permission"),
    ("DELETE", f"{M3}/roles/permissions/remove", "auth", "remove_role_permission"),
    ("GET", f"{M3}/roles/permissions/list", "auth", "list_role_permissions"),
    ("PATCH", f"{M3}/roles/permissions/update", "auth", "update_role_permission"),
    ("POST", f"{M3}/roles/assign", "auth", "assign_role"),
    ("DELETE", f"{M3}/roles/unassign", "auth", "unassign_role"),
    ("GET", f"{M3}/roles/users/list", "auth", "list_role_users"),
    # --- traces (MLflow 3 tracing; tags, delete-traces and link-to-run stay on /api/2.0 in the client) ---
    ("POST", "/v1/traces", "traces", "otlp_traces"),
    ("POST", f"{M3}/traces", "traces", "start_trace"),
    ("GET", f"{M3}/traces/{{trace_id}}", "traces", "get_trace_info"),
    ("GET", f"{M3}/traces/get", "traces", "get_trace"),
    ("GET", f"{M3}/traces/batchGet", "traces", "batch_get_traces"),
    ("POST", f"{M3}/traces/batchGetInfos", "traces", "batch_get_trace_infos"),
    ("POST", f"{M3}/traces/search", "traces", "search_traces"),
    ("POST", f"{M3}/traces/metrics", "traces", "query_trace_metrics"),
    ("POST", f"{M3}/traces/calculate-filter-correlation", "traces", "calculate_trace_filter_correlation"),
    ("PATCH", f"{M3}/traces/{{trace_id}}/tags", "traces", "set_trace_tag"),
    ("DELETE", f"{M3}/traces/{{trace_id}}/tags", "traces", "delete_trace_tag"),
    ("POST", f"{M3}/traces/delete-traces", "traces", "delete_traces"),
    ("POST", f"{M3}/traces/{{trace_id}}/assessments", "traces", "create_assessment"),
    ("GET", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "get_assessment"),
    ("PATCH", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "update_assessment"),
    ("DELETE", f"{M3}/traces/{{trace_id}}/assessments/{{assessment_id}}", "traces", "delete_assessment"),
    ("GET", f"{M2}/traces", "traces", "search_traces_v2"),
    # mlflow 2.x clients start and end each trace over these (the spans go to its traces.json artifact).
    ("POST", f"{M2}/traces", "traces", "start_trace_v2"),
    ("PATCH", f"{M2}/traces/{{request_id}}", "traces", "end_trace_v2"),
    ("GET", f"{M2}/traces/{{request_id}}/info", "traces", "get_trace_info_v2"),
    ("PATCH", f"{M2}/traces/{{request_id}}/tags", "traces", "set_trace_tag"),
    ("DELETE", f"{M2}/traces/{{request_id}}/tags", "traces", "delete_trace_tag"),
    ("POST", f"{M2}/traces/delete-traces", "traces", "delete_traces"),
    ("POST", f"{M2}/traces/link-to-run", "traces", "link_traces_to_run"),
    ("POST", f"{M2}/traces/link-prompts", "traces", "link_prompts_to_trace"),
    # The UI's download of a trace's data (MLflow serves it on the ajax prefix only).
    ("GET", "/ajax-api/2.0/mlflow/get-trace-artifact", "traces", "get_trace_artifact"),
    ("GET", "/ajax-api/3.0/mlflow/get-trace-artifact", "traces", "get_trace_artifact"),
    # --- artifacts (presigned S3; no artifact bytes through Lambda beyond small PUTs) ---------
    ("GET", f"{M2}/artifacts/list", "artifacts", "list_run_artifacts"),
    ("POST", f"{M2}/artifacts/presigned-upload-url", "artifacts", "create_presigned_upload_url"),
    ("POST", f"{M2}/artifacts/presigned-download-url", "artifacts", "create_presigned_download_url"),
    ("GET", f"{M2}/logged-models/{{model_id}}/artifacts/directories", "artifacts", "list_logged_model_artifacts"),
    ("GET", f"{ART}/artifacts", "artifacts", "list_artifacts"),
    ("GET", f"{ART}/artifacts/{{path+}}", "artifacts", "download_artifact"),
    ("PUT", f"{ART}/artifacts/{{path+}}", "artifacts", "upload_artifact"),
    ("DELETE", f"{ART}/artifacts/{{path+}}", "artifacts", "delete_artifact"),
    ("POST", f"{ART}/mpu/create/{{path+}}", "artifacts", "create_multipart_upload"),
    ("POST", f"{ART}/mpu/complete/{{path+}}", "artifacts", "complete_multipart_upload"),
    ("POST", f"{ART}/mpu/abort/{{path+}}", "artifacts", "abort_multipart_upload"),
    ("GET", f"{ART}/presigned/{{path+}}", "artifacts", "presigned_download"),
    # What the UI's artifact browser reads: listing by run (above), then each file through a redirect to S3.
    ("GET", "/get-artifact", "artifacts", "get_run_artifact"),
    # The UI's one-request upload of a small file into a run (written by the function, up to 4 MiB).
    ("POST", f"{AJAX2}/upload-artifact", "artifacts", "upload_run_artifact"),
    ("GET", "/model-versions/get-artifact", "artifacts", "get_model_version_artifact"),
    ("GET", f"{AJAX2}/logged-models/{{model_id}}/artifacts/files", "artifacts", "get_logged_model_artifact"),
    # --- webhooks (MLflow's registry webhooks; events are delivered from the table's stream) ---------
    ("POST", f"{M2}/webhooks", "webhooks", "create_webhook"),
    ("GET", f"{M2}/webhooks", "webhooks", "list_webhooks"),
    ("GET", f"{M2}/webhooks/{{webhook_id}}", "webhooks", "get_webhook"),
    ("PATCH", f"{M2}/webhooks/{{webhook_id}}", "webhooks", "update_webhook"),
    ("DELETE", f"{M2}/webhooks/{{webhook_id}}", "webhooks", "delete_webhook"),
    ("POST", f"{M2}/webhooks/{{webhook_id}}/test", "webhooks", "test_webhook"),
    # --- server-side jobs (MLflow's FastAPI job routes, ajax-only) and the demo data built by one ----------------
    ("POST", f"{JOBS}/", "jobs", "submit_job"),
    ("POST", f"{JOBS}/search", "jobs", "search_jobs"),
    ("PATCH", f"{JOBS}/cancel/{{job_id}}", "jobs", "cancel_job"),
    ("GET", f"{JOBS}/{{job_id}}", "jobs", "get_job"),
    ("POST", f"{AJAX3}/demo/generate", "jobs", "generate_demo"),
    ("POST", f"{AJAX3}/demo/delete", "jobs", "delete_demo"),
    # MLflow's Flask twins of get and cancel (their own JSON and errors), and the UI's invoke routes, which submit
    # jobs that run MLflow's own job functions (ajax only).
    ("GET", f"{AJAX3}/jobs/{{job_id}}", "jobs", "get_job_flask"),
    ("PATCH", f"{AJAX3}/jobs/cancel/{{job_id}}", "jobs", "cancel_job_flask"),
    ("POST", f"{AJAX3}/scorer/invoke", "jobs", "invoke_scorer"),
    ("POST", f"{AJAX3}/genai/evaluate/invoke", "jobs", "invoke_genai_evaluate"),
)

# Route families served by one feature behind two greedy API Gateway routes (``ANY <prefix>`` and
# ``ANY <prefix>/{proxy+}``) instead of one route per REST route: the HTTP API allows 300 routes and each
# is a CloudFormation resource. The feature's own resolver tells its operations apart (and answers a known
# path with another method as MLflow does). Every table route under a family's prefix must be the family's.
GREEDY_FAMILIES: dict[str, str] = {
    f"{M2}/webhooks": "webhooks",
    MCP: "gateway",
    SKILLS: "gateway",
    f"{M3}/label-schemas": "review",
    f"{M3}/review-queues": "review",
    f"{M3}/issues": "review",
    f"{M3}/roles": "auth",
    f"{M3}/users": "auth",
    JOBS: "jobs",
    f"{M3}/workspaces": "experiments",
    f"{M3}/prompt-optimization": "runs",
}

ROUTES: tuple[Route, ...] = tuple(Route(*row) for row in _TABLE)

# Anything the table does not name is answered by the meta feature with ENDPOINT_NOT_FOUND
# (API Gateway's own 404 body would break the client's fallbacks).
DEFAULT_FEATURE = "meta"


def features() -> list[str]:
    return sorted({route.feature for route in ROUTES})


def routes_for(feature: str) -> list[Route]:
    return [route for route in ROUTES if route.feature == feature]


def family_of(path: str) -> str | None:
    """The greedy family prefix a table path belongs to, if any."""
    for prefix in GREEDY_FAMILIES:
        if path == prefix or path.startswith(prefix + "/"):
            return prefix
    return None
