"""The stock client's labeling workflow (label schemas, review queues, a reviewer's feedback, issues) against the
local runtime, compared call for call with MLflow's own SqlAlchemyStore (sqlite)."""

from __future__ import annotations

from typing import Any

import mlflow
import pytest
from mlflow.entities import AssessmentSource, AssessmentSourceType
from mlflow.entities.issue import IssueSeverity, IssueStatus
from mlflow.genai import label_schemas, review_queues
from mlflow.genai.label_schemas import InputCategorical, InputPassFail, InputText
from mlflow.tracing.client import TracingClient

from tests.conftest import unique

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("tracing")]


def _schema_view(schema: Any) -> tuple[Any, ...]:
    return (schema.name, str(schema.type), repr(schema.input), schema.instruction, schema.enable_comment, schema.is_default)


def _queue_view(queue: Any, schema_names: dict[str, str]) -> tuple[Any, ...]:
    return (queue.name, str(queue.queue_type), queue.created_by, sorted(queue.users), sorted(schema_names[s] for s in queue.schema_ids))


def _workflow(uri: str) -> dict[str, Any]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("labeling"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace(name="answer")
    def answer(question: str) -> str:
        return question.upper()

    trace_ids = []
    for question in ("what is mlflow?", "is it serverless?", "how much does it cost?"):
        answer(question)
        trace_ids.append(mlflow.get_last_active_trace_id())

    correct = label_schemas.create_label_schema(
        "correct", type="feedback", input=InputPassFail(positive_label="Yes", negative_label="No"), instruction="Is it right?"
    )
    tone = label_schemas.create_label_schema(
        "tone", type="feedback", input=InputCategorical(options=["polite", "rude"]), enable_comment=True
    )
    label_schemas.create_label_schema("ideal answer", type="expectation", input=InputText(max_length=500))
    listed = label_schemas.list_label_schemas()
    names = {s.schema_id: s.name for s in listed}
    label_schemas.update_label_schema(schema_id=tone.schema_id, instruction="How does it sound?")

    queue = review_queues.create_review_queue(
        "Weekly", queue_type="custom", users=["Alice", "bob"], schema_ids=[correct.schema_id, tone.schema_id]
    )
    user_queue = review_queues.get_or_create_user_queue("carol")
    review_queues.add_items_to_review_queue(queue.queue_id, item_ids=trace_ids)
    review_queues.add_items_to_review_queue(user_queue.queue_id, item_ids=trace_ids[:1])
    # A reviewer labels the first trace and completes it; declines the second.
    reviewer = AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice")
    mlflow.log_feedback(trace_id=trace_ids[0], name="correct", value=True, source=reviewer)
    mlflow.log_feedback(trace_id=trace_ids[0], name="tone", value="polite", rationale="friendly", source=reviewer)
    review_queues.set_review_queue_item_status(queue.queue_id, item_id=trace_ids[0], status="complete", completed_by="alice")
    review_queues.set_review_queue_item_status(queue.queue_id, item_id=trace_ids[1], status="declined", completed_by="bob")
    items = review_queues.list_review_queue_items(queue.queue_id)
    pending = review_queues.list_review_queue_items(queue.queue_id, status="pending")
    labeled = mlflow.get_trace(trace_ids[0]).info.assessments

    # Issues: created by detection, referenced from traces.
    client = TracingClient(uri)
    slow = client._create_issue(experiment_id, "Slow answers", "p99 over 5s", severity=IssueSeverity.HIGH, categories=["latency"])
    client._create_issue(experiment_id, "Typos", "spelling", status=IssueStatus.RESOLVED, severity=IssueSeverity.LOW)
    for trace_id in trace_ids[:2]:
        mlflow.log_issue(trace_id=trace_id, issue_id=slow.issue_id, issue_name=slow.name)
    found = client.store.search_issues(experiment_id=experiment_id, include_trace_count=True)
    return {
        "schemas": [_schema_view(s) for s in label_schemas.list_label_schemas()],
        "queues": [_queue_view(q, names) for q in review_queues.list_review_queues()],
        "carol": [_queue_view(q, names) for q in review_queues.list_review_queues(user="Carol")],
        # Attached in one call (one creation time): listed by item id, and trace ids differ per store.
        "items": sorted((trace_ids.index(i.item_id), str(i.status), i.completed_by) for i in items),
        "items_in_id_order": [i.item_id for i in items] == sorted(trace_ids),
        "pending": [trace_ids.index(i.item_id) for i in pending],
        "labeled": sorted((a.name, repr(a.value), a.rationale, a.source.source_id) for a in labeled),
        "issues": [(i.name, str(i.status), str(i.severity), i.trace_count, i.categories) for i in found],
    }


def test_labeling_workflow_matches_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _workflow(server)
    reference = _workflow(reference_uri)
    assert ours == reference
    assert ours["items"] == [(0, "complete", "alice"), (1, "declined", "bob"), (2, "pending", None)]
    assert ours["items_in_id_order"] is True
    assert ours["issues"][0][:4] == ("Slow answers", "pending", "high", 2)
