"""The README's not-served list and docs/compatibility.md's route table are generated from the route table and the
committed dump of MLflow's routes: they must match what ``python -m tools.route_coverage`` writes."""

from __future__ import annotations

import json

from tools import route_coverage


def test_route_coverage_docs_are_generated() -> None:
    for path, content in route_coverage.render().items():
        assert path.read_text() == content, f"{path.name} is stale: run python -m tools.route_coverage"


def test_every_served_route_of_mlflow_counts_and_every_missing_one_has_a_reason() -> None:
    data = json.loads(route_coverage.DATA.read_text())
    newest = max(data, key=lambda v: tuple(int(x) for x in v.split(".")))
    theirs = route_coverage.logical(tuple(r) for r in data[newest])
    served = route_coverage.ours(theirs)
    # Our routes are MLflow's: each one we serve is one of MLflow's logical routes (HEAD /health and /login aside).
    assert served - theirs <= {("HEAD", "/health"), ("GET", "/login")}
    for _, path in theirs - served:
        assert route_coverage.family_of(path).name != "other", path
    # The v2 trace routes of mlflow 2.x clients are served.
    assert {("POST", "/api/2.0/mlflow/traces"), ("PATCH", "/api/2.0/mlflow/traces/{}")} <= served
    # The gateway runtime's greedy route counts for the invocation routes it answers itself.
    assert {("POST", "/gateway/{}/mlflow/invocations"), ("GET", "/gateway/mlflow/v1/models")} <= served
