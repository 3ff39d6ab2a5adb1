"""Issues over raw REST, answered like MLflow's own server: create with every optional field, get, update,
and search with filters, MLflow's order (severity, trace count, newest), paging and trace counts that come
from the traces' issue-reference assessments (kept by the stream indexer)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.reference_twin import HttpTwin
from tests.review.test_label_schemas_reference import experiment_twin
from tests.review.test_review_queues_reference import start_traces

pytestmark = pytest.mark.e2e

TIMES = frozenset({"created_timestamp", "last_updated_timestamp", "create_time", "last_update_time"})


@pytest.fixture
def twin(server: str) -> HttpTwin:
    twin = experiment_twin(server, TIMES)
    twin.api = "/api/2.0/mlflow"
    for run in ("run1", "run2"):
        ours, reference = twin.call("POST", "runs/create", {"experiment_id": "{exp}"})
        twin.bind(run, ours.body["run"]["info"]["run_id"], reference.body["run"]["info"]["run_id"])
    twin.api = "/api/3.0/mlflow"
    return twin


def test_source_run_must_exist(twin: HttpTwin) -> None:
    """MLflow's foreign key refuses an unknown run with the raw SQL error; ours says what is wrong."""
    ours, reference = twin.call("POST", "issues", {"experiment_id": "{exp}", "name": "n", "description": "d", "source_run_id": "0" * 32})
    assert (ours.status, ours.body["error_code"], reference.status, reference.body["error_code"]) == (
        400,
        "BAD_REQUEST",
        400,
        "BAD_REQUEST",
    )
    assert "source_run_id" in ours.body["message"]


@pytest.mark.parametrize(
    "body",
    [
        {"experiment_id": "{exp}", "name": "Hallucination", "description": "Makes things up"},
        {
            "experiment_id": "{exp}",
            "name": "Slow",
            "description": "p99 over 5s",
            "status": "resolved",
            "severity": "high",
            "root_causes": ["cold start", "big prompt"],
            "source_run_id": "{run1}",
            "categories": ["latency"],
            "created_by": "alice",
        },
        {
            "experiment_id": "{exp}",
            "name": "Empty lists",
            "description": "d",
            "root_causes": [],
            "categories": [],
            "source_run_id": "",
            "created_by": "",
        },
        {"experiment_id": "{exp}", "name": "", "description": "d"},
        {"experiment_id": "{exp}", "name": "n"},
        {"name": "n", "description": "d"},
        {"experiment_id": "987654321", "name": "n", "description": "d"},
        {"experiment_id": "x", "name": "n", "description": "d"},
        {"experiment_id": "{exp}", "name": 5, "description": "d"},
    ],
)
def test_create_and_get(twin: HttpTwin, body: dict[str, Any]) -> None:
    ours, _ = twin.same("POST", "issues", body, bind=("iss", "issue.issue_id"))
    if ours.status == 200:
        twin.same("GET", "issues/{iss}")


def test_update_and_missing(twin: HttpTwin) -> None:
    twin.same(
        "POST", "issues", {"experiment_id": "{exp}", "name": "n", "description": "d", "severity": "low"}, bind=("iss", "issue.issue_id")
    )
    for change in ({"status": "rejected"}, {"name": "renamed", "description": ""}, {"severity": "medium", "description": "new"}, {}):
        twin.same("PATCH", "issues/{iss}", {"issue_id": "{iss}", **change})
    twin.same("PATCH", "issues/{iss}", {"name": "no id in the body"})
    twin.same("PATCH", "issues/iss-missing", {"issue_id": "iss-missing", "name": "x"})
    twin.same("GET", "issues/iss-missing")
    twin.same("GET", "issues/{iss}")


def _issue_reference(name: str, issue_id: str) -> dict[str, Any]:
    return {
        "assessment": {
            "assessment_name": issue_id,
            "issue": {"issue_name": name},
            "source": {"source_type": "LLM_JUDGE", "source_id": "detector"},
        }
    }


def test_search_order_filters_counts_and_paging(twin: HttpTwin) -> None:
    start_traces(twin, 4)
    specs = [
        ("a", "low", "pending", "{run1}"),
        ("b", "high", "resolved", None),
        ("c", None, "pending", "{run2}"),
        ("d", "high", "pending", "{run1}"),
        ("e", "low", "rejected", None),
    ]
    for name, severity, status, run in specs:
        body = {"experiment_id": "{exp}", "name": name, "description": name, "status": status}
        if severity:
            body["severity"] = severity
        if run:
            body["source_run_id"] = run
        twin.same("POST", "issues", body, bind=(name, "issue.issue_id"))
    # Traces point at issues through issue-reference assessments; "d" is on three traces, "b" on one.
    for trace, issue in (("{t0}", "d"), ("{t1}", "d"), ("{t2}", "d"), ("{t2}", "b"), ("{t3}", "a")):
        twin.same(
            "POST", f"traces/{trace}/assessments", _issue_reference(issue, "{" + issue + "}"), bind=("ref", "assessment.assessment_id")
        )
    # The same trace twice counts once.
    twin.same("POST", "traces/{t0}/assessments", _issue_reference("d", "{d}"), bind=("ref", "assessment.assessment_id"))
    for body in (
        {"experiment_id": "{exp}"},
        {"experiment_id": "{exp}", "include_trace_count": True},
        {"experiment_id": "{exp}", "filter_string": "status = 'pending'"},
        {"experiment_id": "{exp}", "filter_string": "status != 'pending' AND source_run_id = '{run1}'"},
        {"experiment_id": "{exp}", "filter_string": "source_run_id != '{run1}'", "include_trace_count": True},
        {"experiment_id": "{exp}", "filter_string": "status = 'pending' OR status = 'resolved'"},
        {"experiment_id": "{exp}", "max_results": 0},
        {"experiment_id": "{exp}", "max_results": 50001},
        {"experiment_id": "{exp}", "page_token": "not-a-token"},
        {"experiment_id": "987654321"},
        {"experiment_id": "abc"},
    ):
        twin.same("POST", "issues/search", body, ordered=True)
    # MLflow prints its comparator set in hash order (it varies by process): compare the rest of the answer.
    for filter_string, text in (
        ("status LIKE 'p%'", "Invalid comparator 'LIKE'. Supported comparators"),
        ("name = 'a'", "Invalid filter field 'name'. Supported fields"),
    ):
        ours, reference = twin.call("POST", "issues/search", {"experiment_id": "{exp}", "filter_string": filter_string})
        assert ours.status == reference.status == 400 and ours.body["error_code"] == reference.body["error_code"]
        assert ours.body["message"].split(":")[0] == reference.body["message"].split(":")[0] == text
    ours, _ = twin.same("POST", "issues/search", {"experiment_id": "{exp}", "max_results": 2, "include_trace_count": True}, ordered=True)
    pages = [ours.body]
    while pages[-1].get("next_page_token"):
        body = {
            "experiment_id": twin.ours_values["exp"],
            "max_results": 2,
            "include_trace_count": True,
            "page_token": pages[-1]["next_page_token"],
        }
        pages.append(twin.session.post(f"{twin.ours_url}/api/3.0/mlflow/issues/search", json=body, timeout=30).json())
    paged = [(i["name"], i["trace_count"]) for page in pages for i in page.get("issues", [])]
    assert paged == [("d", 3), ("b", 1), ("a", 1), ("e", 0), ("c", 0)]
    # Deleting a trace drops its references from the counts.
    twin.api = "/api/2.0/mlflow"
    twin.same("POST", "traces/delete-traces", {"experiment_id": "{exp}", "request_ids": ["{t2}"]})
    twin.api = "/api/3.0/mlflow"
    twin.same("POST", "issues/search", {"experiment_id": "{exp}", "include_trace_count": True}, ordered=True)


def test_traces_found_by_issue_as_mlflow(twin: HttpTwin) -> None:
    """``issue.id = '<id>'`` finds the traces an issue references (the 3.18 UI's issue page asks so for its
    evidence), as MLflow's store finds them through their issue-reference assessments."""
    start_traces(twin, 3)
    for name in ("found", "unseen"):
        twin.same("POST", "issues", {"experiment_id": "{exp}", "name": name, "description": name}, bind=(name, "issue.issue_id"))
    for trace in ("{t0}", "{t2}"):
        twin.same("POST", f"traces/{trace}/assessments", _issue_reference("found", "{found}"), bind=("ref", "assessment.assessment_id"))
    location = {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": "{exp}"}}
    found = {}
    for issue in ("found", "unseen"):
        ours, reference = twin.call("POST", "traces/search", {"locations": [location], "filter": f"issue.id = '{{{issue}}}'"})
        assert ours.status == reference.status == 200, (ours, reference)
        # The same traces (the order of an issue search is not what this checks).
        names = [sorted(t["trace_id"] for t in side.body.get("traces", [])) for side in (ours, reference)]
        assert names[0] == names[1], names
        found[issue] = names[0]
    # The traces have the same ids on both servers.
    assert found == {"found": sorted([twin.ours_values["t0"], twin.ours_values["t2"]]), "unseen": []}
