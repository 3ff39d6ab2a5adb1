"""Rules of the GenAI operations: traces and assessments, evaluation datasets, scorers, and review (label
schemas, review queues, issues; see ``auth/review.py``)."""

from __future__ import annotations

from serverless_mlflow.auth import after, links, resources, review
from serverless_mlflow.auth.checks import admin, need, needs, or_gateway_usage_trace
from serverless_mlflow.auth.permissions import DELETE, MANAGE_ACTION, READ_ACTION, UPDATE
from serverless_mlflow.auth.rules.common import (
    READ_DATASET,
    READ_EXPERIMENT,
    READ_TRACE,
    UPDATE_DATASET,
    UPDATE_EXPERIMENT,
    UPDATE_TRACE,
    Rule,
)

GENAI_RULES: dict[str, Rule] = {
    # --- traces (validate_can_*_trace: the trace's experiment governs) ----------------------------------
    # Spans or a trace info under an existing trace id change that trace: UPDATE on its experiment as well.
    # The gateway's usage traces are its own record (checks.or_gateway_usage_trace).
    "otlp_traces": Rule(or_gateway_usage_trace(needs((resources.otlp_experiment, UPDATE), (links.exported_trace_owners, UPDATE)))),
    "start_trace": Rule(or_gateway_usage_trace(needs((resources.started_trace_experiment, UPDATE), (links.started_trace_owner, UPDATE)))),
    "get_trace_info": Rule(READ_TRACE),
    "get_trace_info_v2": Rule(READ_TRACE),
    "get_trace": Rule(READ_TRACE),
    "get_trace_artifact": Rule(READ_TRACE),
    "batch_get_traces": Rule(need(resources.traces_param("trace_ids"), READ_ACTION)),
    "batch_get_trace_infos": Rule(need(resources.traces_param("trace_ids"), READ_ACTION)),
    "search_traces": Rule(need(resources.trace_search_experiments, READ_ACTION)),
    "search_traces_v2": Rule(need(resources.trace_search_experiments, READ_ACTION)),
    "query_trace_metrics": Rule(need(resources.experiment_ids_param, READ_ACTION)),
    "calculate_trace_filter_correlation": Rule(need(resources.experiment_ids_param, READ_ACTION)),
    # mlflow 2.x: StartTrace names its experiment (validate_can_start_trace), EndTrace its trace.
    "start_trace_v2": Rule(UPDATE_EXPERIMENT),
    "end_trace_v2": Rule(UPDATE_TRACE),
    "set_trace_tag": Rule(UPDATE_TRACE),
    "delete_trace_tag": Rule(UPDATE_TRACE),
    "delete_traces": Rule(need(resources.experiment, DELETE)),
    "link_traces_to_run": Rule(needs((resources.run, UPDATE), (resources.traces_param("trace_ids"), READ_ACTION))),
    # validate_can_update_trace_by_trace_id: the trace's experiment governs.
    "link_prompts_to_trace": Rule(UPDATE_TRACE),
    "create_assessment": Rule(UPDATE_TRACE),
    "get_assessment": Rule(READ_TRACE),
    "update_assessment": Rule(UPDATE_TRACE),
    "delete_assessment": Rule(UPDATE_TRACE),
    # --- GenAI evaluation datasets (governed by their experiments) and scorers (by their experiment) ----
    "create_dataset": Rule(need(resources.experiment_ids_param, UPDATE)),
    "get_dataset": Rule(READ_DATASET),
    "get_dataset_records": Rule(READ_DATASET),
    "get_dataset_experiment_ids": Rule(READ_DATASET),
    "delete_dataset": Rule(need(resources.dataset_experiments, DELETE)),
    "set_dataset_tags": Rule(UPDATE_DATASET),
    "delete_dataset_tag": Rule(UPDATE_DATASET),
    "upsert_dataset_records": Rule(UPDATE_DATASET),
    "delete_dataset_records": Rule(UPDATE_DATASET),
    "remove_dataset_from_experiments": Rule(UPDATE_DATASET),
    "add_dataset_to_experiments": Rule(needs((resources.dataset_experiments, UPDATE), (resources.experiment_ids_param, UPDATE))),
    "register_scorer": Rule(UPDATE_EXPERIMENT),
    # One experiment: READ on it; none named (a listing across experiments): rows filtered (filter_list_scorers).
    "list_scorers": Rule(
        need(resources.optional_experiment, READ_ACTION), after=after.filtered("scorers", after.experiment_row, 0, refill=False)
    ),
    "list_scorer_versions": Rule(READ_EXPERIMENT),
    "get_scorer": Rule(READ_EXPERIMENT),
    "delete_scorer": Rule(need(resources.experiment, DELETE)),
    "get_online_scoring_configs": Rule(need(links.scoring_config_experiments, READ_ACTION)),
    "upsert_online_scoring_config": Rule(UPDATE_EXPERIMENT),
    # --- GenAI review (label schemas, review queues, issues): see auth/review.py --------------------------
    "create_label_schema": Rule(need(resources.experiment, MANAGE_ACTION)),
    "get_label_schema": Rule(need(review.label_schema_experiment, READ_ACTION)),
    "get_label_schema_by_name": Rule(READ_EXPERIMENT),
    "list_label_schemas": Rule(READ_EXPERIMENT),
    "update_label_schema": Rule(need(review.label_schema_experiment, MANAGE_ACTION)),
    "delete_label_schema": Rule(need(review.label_schema_experiment, MANAGE_ACTION)),
    "create_review_queue": Rule(UPDATE_EXPERIMENT),
    "get_or_create_user_queue": Rule(UPDATE_EXPERIMENT),
    "get_review_queue": Rule(review.view_queue),
    "get_review_queue_by_name": Rule(review.view_queue_by_name),
    "list_review_queues": Rule(READ_EXPERIMENT, after=review.visible_queues),
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
}
