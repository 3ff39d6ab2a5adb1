"""Rules of the tracking and registry operations: experiments, runs, logged models, registered models and
versions, artifacts, and the web UI's own routes (see ``auth/rules/__init__.py`` for how rules apply)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import after, links, resources
from serverless_mlflow.auth.checks import Identity, all_of, authenticated, create_in_workspace, need, needs
from serverless_mlflow.auth.permissions import DELETE, EXPERIMENT, MANAGE_ACTION, NOT_DENIED, READ_ACTION, UPDATE
from serverless_mlflow.auth.rules.common import (
    DELETE_VERSION,
    READ_EXPERIMENT,
    READ_LOGGED_MODEL,
    READ_MODEL,
    READ_RUN,
    READ_VERSION,
    UPDATE_EXPERIMENT,
    UPDATE_LOGGED_MODEL,
    UPDATE_MODEL,
    UPDATE_RUN,
    UPDATE_VERSION,
    Rule,
)

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request


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


TRACKING_RULES: dict[str, Rule] = {
    # --- meta ----------------------------------------------------------------------------------
    "version": Rule(authenticated),
    # --- experiments ---------------------------------------------------------------------------
    "create_experiment": Rule(
        all_of(create_in_workspace, need(resources.kind_wildcard(EXPERIMENT), NOT_DENIED)), after=after.grant_experiment_creator
    ),
    "get_experiment": Rule(READ_EXPERIMENT),
    "get_experiment_by_name": Rule(need(resources.experiment_by_name, READ_ACTION)),
    "search_experiments": Rule(authenticated, after=after.filtered("experiments", after.experiment_row, 1000)),
    "update_experiment": Rule(UPDATE_EXPERIMENT),
    "delete_experiment": Rule(need(resources.experiment, DELETE)),
    "restore_experiment": Rule(need(resources.experiment, DELETE)),
    "set_experiment_tag": Rule(UPDATE_EXPERIMENT),
    "delete_experiment_tag": Rule(UPDATE_EXPERIMENT),
    # --- runs ------------------------------------------------------------------------------------
    "create_run": Rule(UPDATE_EXPERIMENT),
    "get_run": Rule(READ_RUN),
    "update_run": Rule(UPDATE_RUN),
    "delete_run": Rule(need(resources.run, DELETE)),
    "restore_run": Rule(need(resources.run, DELETE)),
    "search_runs": Rule(authenticated, prepare=_readable_experiments),
    # A metric, input or output naming a logged model writes onto that model too (_validate_can_update_run_and_models).
    "log_metric": Rule(needs((resources.run, UPDATE), (links.metric_model, UPDATE))),
    "log_param": Rule(UPDATE_RUN),
    "set_tag": Rule(UPDATE_RUN),
    "delete_tag": Rule(UPDATE_RUN),
    "log_batch": Rule(needs((resources.run, UPDATE), (links.batch_metric_models, UPDATE))),
    "log_inputs": Rule(needs((resources.run, UPDATE), (links.linked_models, UPDATE))),
    "log_outputs": Rule(needs((resources.run, UPDATE), (links.linked_models, UPDATE))),
    "log_model_json": Rule(UPDATE_RUN),
    "get_metric_history": Rule(READ_RUN),
    "get_metric_history_bulk_interval": Rule(need(resources.runs_param("run_ids"), READ_ACTION)),
    # --- logged models ---------------------------------------------------------------------------
    "create_logged_model": Rule(needs((resources.experiment, UPDATE), (links.source_run, READ_ACTION))),
    "search_logged_models": Rule(authenticated, after=after.filtered("models", after.logged_model_row, 50)),
    "get_logged_model": Rule(READ_LOGGED_MODEL),
    "finalize_logged_model": Rule(UPDATE_LOGGED_MODEL),
    "delete_logged_model": Rule(need(resources.logged_model, DELETE)),
    "set_logged_model_tags": Rule(UPDATE_LOGGED_MODEL),
    "delete_logged_model_tag": Rule(UPDATE_LOGGED_MODEL),
    "log_logged_model_params": Rule(UPDATE_LOGGED_MODEL),
    # --- model registry (shared with prompts: the persisted model says which family governs) -------
    "create_registered_model": Rule(
        all_of(create_in_workspace, need(resources.created_model, NOT_DENIED)), after=after.grant_model_creator
    ),
    "rename_registered_model": Rule(UPDATE_MODEL, after=after.move_model_grants),
    "update_registered_model": Rule(UPDATE_MODEL),
    "delete_registered_model": Rule(need(resources.registered_model, DELETE), after=after.drop_model_grants),
    "get_registered_model": Rule(READ_MODEL),
    "search_registered_models": Rule(authenticated, after=after.filtered("registered_models", after.model_row, 100)),
    "get_latest_versions": Rule(READ_VERSION),
    "set_registered_model_tag": Rule(UPDATE_MODEL),
    "delete_registered_model_tag": Rule(UPDATE_MODEL),
    "set_registered_model_alias": Rule(needs((resources.registered_model, UPDATE), (resources.model_version_parent, READ_ACTION))),
    "delete_registered_model_alias": Rule(needs((resources.registered_model, DELETE), (resources.model_version_parent, READ_ACTION))),
    "get_model_version_by_alias": Rule(READ_VERSION),
    # READ on what the version is registered from: its run, logged model, source model or source location.
    "create_model_version": Rule(needs((resources.model_version_parent, UPDATE), (links.version_sources, READ_ACTION))),
    "update_model_version": Rule(UPDATE_VERSION),
    "transition_model_version_stage": Rule(UPDATE_VERSION),
    "delete_model_version": Rule(DELETE_VERSION),
    "get_model_version": Rule(READ_VERSION),
    # MLflow filters rows by the parent's permission and does not refill this page.
    "search_model_versions": Rule(authenticated, after=after.filtered("model_versions", after.version_row, 10000, refill=False)),
    "get_model_version_download_uri": Rule(READ_VERSION),
    "set_model_version_tag": Rule(UPDATE_VERSION),
    "delete_model_version_tag": Rule(DELETE_VERSION),
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
    "list_run_artifacts": Rule(READ_RUN),
    # A presigned upload URL grants write access to its owner (a run, or a logged model); a download URL read access.
    "create_presigned_upload_url": Rule(need(resources.run_or_logged_model, UPDATE)),
    "create_presigned_download_url": Rule(READ_RUN),
    "get_run_artifact": Rule(READ_RUN),
    # validate_can_update_run_artifact: UPDATE on the run named in the query.
    "upload_run_artifact": Rule(need(resources.run_in_query, UPDATE)),
    "list_logged_model_artifacts": Rule(READ_LOGGED_MODEL),
    "get_logged_model_artifact": Rule(READ_LOGGED_MODEL),
    "get_model_version_artifact": Rule(READ_VERSION),
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
    "create_promptlab_run": Rule(UPDATE_EXPERIMENT),
    # Judged field by field inside the executor (auth/graphql_guard.py), as MLflow's GraphQL middleware does.
    "graphql": Rule(authenticated),
}
