"""Assessments over raw REST, answered like MLflow's own server (Flask handlers + SqlAlchemyStore on sqlite).

Every request goes to both servers; status, error code, message and the answer (ids bound per side, times
compared for presence) must agree: values of every JSON type, serialized expectations, errors, sources,
metadata, overrides and their undoing, field-mask updates, and the assessments a ``StartTraceV3`` carries.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.conftest import unique
from tests.reference_twin import HttpTwin

pytestmark = pytest.mark.e2e

TIMES = frozenset({"create_time", "last_update_time", "request_time"})


def _parsed_serialized_values(value: Any) -> Any:
    """A serialized expectation's JSON text as data: the key order of a protobuf Struct is unspecified."""
    if isinstance(value, dict):
        out = {k: _parsed_serialized_values(v) for k, v in value.items()}
        if out.get("serialization_format") == "JSON_FORMAT" and isinstance(out.get("value"), str):
            out["value"] = json.loads(out["value"])
        return out
    if isinstance(value, list):
        return [_parsed_serialized_values(v) for v in value]
    return value


def _start_twin(server: str) -> HttpTwin:
    twin = HttpTwin.start(server, volatile=TIMES)
    twin.rewrite = _parsed_serialized_values
    _experiment(twin)
    return twin


def _experiment(twin: HttpTwin) -> None:
    twin.api = "/api/2.0/mlflow"
    ours, reference = twin.call("POST", "experiments/create", {"name": unique("assess-ref")})
    twin.bind("exp", ours.body["experiment_id"], reference.body["experiment_id"])
    twin.api = "/api/3.0/mlflow"


def _start(twin: HttpTwin, trace_id: str, assessments: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "trace_id": trace_id,
        "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "{exp}"}},
        "request_time": "2025-01-01T00:00:00.250Z",
        "execution_duration": "0.500s",
        "state": "OK",
        "trace_metadata": {"k": "v"},
        "tags": {"t": "1"},
    }
    if assessments is not None:
        info["assessments"] = assessments
    return {"trace": {"trace_info": info}}


def _comparable_trace(answer: dict[str, Any]) -> dict[str, Any]:
    info = dict(answer["trace"]["trace_info"])
    info["tags"] = {k: v for k, v in info.get("tags", {}).items() if k != "mlflow.artifactLocation"}
    info["assessments"] = sorted(info.get("assessments", []), key=lambda a: (a["assessment_name"], str(a.get("assessment_id"))))
    return info


def _same_trace(twin: HttpTwin, trace_id: str) -> dict[str, Any]:
    ours, reference = twin.call("GET", f"traces/{trace_id}")
    assert ours.status == reference.status == 200, (ours, reference)
    mine = twin.normalize(_comparable_trace(ours.body), "ours")
    theirs = twin.normalize(_comparable_trace(reference.body), "reference")
    assert mine == theirs
    return ours.body


@pytest.fixture
def twin(server: str) -> HttpTwin:
    twin = _start_twin(server)
    twin.ours_values["tr"] = twin.reference_values["tr"] = "tr-" + uuid.uuid4().hex
    ours, reference = twin.call("POST", "traces", _start(twin, "{tr}"))
    assert ours.status == reference.status == 200, (ours, reference)
    return twin


VALUES: list[dict[str, Any]] = [
    {"feedback": {"value": True}},
    {"feedback": {"value": 4}},
    {"feedback": {"value": 0.25}},
    {"feedback": {"value": "polite"}},
    {"feedback": {"value": {"rating": 4, "comments": "Good response", "nested": [1, None, {"a": False}]}}},
    {"feedback": {"value": [1, "two", 3.5]}},
    {"feedback": {"value": None}},
    {"feedback": {"error": {"error_code": "RATE_LIMIT", "error_message": "slow down", "stack_trace": "x" * 12000}}},
    {"feedback": {"value": 1, "error": {"error_code": "E"}}},
    {"feedback": {}},
    {"expectation": {"value": "Paris"}},
    {"expectation": {"value": 42}},
    {"expectation": {"value": {"threshold_ms": 1000, "actual_ms": 750, "passed": True}}},
    {"expectation": {"value": ["a", "b"]}},
    {"expectation": {"serialized_value": {"serialization_format": "JSON_FORMAT", "value": '{"x": [1, 2]}'}}},
    {"expectation": {"serialized_value": {"serialization_format": "JSON_FORMAT", "value": "7"}}},
    {"expectation": {"serialized_value": {"serialization_format": "PICKLE", "value": "7"}}},
    {"expectation": {}},
    {"issue": {"issue_name": "hallucination"}},
]


@pytest.mark.parametrize("value", VALUES, ids=[str(i) for i in range(len(VALUES))])
def test_create_and_get_each_kind_of_value(twin: HttpTwin, value: dict[str, Any]) -> None:
    body = {
        "assessment": {
            "assessment_name": "quality",
            "source": {"source_type": "HUMAN", "source_id": "evaluator@company.com"},
            "rationale": "because",
            "metadata": {"model": "gpt-4", "version": "1.0"},
            "span_id": "abc",
            **value,
        }
    }
    ours, _ = twin.same("POST", "traces/{tr}/assessments", body, bind=("a", "assessment.assessment_id"))
    if ours.status == 200:
        twin.same("GET", "traces/{tr}/assessments/{a}")
        _same_trace(twin, "{tr}")


@pytest.mark.parametrize(
    "assessment",
    [
        {"assessment_name": "bare", "feedback": {"value": 1}},
        {"assessmentName": "camel", "feedback": {"value": 1}, "source": {"sourceType": "LLM_JUDGE", "sourceId": "judge"}},
        {"assessment_name": "enum-number", "feedback": {"value": 1}, "source": {"source_type": 3}},
        {
            "assessment_name": "timed",
            "feedback": {"value": 1},
            "create_time": "2024-05-01T10:00:00.123456Z",
            "last_update_time": "2024-05-02T00:00:00Z",
        },
        {"assessment_name": "ignored", "feedback": {"value": 1}, "valid": False, "trace_id": "tr-other", "unknown_field": 3},
        {"assessment_name": "", "feedback": {"value": 1}},
        {"assessment_name": "empty-strings", "feedback": {"value": 1}, "rationale": "", "span_id": "", "overrides": ""},
        {"assessment_name": "no-value"},
        # protobuf drops an enum name it does not know when unknown fields are ignored: the source is unspecified.
        {"assessment_name": "unknown-source", "feedback": {"value": 1}, "source": {"source_type": "ROBOT"}},
        {"assessment_name": "rationale-dropped", "expectation": {"value": 1}, "rationale": "kept?", "metadata": {"a": "1"}},
    ],
    ids=lambda a: str(a.get("assessment_name", a.get("assessmentName"))),
)
def test_create_fields_and_defaults(twin: HttpTwin, assessment: dict[str, Any]) -> None:
    ours, _ = twin.same("POST", "traces/{tr}/assessments", {"assessment": assessment}, bind=("a", "assessment.assessment_id"))
    if ours.status == 200:
        twin.same("GET", "traces/{tr}/assessments/{a}")


@pytest.mark.parametrize(
    "assessment",
    [
        {"assessment_name": "bad-time", "feedback": {"value": 1}, "create_time": "yesterday"},
        {"assessment_name": "two-values", "feedback": {"value": 1}, "expectation": {"value": 2}},
        {"assessment_name": "bad-json", "expectation": {"serialized_value": {"serialization_format": "JSON_FORMAT", "value": "{nope"}}},
        "not-an-object",
    ],
    ids=["bad-time", "two-values", "bad-json", "string"],
)
def test_malformed_assessments_are_refused(twin: HttpTwin, assessment: Any) -> None:
    """MLflow's parser stops at the bad field and its handler goes on with what it read (or fails with a 500);
    ours refuses the request with a 400 naming the assessment, and stores nothing."""
    ours, _ = twin.call("POST", "traces/{tr}/assessments", {"assessment": assessment})
    assert (ours.status, ours.body["error_code"]) == (400, "INVALID_PARAMETER_VALUE"), ours
    assert "assessment" in ours.body["message"]
    ours, _ = twin.call("GET", "traces/{tr}")
    assert "assessments" not in ours.body["trace"]["trace_info"]


def test_update_by_field_mask(twin: HttpTwin) -> None:
    feedback = {"assessment_name": "q", "feedback": {"value": {"rating": 4}}, "rationale": "r", "metadata": {"m": "1"}}
    twin.same("POST", "traces/{tr}/assessments", {"assessment": feedback}, bind=("f", "assessment.assessment_id"))
    twin.same(
        "POST",
        "traces/{tr}/assessments",
        {"assessment": {"assessment_name": "e", "expectation": {"value": "x"}}},
        bind=("e", "assessment.assessment_id"),
    )
    update = {
        "assessment_id": "{f}",
        "trace_id": "{tr}",
        "assessment_name": "updated",
        "feedback": {"value": {"rating": 5, "comments": "Excellent"}},
        "rationale": "Actually excellent",
        "metadata": {"m": "2", "n": "3"},
    }
    for mask in ("assessmentName,feedback,rationale,metadata", "rationale", "metadata", {"paths": ["assessment_name"]}, "unknownPath", ""):
        twin.same("PATCH", "traces/{tr}/assessments/{f}", {"assessment": update, "update_mask": mask})
    twin.same("PATCH", "traces/{tr}/assessments/{f}", {"assessment": {"rationale": ""}, "update_mask": "rationale"})
    twin.same(
        "PATCH", "traces/{tr}/assessments/{f}", {"assessment": {"feedback": {"error": {"error_code": "E"}}}, "update_mask": "feedback"}
    )
    twin.same("PATCH", "traces/{tr}/assessments/{f}", {"assessment": update, "update_mask": "expectation"})
    twin.same("PATCH", "traces/{tr}/assessments/{e}", {"assessment": update, "update_mask": "feedback"})
    twin.same("PATCH", "traces/{tr}/assessments/{e}", {"assessment": {"expectation": {"value": {"k": [1]}}}, "update_mask": "expectation"})
    twin.same(
        "PATCH",
        "traces/{tr}/assessments/{e}",
        {"assessment": {"assessment_name": "e2", "rationale": "dropped"}, "update_mask": "assessmentName,rationale"},
    )
    twin.same("PATCH", "traces/{tr}/assessments/{e}", {"assessment": {"feedback": {"value": 1}}, "update_mask": "expectation"})
    twin.same("PATCH", "traces/{tr}/assessments/{f}", {"assessment": update})
    twin.same("PATCH", "traces/{tr}/assessments/a-missing", {"assessment": update, "update_mask": "rationale"})
    twin.same("PATCH", "traces/tr-missing/assessments/{f}", {"assessment": update, "update_mask": "rationale"})
    twin.same("GET", "traces/{tr}/assessments/{f}")
    twin.same("GET", "traces/{tr}/assessments/{e}")
    _same_trace(twin, "{tr}")


def test_override_and_delete_restore(twin: HttpTwin) -> None:
    twin.same(
        "POST",
        "traces/{tr}/assessments",
        {"assessment": {"assessment_name": "q", "feedback": {"value": 1}}},
        bind=("orig", "assessment.assessment_id"),
    )
    override = {
        "assessment_name": "q2",
        "feedback": {"value": 2},
        "source": {"source_type": "HUMAN", "source_id": "s"},
        "overrides": "{orig}",
    }
    twin.same("POST", "traces/{tr}/assessments", {"assessment": override}, bind=("over", "assessment.assessment_id"))
    twin.same("GET", "traces/{tr}/assessments/{orig}")
    twin.same("POST", "traces/{tr}/assessments", {"assessment": {**override, "overrides": "a-nothing"}})
    # An expectation never carries `overrides` (Expectation.from_proto drops it): nothing is invalidated.
    twin.same(
        "POST",
        "traces/{tr}/assessments",
        {"assessment": {"assessment_name": "x", "expectation": {"value": 1}, "overrides": "{orig}"}},
        bind=("x", "assessment.assessment_id"),
    )
    _same_trace(twin, "{tr}")
    twin.same("DELETE", "traces/{tr}/assessments/{over}")
    twin.same("GET", "traces/{tr}/assessments/{over}")
    twin.same("GET", "traces/{tr}/assessments/{orig}")
    twin.same("DELETE", "traces/{tr}/assessments/{over}")
    twin.same("DELETE", "traces/tr-missing/assessments/{orig}")
    twin.same("GET", "traces/tr-missing/assessments/{orig}")
    twin.same("POST", "traces/tr-missing/assessments", {"assessment": override})
    _same_trace(twin, "{tr}")


def test_start_trace_carries_assessments(server: str) -> None:
    twin = _start_twin(server)
    twin.ours_values["tr"] = twin.reference_values["tr"] = "tr-" + uuid.uuid4().hex
    carried = [
        {
            "assessment_id": "a-" + "1" * 32,
            "assessment_name": "inline-feedback",
            "trace_id": "{tr}",
            "feedback": {"value": 0.5},
            "source": {"source_type": "CODE", "source_id": "scorer"},
            "create_time": "2025-01-01T00:00:01Z",
            "last_update_time": "2025-01-01T00:00:01Z",
            "rationale": "r",
            "metadata": {"mlflow.assessment.sourceRunId": "run"},
        },
        {
            "assessment_id": "a-" + "2" * 32,
            "assessment_name": "inline-expectation",
            "expectation": {"value": {"answer": "Paris"}},
            "source": {"source_type": "HUMAN"},
            "create_time": "2025-01-01T00:00:02Z",
        },
        {
            "assessment_id": "a-" + "3" * 32,
            "assessment_name": "iss-1",
            "issue": {"issue_name": "slow"},
            "source": {"source_type": "LLM_JUDGE"},
        },
    ]
    twin.same("POST", "traces", _start(twin, "{tr}", carried))
    _same_trace(twin, "{tr}")
    # The 3.18 client retries the call with the ids it assigned: the same assessments, not copies.
    ours, _ = twin.same("POST", "traces", _start(twin, "{tr}", carried))
    assert len(ours.body["trace"]["trace_info"]["assessments"]) == 3
    # Assessments logged since (create_assessment) survive a repeated start; a changed carried one is upserted.
    twin.same(
        "POST",
        "traces/{tr}/assessments",
        {"assessment": {"assessment_name": "later", "feedback": {"value": "ok"}}},
        bind=("later", "assessment.assessment_id"),
    )
    changed = [{**carried[0], "feedback": {"value": 0.75}}, *carried[1:]]
    twin.same("POST", "traces", _start(twin, "{tr}", changed))
    info = _same_trace(twin, "{tr}")["trace"]["trace_info"]
    assert sorted(a["assessment_name"] for a in info["assessments"]) == ["inline-expectation", "inline-feedback", "iss-1", "later"]


def test_start_trace_retry_without_ids_adds_no_copies(server: str) -> None:
    """3.17 clients send no ids: a retried start (the same body) must not double the assessments (MLflow's own
    store would insert them again under new ids)."""
    twin = _start_twin(server)
    trace_id = "tr-" + uuid.uuid4().hex
    carried = [{"assessment_name": "f", "feedback": {"value": True}, "create_time": "2025-01-01T00:00:01.5Z"}]
    for _ in range(2):
        response = twin.session.post(
            f"{server}/api/3.0/mlflow/traces", json=twin._fill(_start(twin, trace_id, carried), twin.ours_values), timeout=30
        )
        assert response.status_code == 200, response.text
    info = twin.session.get(f"{server}/api/3.0/mlflow/traces/{trace_id}", timeout=30).json()["trace"]["trace_info"]
    assert [a["assessment_name"] for a in info["assessments"]] == ["f"]
    assert info["assessments"][0]["create_time"] == "2025-01-01T00:00:01.500Z"
    bad = _start(twin, "tr-" + uuid.uuid4().hex, [{"assessment_name": "x", "feedback": {"value": 1}, "create_time": 5}])
    response = twin.session.post(f"{server}/api/3.0/mlflow/traces", json=twin._fill(bad, twin.ours_values), timeout=30)
    assert response.status_code == 400 and "trace.trace_info.assessments[0]" in response.json()["message"], response.text
