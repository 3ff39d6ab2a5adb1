"""The stock mlflow client's tracing against the local runtime, compared call for call with SqlAlchemyStore (sqlite).

Each scenario runs twice with the real client: once with our server as tracking URI, once with MLflow's own
SqlAlchemyStore. What the client reads back (search_traces as list and DataFrame, get_trace, assessments,
tags) must agree, except for values that are store-specific by nature (ids, artifact locations).
"""

from __future__ import annotations

from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource, AssessmentSourceType
from mlflow.exceptions import MlflowException

from tests.conftest import unique
from tests.traces.helpers import trace_view

pytestmark = pytest.mark.usefixtures("tracing")


def _traced_app(prefix: str) -> None:
    @mlflow.trace(span_type="LLM")
    def inner(x: int) -> int:
        with mlflow.start_span(name="manual") as span:
            span.set_inputs({"x": x})
            span.set_attribute("custom", {"nested": [1, 2]})
            span.set_outputs(x * 2)
        return x * 2

    @mlflow.trace(name=f"{prefix}-outer", span_type="CHAIN")
    def outer(x: int) -> int:
        return inner(x) + 1

    @mlflow.trace(name=f"{prefix}-fails")
    def fails() -> None:
        raise ValueError("boom")

    outer(1)
    outer(2)
    with pytest.raises(ValueError):
        fails()
    with mlflow.start_span(name=f"{prefix}-root") as root:
        root.set_inputs({"q": "question"})
        with mlflow.start_span(name="child", span_type="RETRIEVER") as child:
            child.set_outputs(["doc1", "doc2"])
        root.set_outputs("answer")


def _write_and_read(uri: str) -> dict[str, Any]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("traces"))
    mlflow.set_experiment(experiment_id=experiment_id)
    _traced_app("app")
    client = MlflowClient(uri)
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    frame = mlflow.search_traces(locations=[experiment_id])
    fetched = [client.get_trace(t.info.trace_id) for t in listed]
    by_name = mlflow.search_traces(locations=[experiment_id], filter_string="trace.name = 'app-outer'", return_type="list")
    errors = mlflow.search_traces(locations=[experiment_id], filter_string="trace.status = 'ERROR'", return_type="list")
    like = mlflow.search_traces(locations=[experiment_id], filter_string="trace.name LIKE '%pp-ou%'", return_type="list")
    ilike = mlflow.search_traces(locations=[experiment_id], filter_string="name ILIKE 'APP-%'", return_type="list")
    tagged = mlflow.search_traces(
        locations=[experiment_id], filter_string="trace.status = 'OK' AND timestamp_ms > 0 AND execution_time_ms >= 0", return_type="list"
    )
    oldest = mlflow.search_traces(locations=[experiment_id], order_by=["timestamp_ms ASC"], max_results=2, return_type="list")
    pages, token = [], None
    while True:
        page = client.search_traces(locations=[experiment_id], max_results=3, page_token=token, include_spans=False)
        pages.append([t.info.tags.get("mlflow.traceName") for t in page])
        token = page.token
        if not token:
            break
    by_duration = client.search_traces(locations=[experiment_id], order_by=["execution_time_ms DESC", "name"], max_results=2)
    return {
        "pages": pages,
        "by_duration_rows": len(by_duration),
        "listed": [trace_view(t) for t in listed],
        "fetched": [trace_view(t) for t in fetched],
        "frame_columns": list(frame.columns),
        "frame_rows": len(frame),
        "frame_names": [tags.get("mlflow.traceName") for tags in frame["tags"]],
        "by_name": sorted(t.info.tags.get("mlflow.traceName") for t in by_name),
        "errors": [t.info.tags.get("mlflow.traceName") for t in errors],
        "like": sorted(t.info.tags.get("mlflow.traceName") for t in like),
        "ilike": sorted(t.info.tags.get("mlflow.traceName") for t in ilike),
        "ok_in_range": len(tagged),
        "oldest": [t.info.tags.get("mlflow.traceName") for t in oldest],
        "order_matches_time": [t.info.request_time for t in listed] == sorted((t.info.request_time for t in listed), reverse=True),
    }


def test_traces_search_and_get_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _write_and_read(server)
    reference = _write_and_read(reference_uri)
    assert len(ours["listed"]) == 4
    assert ours == reference
    spans = {span[0] for trace in ours["fetched"] for span in trace["spans"]}
    assert {"app-outer", "inner", "manual", "app-root", "child", "app-fails"} <= spans


def _spans_in_store(trace_id: str) -> str | None:
    return MlflowClient().get_trace(trace_id).info.tags.get("mlflow.trace.spansLocation")


def test_spans_are_stored_so_no_traces_json_is_needed(server: str) -> None:
    mlflow.set_tracking_uri(server)
    experiment_id = mlflow.create_experiment(unique("spans"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def answer(q: str) -> str:
        return q.upper()

    answer("hello")
    trace_id = mlflow.get_last_active_trace_id()
    assert _spans_in_store(trace_id) == "TRACKING_STORE"
    trace = MlflowClient().get_trace(trace_id)
    assert [s.name for s in trace.data.spans] == ["answer"]
    assert trace.data.spans[0].outputs == "HELLO"


def _assessments_and_tags(uri: str) -> dict[str, Any]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("assess"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def f(x: int) -> int:
        return x + 1

    f(1)
    trace_id = mlflow.get_last_active_trace_id()
    client = MlflowClient(uri)
    human = AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice")
    feedback = mlflow.log_feedback(
        trace_id=trace_id, name="correct", value=True, rationale="looks right", source=human, metadata={"k": "v"}
    )
    expectation = mlflow.log_expectation(trace_id=trace_id, name="expected", value={"answer": 2}, source=human)
    llm = AssessmentSource(source_type=AssessmentSourceType.LLM_JUDGE, source_id="judge")
    numeric = mlflow.log_feedback(trace_id=trace_id, name="score", value=0.5, source=llm)
    mlflow.update_assessment(
        trace_id, feedback.assessment_id, mlflow.entities.Feedback(name="correct", value=False, rationale="actually wrong")
    )
    mlflow.delete_assessment(trace_id, numeric.assessment_id)
    overridden = mlflow.log_feedback(trace_id=trace_id, name="tone", value="rude", source=llm)
    mlflow.override_feedback(trace_id=trace_id, assessment_id=overridden.assessment_id, value="polite", rationale="human fix", source=human)
    got = mlflow.get_assessment(trace_id, expectation.assessment_id)
    mlflow.set_trace_tag(trace_id, "team", "search")
    mlflow.set_trace_tag(trace_id, "temp", "x")
    mlflow.delete_trace_tag(trace_id, "temp")
    client.set_trace_tag(trace_id, "mlflow.traceName", "renamed")
    with pytest.raises(MlflowException) as missing_tag:
        mlflow.delete_trace_tag(trace_id, "never-set")
    trace = client.get_trace(trace_id)
    tagged = mlflow.search_traces(locations=[experiment_id], filter_string="tag.team = 'search'", return_type="list")
    renamed = mlflow.search_traces(locations=[experiment_id], filter_string="name = 'renamed'", return_type="list")
    return {
        "trace": trace_view(trace),
        "got": (got.name, repr(got.expectation.value)),
        "tagged": len(tagged),
        "renamed": len(renamed),
        "missing_tag": missing_tag.value.error_code,
    }


def test_assessments_and_tags_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _assessments_and_tags(server)
    reference = _assessments_and_tags(reference_uri)
    assert ours == reference
    assert sorted(a[0] for a in ours["trace"]["assessments"]) == ["correct", "expected", "tone", "tone"]


def _deletions(uri: str) -> dict[str, Any]:
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("delete"))
    mlflow.set_experiment(experiment_id=experiment_id)

    @mlflow.trace
    def f(x: int) -> int:
        return x

    ids = []
    for i in range(5):
        f(i)
        ids.append(mlflow.get_last_active_trace_id())
    client = MlflowClient(uri)
    by_ids = client.delete_traces(experiment_id, trace_ids=ids[:2])
    oldest = client.delete_traces(experiment_id, max_timestamp_millis=2**62, max_traces=1)
    left = mlflow.search_traces(locations=[experiment_id], return_type="list")
    with pytest.raises(MlflowException) as gone:
        client.get_trace(ids[0])
    return {
        "by_ids": by_ids,
        "oldest": oldest,
        "left": sorted(ids.index(t.info.trace_id) for t in left),
        "gone": gone.value.error_code,
    }


def test_delete_traces_matches_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _deletions(server)
    reference = _deletions(reference_uri)
    assert ours == reference
    assert ours["left"] == [3, 4]


def _inline_assessments(uri: str) -> dict[str, Any]:
    """Feedback and expectations logged *inside* a traced call travel with StartTraceV3 (trace_info.assessments)."""
    mlflow.set_tracking_uri(uri)
    experiment_id = mlflow.create_experiment(unique("inline-assess"))
    mlflow.set_experiment(experiment_id=experiment_id)
    human = AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice")

    @mlflow.trace(name="answer")
    def answer(question: str) -> str:
        trace_id = mlflow.get_active_trace_id()
        mlflow.log_feedback(trace_id=trace_id, name="relevance", value=0.75, rationale="on topic", metadata={"judge": "v1"})
        mlflow.log_expectation(trace_id=trace_id, name="expected", value={"answer": "Paris", "sources": ["wiki"]}, source=human)
        mlflow.log_feedback(trace_id=trace_id, name="ok", value=True, source=human)
        return "Paris"

    answer("capital of France?")
    trace_id = mlflow.get_last_active_trace_id()
    trace = MlflowClient(uri).get_trace(trace_id)
    listed = mlflow.search_traces(locations=[experiment_id], return_type="list")
    return {"trace": trace_view(trace), "listed": [sorted(a.name for a in t.info.assessments) for t in listed]}


def test_assessments_logged_inside_a_trace_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _inline_assessments(server)
    reference = _inline_assessments(reference_uri)
    assert ours == reference
    assert ours["listed"] == [["expected", "ok", "relevance"]]
