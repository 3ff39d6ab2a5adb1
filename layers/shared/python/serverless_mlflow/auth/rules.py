"""Who may call what: one row per operation of ``routes.ROUTES`` (MLflow's BEFORE_REQUEST_VALIDATORS and
AFTER_REQUEST_HANDLERS, mlflow/server/auth/__init__.py), applied centrally by ``api.build_app``.

A feature adds a route and, with it, a row here: the check that must pass before the operation runs, and
optionally what runs after it (grant MANAGE to a creator, filter a search). An operation without a row
is admin-only (fail closed, as MLflow's MLFLOW_BASIC_AUTH_FAIL_CLOSED), so a new route is never open by
accident. ``PUBLIC`` operations need no credentials at all (MLflow's unprotected routes).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import after, jobs, links, resources, review, workspace_roles
from serverless_mlflow.auth.checks import (
    Check,
    Identity,
    admin,
    all_of,
    authenticated,
    create_in_workspace,
    create_user,
    list_roles,
    manage_grant_target,
    manage_roles,
    need,
    needs,
    or_gateway_usage_trace,
    read_permission_of,
    self_or_admin,
    view_roles,
    view_user_roles,
)
from serverless_mlflow.auth.permissions import DELETE, EXPERIMENT, MANAGE_ACTION, NOT_DENIED, READ_ACTION, UPDATE
from serverless_mlflow.routes import PUBLIC_OPERATIONS

if TYPE_CHECKING:
    from serverless_mlflow.api import Request

# Before the operation: may rewrite the request (search_runs narrows experiment_ids) or answer it.
Prepare = Callable[["Request", Identity], "Request | dict[str, Any]"]


@dataclass(frozen=True)
class Rule:
    check: Check
    after: after.After | None = None
    prepare: Prepare | None = None


PUBLIC = PUBLIC_OPERATIONS

_READ_EXPERIMENT = need(resources.experiment, READ_ACTION)
_UPDATE_EXPERIMENT = need(resources.experiment, UPDATE)
_READ_RUN = need(resources.run, READ_ACTION)
_UPDATE_RUN = need(resources.run, UPDATE)
_READ_MODEL = need(resources.registered_model, READ_ACTION)
_UPDATE_MODEL = need(resources.registered_model, UPDATE)
_READ_VERSION = need(resources.model_version_parent, READ_ACTION)
_UPDATE_VERSION = need(resources.model_version_parent, UPDATE)
_DELETE_VERSION = need(resources.model_version_parent, DELETE)
_READ_LOGGED_MODEL = need(resources.logged_model, READ_ACTION)
_UPDATE_LOGGED_MODEL = need(resources.logged_model, UPDATE)
_READ_TRACE = need(resources.trace, READ_ACTION)
_UPDATE_TRACE = need(resources.trace, UPDATE)
_READ_DATASET = need(resources.dataset_experiments, READ_ACTION)
_UPDATE_DATASET = need(resources.dataset_experiments, UPDATE)


def _readable_experiments(req: Request, identity: Identity) -> Request | dict[str, Any]:
    """search_runs: MLflow narrows ``experiment_ids`` to the readable ones before the store runs (filter_experiment_ids)."""
    from dataclasses import replace

    from serverless_mlflow.auth.checks import permissions_on

    ids = req.json.get("experiment_ids")
    if not isinstance(ids, list) or not ids or not all(isinstance(i, (str, int)) for i in ids):
        return req  # the operation reports malformed input as MLflow does
    allowed = permissions_on(identity, [(EXPERIMENT, str(i)) for i in ids], listing=True)
    readable = [i for i, permission in zip(ids, allowed, strict=True) if permission.allows(READ_ACTION)]
    if not readable:
        return {}
    import json

    return replace(req, raw_body=json.dumps({**req.json, "experiment_ids": readable}).encode())


RULES: dict[str, Rule] = {
    # --- meta ----------------------------------------------------------------------------------
    "version": Rule(authenticated),
    # --- experiments ---------------------------------------------------------------------------
    "create_experiment": Rule(
        all_of(create_in_workspace, need(resources.kind_wildcard(EXPERIMENT), NOT_DENIED)), after=after.grant_experiment_creator
    ),
    "get_experiment": Rule(_READ_EXPERIMENT),
    "get_experiment_by_name": Rule(need(resources.experiment_by_name, READ_ACTION)),
    "search_experiments": Rule(authenticated, after=after.filtered("experiments", after.experiment_row, 1000)),
    "update_experiment": Rule(_UPDATE_EXPERIMENT),
    "delete_experiment": Rule(need(resources.experiment, DELETE)),
    "restore_experiment": Rule(need(resources.experiment, DELETE)),
    "set_experiment_tag": Rule(_UPDATE_EXPERIMENT),
    "delete_experiment_tag": Rule(_UPDATE_EXPERIMENT),
    # --- runs ------------------------------------------------------------------------------------
    "create_run": Rule(_UPDATE_EXPERIMENT),
    "get_run": Rule(_READ_RUN),
    "update_run": Rule(_UPDATE_RUN),
    "delete_run": Rule(need(resources.run, DELETE)),
    "restore_run": Rule(need(resources.run, DELETE)),
    "search_runs": Rule(authenticated, prepare=_readable_experiments),
    # A metric, input or output naming a logged model writes onto that model too (_validate_can_update_run_and_models).
    "log_metric": Rule(needs((resources.run, UPDATE), (links.metric_model, UPDATE))),
    "log_param": Rule(_UPDATE_RUN),
    "set_tag": Rule(_UPDATE_RUN),
    "delete_tag": Rule(_UPDATE_RUN),
    "log_batch": Rule(needs((resources.run, UPDATE), (links.batch_metric_models, UPDATE))),
    "log_inputs": Rule(needs((resources.run, UPDATE), (links.linked_models, UPDATE))),
    "log_outputs": Rule(needs((resources.run, UPDATE), (links.linked_models, UPDATE))),
    "log_model_json": Rule(_UPDATE_RUN),
    "get_metric_history": Rule(_READ_RUN),
    "get_metric_history_bulk_interval": Rule(need(resources.runs_param("run_ids"), READ_ACTION)),
    # --- logged models ---------------------------------------------------------------------------
    "create_logged_model": Rule(needs((resources.experiment, UPDATE), (links.source_run, READ_ACTION))),
    "search_logged_models": Rule(authenticated, after=after.filtered("models", after.logged_model_row, 50)),
    "get_logged_model": Rule(_READ_LOGGED_MODEL),
    "finalize_logged_model": Rule(_UPDATE_LOGGED_MODEL),
    "delete_logged_model": Rule(need(resources.logged_model, DELETE)),
    "set_logged_model_tags": Rule(_UPDATE_LOGGED_MODEL),
    "delete_logged_model_tag": Rule(_UPDATE_LOGGED_MODEL),
    "log_logged_model_params": Rule(_UPDATE_LOGGED_MODEL),
    # --- model registry (shared with prompts: the persisted model says which family governs) -------
    "create_registered_model": Rule(
        all_of(create_in_workspace, need(resources.created_model, NOT_DENIED)), after=after.grant_model_creator
    ),
    "rename_registered_model": Rule(_UPDATE_MODEL, after=after.move_model_grants),
    "update_registered_model": Rule(_UPDATE_MODEL),
    "delete_registered_model": Rule(need(resources.registered_model, DELETE), after=after.drop_model_grants),
    "get_registered_model": Rule(_READ_MODEL),
    "search_registered_models": Rule(authenticated, after=after.filtered("registered_models", after.model_row, 100)),
    "get_latest_versions": Rule(_READ_VERSION),
    "set_registered_model_tag": Rule(_UPDATE_MODEL),
    "delete_registered_model_tag": Rule(_UPDATE_MODEL),
    "set_registered_model_alias": Rule(needs((resources.registered_model, UPDATE), (resources.model_version_parent, READ_ACTION))),
    "delete_registered_model_alias": Rule(needs((resources.registered_model, DELETE), (resources.model_version_parent, READ_ACTION))),
    "get_model_version_by_alias": Rule(_READ_VERSION),
    # READ on what the version is registered from: its run, logged model, source model or source location.
    "create_model_version": Rule(needs((resources.model_version_parent, UPDATE), (links.version_sources, READ_ACTION))),
    "update_model_version": Rule(_UPDATE_VERSION),
    "transition_model_version_stage": Rule(_UPDATE_VERSION),
    "delete_model_version": Rule(_DELETE_VERSION),
    "get_model_version": Rule(_READ_VERSION),
    # MLflow filters rows by the parent's permission and does not refill this page.
    "search_model_versions": Rule(authenticated, after=after.filtered("model_versions", after.version_row, 10000, refill=False)),
    "get_model_version_download_uri": Rule(_READ_VERSION),
    "set_model_version_tag": Rule(_UPDATE_VERSION),
    "delete_model_version_tag": Rule(_DELETE_VERSION),
    # --- proxied artifacts (<experiment_id>/... paths; MLflow's artifact-proxy validators) ------------
    "list_artifacts": Rule(need(resources.artifact_path, READ_ACTION)),
    "download_artifact": Rule(need(resources.artifact_path, READ_ACTION)),
    "presigned_download": Rule(need(resources.artifact_path, READ_ACTION)),
    "upload_artifact": Rule(need(resources.artifact_path, UPDATE)),
    "delete_artifact": Rule(need(resources.artifact_path, MANAGE_ACTION)),
    "create_multipart_upload": Rule(need(resources.artifact_path, UPDATE)),
    "complete_multipart_upload": Rule(need(resources.artifact_path, UPDATE)),
    "abort_multipart_upload": Rule(need(resources.artifact_path, UPDATE)),
    # --- run / logged-model / model-version artifacts read by the UI and older clients ----------------
    "list_run_artifacts": Rule(_READ_RUN),
    # A presigned upload URL grants write access to its owner (a run, or a logged model); a download URL read access.
    "create_presigned_upload_url": Rule(need(resources.run_or_logged_model, UPDATE)),
    "create_presigned_download_url": Rule(_READ_RUN),
    "get_run_artifact": Rule(_READ_RUN),
    # validate_can_update_run_artifact: UPDATE on the run named in the query.
    "upload_run_artifact": Rule(need(resources.run_in_query, UPDATE)),
    "list_logged_model_artifacts": Rule(_READ_LOGGED_MODEL),
    "get_logged_model_artifact": Rule(_READ_LOGGED_MODEL),
    "get_model_version_artifact": Rule(_READ_VERSION),
    # --- the web UI's own routes (index and static files are public, as MLflow's /static) --------------
    "get_ui_telemetry": Rule(authenticated),
    "post_ui_telemetry": Rule(authenticated),
    # validate_gateway_proxy allows every signed-in user; the assistant routes require authentication.
    "gateway_proxy": Rule(authenticated),
    "get_assistant_config": Rule(authenticated),
    "get_assistant_providers": Rule(authenticated),
    "get_metric_history_bulk": Rule(need(resources.runs_param("run_id"), READ_ACTION)),
    "search_datasets": Rule(need(resources.experiment_ids_param, READ_ACTION)),
    # validate_can_create_promptlab_run: a run created in the experiment (UPDATE on it, as create_run).
    "create_promptlab_run": Rule(_UPDATE_EXPERIMENT),
    # Judged field by field inside the executor (auth/graphql_guard.py), as MLflow's GraphQL middleware does.
    "graphql": Rule(authenticated),
    # --- traces (validate_can_*_trace: the trace's experiment governs) ----------------------------------
    # Spans or a trace info under an existing trace id change that trace: UPDATE on its experiment as well.
    # The gateway's usage traces are its own record (checks.or_gateway_usage_trace).
    "otlp_traces": Rule(or_gateway_usage_trace(needs((resources.otlp_experiment, UPDATE), (links.exported_trace_owners, UPDATE)))),
    "start_trace": Rule(or_gateway_usage_trace(needs((resources.started_trace_experiment, UPDATE), (links.started_trace_owner, UPDATE)))),
    "get_trace_info": Rule(_READ_TRACE),
    "get_trace_info_v2": Rule(_READ_TRACE),
    "get_trace": Rule(_READ_TRACE),
    "get_trace_artifact": Rule(_READ_TRACE),
    "batch_get_traces": Rule(need(resources.traces_param("trace_ids"), READ_ACTION)),
    "batch_get_trace_infos": Rule(need(resources.traces_param("trace_ids"), READ_ACTION)),
    "search_traces": Rule(need(resources.trace_search_experiments, READ_ACTION)),
    "search_traces_v2": Rule(need(resources.trace_search_experiments, READ_ACTION)),
    "query_trace_metrics": Rule(need(resources.experiment_ids_param, READ_ACTION)),
    "calculate_trace_filter_correlation": Rule(need(resources.experiment_ids_param, READ_ACTION)),
    # mlflow 2.x: StartTrace names its experiment (validate_can_start_trace), EndTrace its trace.
    "start_trace_v2": Rule(_UPDATE_EXPERIMENT),
    "end_trace_v2": Rule(_UPDATE_TRACE),
    "set_trace_tag": Rule(_UPDATE_TRACE),
    "delete_trace_tag": Rule(_UPDATE_TRACE),
    "delete_traces": Rule(need(resources.experiment, DELETE)),
    "link_traces_to_run": Rule(needs((resources.run, UPDATE), (resources.traces_param("trace_ids"), READ_ACTION))),
    # validate_can_update_trace_by_trace_id: the trace's experiment governs.
    "link_prompts_to_trace": Rule(_UPDATE_TRACE),
    "create_assessment": Rule(_UPDATE_TRACE),
    "get_assessment": Rule(_READ_TRACE),
    "update_assessment": Rule(_UPDATE_TRACE),
    "delete_assessment": Rule(_UPDATE_TRACE),
    # --- GenAI evaluation datasets (governed by their experiments) and scorers (by their experiment) ----
    "create_dataset": Rule(need(resources.experiment_ids_param, UPDATE)),
    "get_dataset": Rule(_READ_DATASET),
    "get_dataset_records": Rule(_READ_DATASET),
    "get_dataset_experiment_ids": Rule(_READ_DATASET),
    "delete_dataset": Rule(need(resources.dataset_experiments, DELETE)),
    "set_dataset_tags": Rule(_UPDATE_DATASET),
    "delete_dataset_tag": Rule(_UPDATE_DATASET),
    "upsert_dataset_records": Rule(_UPDATE_DATASET),
    "delete_dataset_records": Rule(_UPDATE_DATASET),
    "remove_dataset_from_experiments": Rule(_UPDATE_DATASET),
    "add_dataset_to_experiments": Rule(needs((resources.dataset_experiments, UPDATE), (resources.experiment_ids_param, UPDATE))),
    "register_scorer": Rule(_UPDATE_EXPERIMENT),
    # One experiment: READ on it; none named (a listing across experiments): rows filtered (filter_list_scorers).
    "list_scorers": Rule(
        need(resources.optional_experiment, READ_ACTION), after=after.filtered("scorers", after.experiment_row, 0, refill=False)
    ),
    "list_scorer_versions": Rule(_READ_EXPERIMENT),
    "get_scorer": Rule(_READ_EXPERIMENT),
    "delete_scorer": Rule(need(resources.experiment, DELETE)),
    "get_online_scoring_configs": Rule(need(links.scoring_config_experiments, READ_ACTION)),
    "upsert_online_scoring_config": Rule(_UPDATE_EXPERIMENT),
    # --- GenAI review (label schemas, review queues, issues): see auth/review.py --------------------------
    "create_label_schema": Rule(need(resources.experiment, MANAGE_ACTION)),
    "get_label_schema": Rule(need(review.label_schema_experiment, READ_ACTION)),
    "get_label_schema_by_name": Rule(_READ_EXPERIMENT),
    "list_label_schemas": Rule(_READ_EXPERIMENT),
    "update_label_schema": Rule(need(review.label_schema_experiment, MANAGE_ACTION)),
    "delete_label_schema": Rule(need(review.label_schema_experiment, MANAGE_ACTION)),
    "create_review_queue": Rule(_UPDATE_EXPERIMENT),
    "get_or_create_user_queue": Rule(_UPDATE_EXPERIMENT),
    "get_review_queue": Rule(review.view_queue),
    "get_review_queue_by_name": Rule(review.view_queue_by_name),
    "list_review_queues": Rule(_READ_EXPERIMENT, after=review.visible_queues),
    "update_review_queue": Rule(review.update_queue),
    "delete_review_queue": Rule(review.prune_queue),
    "add_items_to_review_queue": Rule(review.add_items),
    "remove_items_from_review_queue": Rule(review.prune_queue),
    "list_review_queue_items": Rule(review.view_queue),
    "set_review_queue_item_status": Rule(review.review_item),
    "create_issue": Rule(need(review.body_experiment, UPDATE)),
    "get_issue": Rule(need(review.issue_experiment, READ_ACTION)),
    "update_issue": Rule(need(review.issue_experiment, UPDATE)),
    "search_issues": Rule(need(review.body_experiment, READ_ACTION)),
    # MLflow 3.18's auth app has no validator for it and fails the /mlflow/issues/ family closed: admins only.
    "sync_issue_detection_schedule_state": Rule(admin),
    # validate_can_invoke_issue_detection: it creates a run in the experiment (a saved key's USE is moot: refused).
    "invoke_issue_detection": Rule(need(review.body_experiment, UPDATE)),
    # --- AI gateway configuration: per-resource gateway grants are not served; reads for every user
    # (secret values are never answered), changes for admins -------------------------------------------
    **{
        op: Rule(authenticated)
        for op in (
            "get_gateway_secret",
            "list_gateway_secrets",
            "get_gateway_model_definition",
            "list_gateway_model_definitions",
            "get_gateway_endpoint",
            "list_gateway_endpoints",
            "list_gateway_endpoint_bindings",
            # The provider/model catalog: any logged-in user (MLflow's _allow_authenticated).
            "list_gateway_supported_providers",
            "list_gateway_supported_models",
            "get_gateway_provider_config",
        )
    },
    "get_gateway_secrets_config": Rule(authenticated, after=after.redact_secrets_config),
    **{
        op: Rule(admin)
        for op in (
            "create_gateway_secret",
            "update_gateway_secret",
            "delete_gateway_secret",
            "create_gateway_model_definition",
            "update_gateway_model_definition",
            "delete_gateway_model_definition",
            "create_gateway_endpoint",
            "update_gateway_endpoint",
            "delete_gateway_endpoint",
            "attach_model_to_gateway_endpoint",
            "detach_model_from_gateway_endpoint",
            "create_gateway_endpoint_binding",
            "delete_gateway_endpoint_binding",
            "set_gateway_endpoint_tag",
            "delete_gateway_endpoint_tag",
        )
    },
    # --- MCP server registry: MLflow's per-server grants (mcp_server, version tier) are not served yet; as for
    # the gateway, reads for every signed-in user, changes for admins ---------------------------------------
    **{
        op: Rule(authenticated)
        for op in (
            "search_mcp_servers",
            "get_mcp_server",
            "search_mcp_server_versions",
            "get_mcp_server_version",
            "get_mcp_server_version_by_alias",
            "search_mcp_access_endpoints",
            "search_all_mcp_access_endpoints",
            "get_mcp_access_endpoint",
        )
    },
    **{
        op: Rule(admin)
        for op in (
            "create_mcp_server",
            "update_mcp_server",
            "delete_mcp_server",
            "create_mcp_server_version",
            "update_mcp_server_version",
            "delete_mcp_server_version",
            "set_mcp_server_tag",
            "delete_mcp_server_tag",
            "set_mcp_server_version_tag",
            "delete_mcp_server_version_tag",
            "set_mcp_server_alias",
            "delete_mcp_server_alias",
            "create_mcp_access_endpoint",
            "update_mcp_access_endpoint",
            "delete_mcp_access_endpoint",
        )
    },
    # --- skill registry: MLflow's per-skill grants (resource type ``skill``: read/update/manage, MANAGE to a
    # creator) are not served yet; as for the MCP registry, reads for every signed-in user, changes for admins ----
    **{
        op: Rule(authenticated)
        for base in (
            "search_skill_versions",
            "get_skill",
            "get_skill_version",
            "get_skill_version_by_alias",
        )
        for op in (base, base.replace("_skill", "_organization_skill", 1))
    },
    "search_skills": Rule(authenticated),
    **{
        op: Rule(admin)
        for base in (
            "update_skill",
            "delete_skill",
            "create_skill_version",
            "update_skill_version",
            "delete_skill_version",
            "set_skill_tag",
            "delete_skill_tag",
            "set_skill_version_tag",
            "delete_skill_version_tag",
            "set_skill_alias",
            "delete_skill_alias",
        )
        for op in (base, base.replace("_skill", "_organization_skill", 1))
    },
    "create_skill": Rule(admin),
    "bulk_register_skills": Rule(admin),
    # --- server-side jobs (MLflow's FastAPI job routes) and the demo data (open to any signed-in user) ---------
    "submit_job": Rule(authenticated),
    "search_jobs": Rule(authenticated, after=jobs.own_jobs),
    "get_job": Rule(jobs.job_creator),
    "cancel_job": Rule(jobs.job_creator),
    "get_job_flask": Rule(jobs.job_creator),
    "cancel_job_flask": Rule(jobs.job_creator),
    "invoke_scorer": Rule(_UPDATE_EXPERIMENT),
    "invoke_genai_evaluate": Rule(jobs.can_invoke_genai_evaluate),
    "generate_demo": Rule(authenticated),
    # MLflow 3.18's prompt-optimization jobs: UPDATE on the experiment to create one (and the source prompt not
    # denied: the job loads it), READ to read or search, UPDATE to cancel, DELETE to delete.
    "create_prompt_optimization_job": Rule(needs((review.body_experiment, UPDATE), (jobs.source_prompts, NOT_DENIED))),
    "get_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, READ_ACTION)),
    "search_prompt_optimization_jobs": Rule(_READ_EXPERIMENT),
    "cancel_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, UPDATE)),
    "delete_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, DELETE)),
    "delete_demo": Rule(authenticated),
    # --- AI gateway budget policies: admin-only (they cap every user's spend and name no per-user owner) -------
    **{
        op: Rule(admin)
        for op in (
            "create_gateway_budget_policy",
            "get_gateway_budget_policy",
            "update_gateway_budget_policy",
            "delete_gateway_budget_policy",
            "list_gateway_budget_policies",
            "list_gateway_budget_windows",
        )
    },
    # --- AI gateway guardrails: MLflow makes their CRUD admin-only and gates the endpoint routes on the endpoint;
    # endpoint changes are admin-only here, and a config carries its guardrail's whole scorer (MLflow withholds
    # it from users denied that scorer), so listing an endpoint's guardrails is admin-only too --------------
    **{
        op: Rule(admin)
        for op in (
            "create_gateway_guardrail",
            "get_gateway_guardrail",
            "delete_gateway_guardrail",
            "list_gateway_guardrails",
            "add_guardrail_to_endpoint",
            "remove_guardrail_from_endpoint",
            "update_endpoint_guardrail_config",
            "list_endpoint_guardrail_configs",
        )
    },
    # The gateway runtime's calls: any signed-in user reaches it, and it checks USE on the endpoint a call names
    # (gateway_runtime/access.py, as MLflow's auth middleware does for its gateway routes).
    "invoke": Rule(authenticated),
    # --- workspaces (behind MLFLOW_ENABLE_WORKSPACES): a user lists the workspaces it holds a role in; creating
    # one seeds its ``admin`` and ``user`` roles (experiments/workspaces.py). The rest is admin-only: MLflow's
    # get_workspace validator refuses every non-admin, a workspace admin included ----------------------------
    "list_workspaces": Rule(authenticated, after=workspace_roles.filter_workspaces),
    **{op: Rule(admin) for op in ("create_workspace", "get_workspace", "update_workspace", "delete_workspace")},
    # --- webhooks: MLflow's WEBHOOK_BEFORE_REQUEST_HANDLERS (sender_is_admin) ---------------------------
    **{op: Rule(admin) for op in ("create_webhook", "list_webhooks", "get_webhook", "update_webhook", "delete_webhook", "test_webhook")},
    # --- users and permissions (mlflow/server/auth routes) ---------------------------------------------
    "create_user": Rule(create_user),
    # The sign-up form's POST has no validator in MLflow's app: admins only (its fail-closed default).
    "create_user_ui": Rule(admin),
    "get_user": Rule(self_or_admin()),
    "get_current_user": Rule(authenticated),
    # validate_can_list_users: any member of the request's workspace who may create there (always, workspaces off).
    "list_users": Rule(create_in_workspace),
    "update_user_password": Rule(self_or_admin()),
    "update_user_admin": Rule(admin),
    "delete_user": Rule(admin),
    "grant_user_permission": Rule(manage_grant_target),
    "revoke_user_permission": Rule(manage_grant_target),
    "get_user_permission": Rule(read_permission_of),
    "list_current_user_permissions": Rule(authenticated),
    "list_user_permissions": Rule(view_user_roles),
    # --- roles (MLflow 3's RBAC: admins, the role's workspace admins; its members may read it) ----------
    **{
        op: Rule(manage_roles)
        for op in (
            "create_role",
            "update_role",
            "delete_role",
            "add_role_permission",
            "remove_role_permission",
            "update_role_permission",
            "assign_role",
            "unassign_role",
            "list_role_users",
        )
    },
    "get_role": Rule(view_roles),
    "list_role_permissions": Rule(view_roles),
    "list_roles": Rule(list_roles),
    "list_user_roles": Rule(view_user_roles),
}

FAIL_CLOSED = Rule(admin)


def rule_for(operation: str) -> Rule:
    return RULES.get(operation, FAIL_CLOSED)
