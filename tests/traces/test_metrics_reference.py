"""traces/metrics, filter correlation and span-content search with the stock client, compared call for call with
MLflow's own SqlAlchemyStore (sqlite) on the same traces.

The traces are spread over six hours in the past (the client sets their times), with LLM spans carrying token
usage, model, provider and cost, tool spans, error traces and assessments (one overridden). Each query runs
through the rollups for whole hours and raw rows for the partial hours at the edges of its range (or raw only,
where rollups cannot answer); every answer must equal MLflow's, percentiles exactly (every group here holds
fewer values than a summary keeps exactly).
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict
from typing import Any

import mlflow
import pytest
from mlflow import MlflowClient
from mlflow.entities import AssessmentSource, AssessmentSourceType
from mlflow.entities.trace_metrics import AggregationType, MetricAggregation, MetricViewType
from mlflow.exceptions import MlflowException
from mlflow.tracing.client import TracingClient

from tests.conftest import unique

pytestmark = [pytest.mark.e2e, pytest.mark.usefixtures("tracing")]

HOUR_MS = 3_600_000
NAMES = ("chat", "search", "plan")
MODELS = (("gpt-5.2", "openai", 1.75), ("claude-sonnet-4-5", "anthropic", 3.0))
BASE_MS = (int(time.time() * 1000) // HOUR_MS - 8) * HOUR_MS


def _ns(ms: float) -> int:
    return int(ms * 1_000_000)


def _traces(uri: str) -> tuple[MlflowClient, str, dict[str, str]]:
    """30 traces over about six hours; returns the client, the experiment and trace id by trace name."""
    mlflow.set_tracking_uri(uri)
    client = MlflowClient(uri)
    experiment_id = client.create_experiment(unique("metrics"))
    ids = {}
    for i in range(30):
        start = BASE_MS + i * 13 * 60_000 + 7_000
        name = NAMES[i % 3]
        root = client.start_trace(
            f"{name}", span_type="CHAIN", inputs={"q": f"question {i} about timeouts" if i % 4 == 0 else f"question {i}"},
            experiment_id=experiment_id, tags={"env": "prod" if i % 2 else "dev", "slot": str(i)}, start_time_ns=_ns(start),
        )  # fmt: skip
        model, provider, price = MODELS[i % 2]
        tokens_in, tokens_out = 100 + 7 * i, 20 + 3 * i
        llm = client.start_span(
            "generate", root.trace_id, root.span_id, span_type="LLM", inputs={"messages": [{"role": "user", "content": f"q{i}"}]},
            attributes={
                "mlflow.chat.tokenUsage": {"input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
                "mlflow.llm.model": model,
                "mlflow.llm.provider": provider,
                "mlflow.llm.cost": {"input_cost": tokens_in * price / 1e6, "output_cost": tokens_out * 2 * price / 1e6, "total_cost": (tokens_in + 2 * tokens_out) * price / 1e6},
            },
            start_time_ns=_ns(start + 5),
        )  # fmt: skip
        client.end_span(
            root.trace_id,
            llm.span_id,
            outputs={"text": "Paris" if i % 5 else "the request hit a timeout"},
            end_time_ns=_ns(start + 40 + 11 * i),
        )
        if i % 3 == 1:
            tool = client.start_span(
                "lookup", root.trace_id, root.span_id, span_type="TOOL", inputs={"id": i}, start_time_ns=_ns(start + 60 + 11 * i)
            )
            client.end_span(root.trace_id, tool.span_id, status="ERROR" if i % 6 == 1 else "OK", end_time_ns=_ns(start + 90 + 17 * i))
        client.end_trace(root.trace_id, outputs={"a": i}, status="ERROR" if i % 7 == 3 else "OK", end_time_ns=_ns(start + 120 + 19 * i))
        ids[f"t{i}"] = root.trace_id
    human = AssessmentSource(source_type=AssessmentSourceType.HUMAN, source_id="alice")
    for i in range(0, 30, 2):
        trace_id = ids[f"t{i}"]
        mlflow.log_feedback(trace_id=trace_id, name="score", value=(i % 5) / 4, source=human)
        mlflow.log_feedback(trace_id=trace_id, name="correct", value=i % 3 == 0, source=human)
        if i % 4 == 0:
            mlflow.log_feedback(trace_id=trace_id, name="tone", value="polite" if i % 8 else "rude", source=human)
        if i % 6 == 0:
            mlflow.log_expectation(trace_id=trace_id, name="expected", value="Paris", source=human)
    overridden = mlflow.log_feedback(trace_id=ids["t2"], name="score", value=0.0, source=human)
    mlflow.override_feedback(trace_id=ids["t2"], assessment_id=overridden.assessment_id, value=1.0, source=human)
    return client, experiment_id, ids


def _agg(kind: str, p: float | None = None) -> MetricAggregation:
    return MetricAggregation(aggregation_type=AggregationType(kind), percentile_value=p)


RANGE = {"start_time_ms": BASE_MS + 30 * 60_000, "end_time_ms": BASE_MS + 5 * HOUR_MS + 10 * 60_000}
SPREAD = [_agg("AVG"), _agg("MIN"), _agg("MAX"), _agg("PERCENTILE", 50.0), _agg("PERCENTILE", 90.0), _agg("PERCENTILE", 99.0)]
STATS = [_agg("SUM"), *SPREAD]

QUERIES: list[dict[str, Any]] = [
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")]},
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")], "dimensions": ["trace_status"]},
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["trace_name", "trace_status"],
        "time_interval_seconds": 3600,
        **RANGE,
    },
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "time_interval_seconds": 7200,
        **RANGE,
        "filters": ["trace.status = 'OK'"],
    },
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "time_interval_seconds": 900,
        **RANGE,
    },
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "filters": ["trace.tag.env = 'prod'"],
        "dimensions": ["trace_name"],
    },
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "filters": ["trace.tag.mlflow.traceName = 'chat'"],
        **RANGE,
    },
    {"view_type": MetricViewType.TRACES, "metric_name": "latency", "aggregations": SPREAD, "dimensions": ["trace_name"]},
    {"view_type": MetricViewType.TRACES, "metric_name": "latency", "aggregations": SPREAD, "time_interval_seconds": 3600, **RANGE},
    {"view_type": MetricViewType.TRACES, "metric_name": "total_tokens", "aggregations": STATS, "time_interval_seconds": 3600, **RANGE},
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "input_tokens",
        "aggregations": [_agg("SUM"), _agg("AVG")],
        "dimensions": ["trace_name"],
    },
    {"view_type": MetricViewType.TRACES, "metric_name": "cache_read_input_tokens", "aggregations": [_agg("SUM")]},
    {"view_type": MetricViewType.SPANS, "metric_name": "span_count", "aggregations": [_agg("COUNT")], "dimensions": ["span_name"]},
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "span_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["span_type", "span_status"],
        "time_interval_seconds": 3600,
        **RANGE,
    },
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "span_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["span_model_name", "span_model_provider"],
        "filters": ["span.type = 'LLM'"],
    },
    {"view_type": MetricViewType.SPANS, "metric_name": "latency", "aggregations": SPREAD, "dimensions": ["span_name", "span_status"]},
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "latency",
        "aggregations": [_agg("AVG")],
        "filters": ["span.name = 'lookup'", "trace.status = 'OK'"],
        **RANGE,
    },
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "total_cost",
        "aggregations": STATS,
        "dimensions": ["span_model_name"],
        "time_interval_seconds": 3600,
        **RANGE,
    },
    {"view_type": MetricViewType.SPANS, "metric_name": "input_cost", "aggregations": [_agg("SUM")], "dimensions": ["span_model_provider"]},
    {
        "view_type": MetricViewType.ASSESSMENTS,
        "metric_name": "assessment_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["assessment_name"],
    },
    {
        "view_type": MetricViewType.ASSESSMENTS,
        "metric_name": "assessment_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["assessment_name", "assessment_value"],
        "filters": ["assessment.type = 'feedback'"],
    },
    {
        "view_type": MetricViewType.ASSESSMENTS,
        "metric_name": "assessment_value",
        "aggregations": SPREAD,
        "dimensions": ["assessment_name"],
        "time_interval_seconds": 3600,
        **RANGE,
    },
    {
        "view_type": MetricViewType.ASSESSMENTS,
        "metric_name": "assessment_count",
        "aggregations": [_agg("COUNT")],
        "filters": ["assessment.name = 'score'", "trace.tag.env = 'dev'"],
    },
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["trace_name"],
        "max_results": 2,
    },
    {"view_type": MetricViewType.TRACES, "metric_name": "latency", "aggregations": [_agg("AVG")], "start_time_ms": 0, "end_time_ms": 1},
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "start_time_ms": 0,
        "end_time_ms": 1,
    },
    # Refused as MLflow refuses them.
    {"view_type": MetricViewType.TRACES, "metric_name": "nope", "aggregations": [_agg("COUNT")]},
    {"view_type": MetricViewType.TRACES, "metric_name": "latency", "aggregations": [_agg("COUNT")]},
    {"view_type": MetricViewType.TRACES, "metric_name": "latency", "aggregations": [_agg("AVG")], "dimensions": ["trace_status"]},
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")], "time_interval_seconds": 60},
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")], "filters": ["span.name = 'x'"]},
    {
        "view_type": MetricViewType.TRACES,
        "metric_name": "trace_count",
        "aggregations": [_agg("COUNT")],
        "filters": ["trace.status != 'OK'"],
    },
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")], "filters": ["trace.tag = 'x'"]},
]


def _answers(store: Any, experiment_id: str) -> list[Any]:
    out = []
    for query in QUERIES:
        try:
            points = store.query_trace_metrics(experiment_ids=[experiment_id], **query)
            out.append([asdict(p) for p in points])
        except MlflowException as error:
            # The REST client prefixes the server's message with its error code; the store raises it bare.
            out.append(("error", error.error_code, error.message.removeprefix(f"{error.error_code}: ")))
    return out


def _close(ours: Any, theirs: Any) -> bool:
    if isinstance(ours, float) and isinstance(theirs, (int, float)):
        return math.isclose(ours, theirs, rel_tol=1e-9, abs_tol=1e-12)
    if isinstance(ours, dict) and isinstance(theirs, dict):
        return ours.keys() == theirs.keys() and all(_close(ours[k], theirs[k]) for k in ours)
    if isinstance(ours, (list, tuple)) and isinstance(theirs, (list, tuple)):
        return len(ours) == len(theirs) and all(_close(a, b) for a, b in zip(ours, theirs, strict=True))
    return ours == theirs


def _scenario(uri: str) -> dict[str, Any]:
    client, experiment_id, ids = _traces(uri)
    store = client._tracing_client.store
    before = _answers(store, experiment_id)
    # Deleting traces takes them out of every rollup.
    client.delete_traces(experiment_id, trace_ids=[ids["t4"], ids["t13"]])
    after = _answers(store, experiment_id)
    return {"before": before, "after": after}


def test_query_trace_metrics_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _scenario(server)
    reference = _scenario(reference_uri)
    for phase in ("before", "after"):
        for query, mine, theirs in zip(QUERIES, ours[phase], reference[phase], strict=True):
            assert _close(mine, theirs), (phase, query, mine, theirs)
    counts = ours["before"][0]
    assert counts == [{"metric_name": "trace_count", "dimensions": {}, "values": {"COUNT": 30.0}}]


def _correlation_and_text(uri: str) -> dict[str, Any]:
    client, experiment_id, ids = _traces(uri)
    names = {v: k for k, v in ids.items()}
    tracing = TracingClient(tracking_uri=uri)
    correlations = []
    for first, second, base in (
        ("tags.env = 'prod'", "status = 'ERROR'", None),
        ("trace.text LIKE '%timeout%'", "tags.env = 'dev'", None),
        ("span.type = 'TOOL'", "span.status = 'ERROR'", "timestamp_ms > 0"),
        ("tags.env = 'staging'", "status = 'OK'", None),
    ):
        result = tracing.calculate_trace_filter_correlation(
            experiment_ids=[experiment_id], filter_string1=first, filter_string2=second, base_filter=base
        )
        correlations.append({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in asdict(result).items()})
    searches = []
    for filter_string in (
        "trace.text LIKE '%timeout%'",
        "trace.text ILIKE '%TIMEOUT%'",
        "trace.text LIKE '%Paris%' AND tags.env = 'dev'",
        'span.content LIKE \'%"role": "user"%\'',
        "trace.text LIKE '%question 1_%'",
        "span.name = 'lookup' AND span.status = 'ERROR'",
        "span.type IN ('TOOL', 'RETRIEVER')",
        "trace.text LIKE '%nothing like this anywhere%'",
        "trace.text LIKE 'x'",
    ):
        found = client.search_traces(experiment_ids=[experiment_id], filter_string=filter_string, max_results=500)
        searches.append(sorted(names[t.info.trace_id] for t in found))
    with pytest.raises(MlflowException) as refused:
        client.search_traces(experiment_ids=[experiment_id], filter_string="span.content = 'x'")
    return {"correlations": correlations, "searches": searches, "refused": refused.value.error_code}


def test_filter_correlation_and_text_search_match_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours = _correlation_and_text(server)
    reference = _correlation_and_text(reference_uri)
    assert _close(ours, reference), (ours, reference)
    assert 0 < len(ours["searches"][0]) < 30  # the pattern is selective: some traces, not all


GROWING_QUERIES: list[dict[str, Any]] = [
    {"view_type": MetricViewType.SPANS, "metric_name": "span_count", "aggregations": [_agg("COUNT")], "dimensions": ["span_name"]},
    {
        "view_type": MetricViewType.SPANS,
        "metric_name": "span_count",
        "aggregations": [_agg("COUNT")],
        "dimensions": ["span_type", "span_status"],
    },
    {"view_type": MetricViewType.TRACES, "metric_name": "trace_count", "aggregations": [_agg("COUNT")], "dimensions": ["trace_status"]},
]


def _growing_trace(uri: str) -> list[Any]:
    """One trace whose client logs each span as it ends (the trace is in progress until its root ends): the
    indexer re-aggregates a growing trace only as its span count doubles, and exactly once it is finished."""
    mlflow.set_tracking_uri(uri)
    experiment_id = MlflowClient(uri).create_experiment(unique("growing"))
    mlflow.set_experiment(experiment_id=experiment_id)
    with mlflow.start_span(name="root"):
        for i in range(37):
            with mlflow.start_span(name=f"step-{i % 4}") as span:
                span.set_inputs({"i": i})
    store = MlflowClient(uri)._tracing_client.store
    return [[asdict(p) for p in store.query_trace_metrics(experiment_ids=[experiment_id], **query)] for query in GROWING_QUERIES]


def test_a_trace_logged_span_by_span_aggregates_like_sqlalchemy_store(server: str, reference_uri: str) -> None:
    ours, reference = _growing_trace(server), _growing_trace(reference_uri)
    assert _close(ours, reference), (ours, reference)
    assert sum(point["values"]["COUNT"] for point in ours[0]) == 38
