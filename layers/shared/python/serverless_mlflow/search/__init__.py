"""MLflow's search grammar and semantics (SqlAlchemyStore on sqlite), in pure Python over entity dicts.

No DynamoDB here: callers fetch candidate entities (from items or indexes), then use this package to validate
the request with MLflow's exact errors, decide matches, sort, and page with keyset tokens.

Quick use (any search API)::

    from serverless_mlflow import search

    q = search.prepare_run_search(filter_string, order_by, max_results, page_token)  # raises MlflowError
    runs, next_token = q.run(candidate_run_dicts)       # filter + sort + page in memory
    # or, for index-driven scans: q.matches(e), q.sort_key(e), q.is_after_token(e), q.page(sorted_matches)

Entity dict shapes (missing keys / None = SQL NULL):

    run = {
        "info": {"run_id": str, "run_name": str | None, "experiment_id": str, "user_id": str | None,
                 "status": str, "start_time": int | None, "end_time": int | None, "artifact_uri": str | None,
                 "lifecycle_stage": str},
        "metrics": {key: float},          # LATEST value per key (`latest_metric`); NaN / +-inf allowed
        "params": {key: str},
        "tags": {key: str},               # incl. "mlflow.runName": run_name filters read THIS tag (MLflow does);
                                          # ordering by run_name reads info["run_name"] (MLflow's column)
        "datasets": [{"name": str, "digest": str, "context": str | None}],   # context = mlflow.data.context input tag
    }
    experiment = {"experiment_id": str (digits), "name": str, "artifact_location": str, "lifecycle_stage": str,
                  "creation_time": int | None, "last_update_time": int | None, "tags": {key: str}}
    registered_model = {"name": str, "creation_timestamp": int, "last_updated_timestamp": int,
                        "description": str | None, "tags": {key: str}}
    model_version = {"name": str, "version": int | str (digits), "creation_timestamp": int,
                     "last_updated_timestamp": int, "current_stage": str, "source": str, "run_id": str | None,
                     "status": str, "tags": {key: str},
                     "model_is_prompt": bool (optional: True when ANY version of this model, deleted ones included,
                         has the tag mlflow.prompt.is_prompt='true'; defaults to this version's own tag)}
    logged_model: see `logged_models.py` (parse_logged_model_filter / parse_logged_model_order_by).

Lifecycle (view_type) and experiment scoping are the caller's: `view_type_stages(view_type)` gives the stages.
Registry filters also apply MLflow's implicit rules (prompts hidden unless asked for; Deleted_Internal
versions hidden).

Index-backed search (FTS / RANK items) recipe: get candidates from the index, then keep `q.matches(e)` and
`q.is_after_token(e)`, sort by `q.sort_key(e)`, and `q.page(...)`. Responses: `fit_payload(rows, page, order_by,
token)` shortens a page that would exceed Lambda's 6 MB response and hands back the token that continues it. A name index may narrow a filter using
`is_simple_name_substring(q.filter)` / `name_patterns` + `like_literals` (ILIKE folds ASCII only: index with
`ascii_lower`). A RANK scan for `order_by metrics.<k>` must follow `term_value` ranks: values (rank 0, in
direction order, with +/-inf stored as +/-MAX_FLOAT via `metric_value`, so inf ties MAX_FLOAT), then NaN
(rank 1), then runs lacking the key (rank 2), each class ordered by the remaining terms (default
`start_time DESC, run_id ASC`); params/tags: values (string code-point order) then missing. A token's
position (`decode_page_token`) is [[rank, value], ...] per term: the first pair tells where to resume.

Errors are `serverless_mlflow.core.errors.MlflowError`, with MLflow's message and error_code (mostly
INVALID_PARAMETER_VALUE; a few, e.g. duplicate order_by fields, are INTERNAL_ERROR as in MLflow).

May import: core, request, storage.
"""

from __future__ import annotations

from serverless_mlflow.search.filter_matching import (
    compare,
    filter_entities,
    is_more_recent_metric,
    latest_metric,
    matcher,
    matches,
    metric_value,
)
from serverless_mlflow.search.filters import (
    EXPERIMENT,
    IS_PROMPT_TAG_KEY,
    LOGGED_MODEL,
    MAX_FLOAT,
    MLFLOW_RUN_NAME,
    MODEL_VERSION,
    REGISTERED_MODEL,
    RUN,
    STAGE_DELETED_INTERNAL,
    Filter,
    is_simple_name_substring,
    name_patterns,
    parse_experiment_filter,
    parse_model_version_filter,
    parse_registered_model_filter,
    parse_run_filter,
    view_type_stages,
)
from serverless_mlflow.search.like import ascii_lower, like_literals, like_match, like_prefix, like_to_regex
from serverless_mlflow.search.logged_models import (
    parse_logged_model_filter,
    parse_logged_model_order_by,
    prepare_logged_model_search,
)
from serverless_mlflow.search.ordering import (
    OrderBy,
    OrderTerm,
    parse_experiment_order_by,
    parse_model_version_order_by,
    parse_registered_model_order_by,
    parse_run_order_by,
    position,
    position_key,
    sort,
    sort_key,
    term_value,
)
from serverless_mlflow.search.paging import (
    SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT,
    SEARCH_MAX_RESULTS_DEFAULT,
    SEARCH_MAX_RESULTS_THRESHOLD,
    SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT,
    SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD,
    SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT,
    SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD,
    check_max_results_experiments,
    check_max_results_model_versions,
    check_max_results_registered_models,
    check_max_results_runs,
    decode_page_token,
    encode_page_token,
    encode_position,
    fit_payload,
    is_after,
    page,
)
from serverless_mlflow.search.queries import (
    SearchQuery,
    prepare_experiment_search,
    prepare_model_version_search,
    prepare_registered_model_search,
    prepare_run_search,
)

__all__ = [
    "EXPERIMENT",
    "IS_PROMPT_TAG_KEY",
    "LOGGED_MODEL",
    "MAX_FLOAT",
    "MLFLOW_RUN_NAME",
    "MODEL_VERSION",
    "REGISTERED_MODEL",
    "RUN",
    "SEARCH_LOGGED_MODEL_MAX_RESULTS_DEFAULT",
    "SEARCH_MAX_RESULTS_DEFAULT",
    "SEARCH_MAX_RESULTS_THRESHOLD",
    "SEARCH_MODEL_VERSION_MAX_RESULTS_DEFAULT",
    "SEARCH_MODEL_VERSION_MAX_RESULTS_THRESHOLD",
    "SEARCH_REGISTERED_MODEL_MAX_RESULTS_DEFAULT",
    "SEARCH_REGISTERED_MODEL_MAX_RESULTS_THRESHOLD",
    "STAGE_DELETED_INTERNAL",
    "Filter",
    "OrderBy",
    "OrderTerm",
    "SearchQuery",
    "ascii_lower",
    "check_max_results_experiments",
    "check_max_results_model_versions",
    "check_max_results_registered_models",
    "check_max_results_runs",
    "compare",
    "decode_page_token",
    "encode_page_token",
    "encode_position",
    "filter_entities",
    "fit_payload",
    "is_after",
    "is_more_recent_metric",
    "is_simple_name_substring",
    "latest_metric",
    "like_literals",
    "like_match",
    "like_prefix",
    "like_to_regex",
    "matcher",
    "matches",
    "metric_value",
    "name_patterns",
    "page",
    "parse_experiment_filter",
    "parse_experiment_order_by",
    "parse_logged_model_filter",
    "parse_logged_model_order_by",
    "parse_model_version_filter",
    "parse_model_version_order_by",
    "parse_registered_model_filter",
    "parse_registered_model_order_by",
    "parse_run_filter",
    "parse_run_order_by",
    "position",
    "position_key",
    "prepare_experiment_search",
    "prepare_logged_model_search",
    "prepare_model_version_search",
    "prepare_registered_model_search",
    "prepare_run_search",
    "sort",
    "sort_key",
    "term_value",
    "view_type_stages",
]
