"""Rules of the platform operations: AI gateway configuration, budgets and guardrails, the MCP and skill
registries, server-side jobs, workspaces, webhooks, and users, permissions and roles."""

from __future__ import annotations

from serverless_mlflow.auth import after, gateway, jobs, resources, review, workspace_roles
from serverless_mlflow.auth.checks import (
    admin,
    authenticated,
    create_in_workspace,
    create_user,
    list_roles,
    manage_grant_target,
    manage_roles,
    need,
    needs,
    read_permission_of,
    self_or_admin,
    view_roles,
    view_user_roles,
)
from serverless_mlflow.auth.permissions import DELETE, NOT_DENIED, READ_ACTION, UPDATE
from serverless_mlflow.auth.rules.common import READ_EXPERIMENT, UPDATE_EXPERIMENT, Rule

PLATFORM_RULES: dict[str, Rule] = {
    # --- AI gateway configuration: grants on secrets and model definitions are not served; reads for every
    # user (secret values are never answered), changes for admins. An endpoint's own grant (the one its USE
    # is judged on) judges reading it, as MLflow's validate_can_read_gateway_endpoint: a DENY hides it --------
    "get_gateway_endpoint": Rule(need(resources.gateway_endpoint, READ_ACTION)),
    "list_gateway_endpoints": Rule(authenticated, after=after.filtered("endpoints", after.gateway_endpoint_row, 0, refill=False)),
    # validate_can_list_gateway_endpoint_bindings: READ on the endpoint named; all bindings are the admins'.
    "list_gateway_endpoint_bindings": Rule(gateway.bindings_of_readable_endpoint),
    **{
        op: Rule(authenticated)
        for op in (
            "get_gateway_secret",
            "list_gateway_secrets",
            "get_gateway_model_definition",
            "list_gateway_model_definitions",
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
    # --- server-side jobs (MLflow's FastAPI job routes) and the demo data: generating it is open to any signed-in
    # user, deleting it is the admins' (MLflow's DEMO_DELETE: sender_is_admin), by its route or as a job --------
    "submit_job": Rule(jobs.may_submit),
    "search_jobs": Rule(authenticated, after=jobs.own_jobs),
    "get_job": Rule(jobs.job_creator),
    "cancel_job": Rule(jobs.job_creator),
    "get_job_flask": Rule(jobs.job_creator),
    "cancel_job_flask": Rule(jobs.job_creator),
    "invoke_scorer": Rule(UPDATE_EXPERIMENT),
    "invoke_genai_evaluate": Rule(jobs.can_invoke_genai_evaluate),
    "generate_demo": Rule(authenticated),
    # MLflow 3.18's prompt-optimization jobs: UPDATE on the experiment to create one (and the source prompt not
    # denied: the job loads it), READ to read or search, UPDATE to cancel, DELETE to delete.
    "create_prompt_optimization_job": Rule(needs((review.body_experiment, UPDATE), (jobs.source_prompts, NOT_DENIED))),
    "get_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, READ_ACTION)),
    "search_prompt_optimization_jobs": Rule(READ_EXPERIMENT),
    "cancel_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, UPDATE)),
    "delete_prompt_optimization_job": Rule(need(jobs.optimization_job_experiment, DELETE)),
    "delete_demo": Rule(admin),
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
