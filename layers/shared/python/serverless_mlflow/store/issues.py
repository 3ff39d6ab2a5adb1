"""Issues: quality or operational problems found in an experiment's traces (``SqlAlchemyStore`` issue methods).

An issue lives in its experiment's review partition (answered as MLflow's ``Issue`` proto JSON), with a
locator for get/update by id and a gsi2 entry for a workspace-wide search. Traces point at issues through
issue-reference assessments; the stream indexer keeps one ``issue_trace`` item per (issue, trace), so an
issue's trace count is one COUNT Query of its partition (as MLflow counts distinct traces per issue).

Public API (what issue detection builds on): ``create_issue``, ``get_issue``, ``update_issue``,
``search_issues``, ``trace_links`` and the enums ``STATUSES`` / ``SEVERITIES``.
"""

from __future__ import annotations

import uuid
from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.core.deferred import deferred
from serverless_mlflow.core.errors import MlflowError, invalid, not_found
from serverless_mlflow.request import workspace as request_workspace
from serverless_mlflow.storage import table
from serverless_mlflow.storage.issue_links import ISSUE_TRACE
from serverless_mlflow.storage.schema import entity
from serverless_mlflow.store import experiments as experiment_store
from serverless_mlflow.store import review
from serverless_mlflow.store import runs as run_store

# protobuf is imported by the first call that builds or parses a message, not at a handler's cold start.
protos = deferred("serverless_mlflow.request.protos")
# The filter grammar (sqlparse) for search_issues only.
issue_grammar = deferred("serverless_mlflow.store.issue_grammar")

ISSUE = entity("issue")
KIND = "issue"
ID_PREFIX = "iss-"
STATUSES = ("pending", "rejected", "resolved")  # mlflow.entities.issue.IssueStatus
SEVERITIES = ("not_an_issue", "low", "medium", "high")  # IssueSeverity, lowest to highest
DEFAULT_MAX_RESULTS = 100  # SEARCH_ISSUES_DEFAULT_MAX_RESULTS


def status_of(value: str) -> str:
    if value not in STATUSES:
        raise invalid(f"Invalid issue status {value!r}. Supported statuses: {list(STATUSES)}")
    return value


def severity_of(value: str) -> str:
    if value not in SEVERITIES:
        raise invalid(f"Invalid issue severity {value!r}. Supported severities: {list(SEVERITIES)}")
    return value


def answer(item: dict[str, Any], trace_count: int | None = None) -> dict[str, Any]:
    """``Issue.to_proto`` as JSON: empty lists and unset optional fields left out."""
    message = protos.CLASSES["Issue"](
        issue_id=item["issue_id"],
        experiment_id=str(item["experiment_id"]),
        name=item["name"],
        description=item["description"],
        status=item["status"],
        created_timestamp=int(item["created_timestamp"]),
        last_updated_timestamp=int(item["last_updated_timestamp"]),
    )
    for name in ("severity", "source_run_id", "created_by"):
        if item.get(name):
            setattr(message, name, item[name])
    for name in ("root_causes", "categories"):
        if item.get(name):
            getattr(message, name).extend(item[name])
    if trace_count is not None:
        message.trace_count = trace_count
    return protos.to_json(message)


def _missing(issue_id: str) -> Exception:
    return not_found(f"Issue with ID '{issue_id}' not found")


def issue_item(issue_id: str) -> dict[str, Any] | None:
    experiment_id = review.experiment_of(issue_id, KIND)
    return table.get(ISSUE.key(experiment_id=experiment_id, issue_id=issue_id)) if experiment_id else None


def create_issue(
    experiment_id: Any,
    name: str,
    description: str,
    status: str = "pending",
    severity: str | None = None,
    root_causes: list[str] | None = None,
    source_run_id: str | None = None,
    categories: list[str] | None = None,
    created_by: str | None = None,
) -> dict[str, Any]:
    experiment_id = review.active_experiment_id(experiment_id)
    if source_run_id and run_store.find_experiment_id(source_run_id) is None:
        # MLflow's issues table holds a foreign key to the run: its store refuses the insert (400 BAD_REQUEST).
        raise MlflowError(f"Run '{source_run_id}' does not exist: an issue's source_run_id must name a run.", "BAD_REQUEST")
    issue_id = f"{ID_PREFIX}{uuid.uuid4().hex}"
    now = clock.now_millis()
    attributes = {
        "issue_id": issue_id,
        "experiment_id": experiment_id,
        "name": name,
        "description": description,
        "status": status_of(status),
        "severity": severity_of(severity) if severity else None,
        "root_causes": list(root_causes) if root_causes else None,
        "source_run_id": source_run_id or None,
        "categories": list(categories) if categories else None,
        "created_by": created_by or None,
        "created_timestamp": now,
        "last_updated_timestamp": now,
    }
    # The experiment was just found in the request's workspace (``default`` with workspaces off): the issue's
    # workspace-wide search entry goes there.
    workspace = request_workspace.current()
    item = ISSUE.item(attributes, experiment_id=experiment_id, issue_id=issue_id, workspace=workspace)
    table.transact(
        [table.put_op(item, condition="attribute_not_exists(pk)"), table.put_op(review.locator_item(issue_id, experiment_id, KIND))]
    )
    return answer(item)


def get_issue(issue_id: str) -> dict[str, Any]:
    item = issue_item(issue_id)
    if item is None:
        raise _missing(issue_id)
    return answer(item)


def update_issue(
    issue_id: str, status: str | None = None, name: str | None = None, description: str | None = None, severity: str | None = None
) -> dict[str, Any]:
    item = issue_item(issue_id)
    if item is None:
        raise _missing(issue_id)
    changes = {
        "status": status_of(status) if status is not None else None,
        "name": name,
        "description": description,
        "severity": severity_of(severity) if severity is not None else None,
    }
    updated = {**item, **{k: v for k, v in changes.items() if v is not None}, "last_updated_timestamp": clock.now_millis()}
    table.put(updated, condition="attribute_exists(pk)")
    return answer(updated)


def trace_count(issue_id: str) -> int:
    """Distinct traces holding an issue reference to this issue (one COUNT Query)."""
    query = ISSUE_TRACE.query("of_issue", issue_id=issue_id)
    return sum(len(items) for items, _ in table.query_pages(**query))


def _matches(item: dict[str, Any], clauses: list[dict[str, Any]]) -> bool:
    for clause in clauses:
        value = item.get(clause["key"])
        # SQL: a NULL column compares neither equal nor unequal.
        if value is None:
            return False
        if (value == clause["value"]) != (clause["comparator"] == "="):
            return False
    return True


def _rank(severity: str | None) -> int:
    return SEVERITIES.index(severity) if severity in SEVERITIES else -1


def search_issues(
    experiment_id: Any = None,
    filter_string: str | None = None,
    max_results: int | None = None,
    page_token: str | None = None,
    include_trace_count: bool = False,
) -> tuple[list[dict[str, Any]], str | None]:
    """Severity (highest first), then trace count (with ``include_trace_count``), newest, issue id descending."""
    review.check_max_results(max_results, allow_null=True)
    if max_results is None:
        max_results = DEFAULT_MAX_RESULTS
    clauses = issue_grammar.IssueGrammar.parse_search_filter(filter_string)
    if experiment_id is not None:
        # A filter, not a lookup: an integer id is required, a missing experiment just has no issues.
        # An experiment of another workspace has none for this request (MLflow joins issues to the workspace).
        normalized = experiment_store.normalize_experiment_id(experiment_id)
        in_workspace = experiment_store.in_request_workspace(normalized)
        items = list(table.iter_query(**ISSUE.query("of_experiment", experiment_id=normalized))) if in_workspace else []
    else:
        items = list(table.iter_query(**ISSUE.query("in_workspace", workspace=request_workspace.current())))
    items = [item for item in items if _matches(item, clauses)]
    counts = {item["issue_id"]: trace_count(item["issue_id"]) for item in items} if include_trace_count else {}

    def order(item: dict[str, Any]) -> tuple[Any, ...]:
        return (
            -_rank(item.get("severity")),
            -counts.get(item["issue_id"], 0),
            -int(item["created_timestamp"]),
            _descending(item["issue_id"]),
        )

    page, token = review.page_of(items, order, max_results, page_token)
    return [answer(item, counts.get(item["issue_id"]) if include_trace_count else None) for item in page], token


def _descending(text: str) -> list[int]:
    """A sort key ordering strings descending (code points complemented)."""
    return [0x10FFFF - ord(ch) for ch in text] + [0x110000]
