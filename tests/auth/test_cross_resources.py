"""Issue #22's bypasses (``cross_scenario``): GraphQL, requests that link to another user's resources, wrong
credentials on public pages. Ours and MLflow's basic-auth app answer the same, step by step, except where a
step says this project deliberately differs; and no answer to xbob carries xalice's secret."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.auth.conftest import WITH_MLFLOW, basic_env, basic_runtime
from tests.auth.cross_scenario import BOB, CANARY, PASSWORDS, STEPS
from tests.auth.scenario import Answer, Step, play

pytestmark = WITH_MLFLOW

Played = tuple[dict[str, Answer], dict[str, Any], dict[str, Answer], dict[str, Any]]


@pytest.fixture(scope="module")
def played(server: str, mlflow_server: str) -> Played:
    env = basic_env()
    ours_ctx: dict[str, Any] = {"bucket": env["BUCKET_NAME"]}
    theirs_ctx: dict[str, Any] = {"bucket": "any-bucket"}
    with basic_runtime(env=env) as ours:
        ours_answers = play(ours, STEPS, PASSWORDS, ours_ctx)
    return ours_answers, ours_ctx, play(mlflow_server, STEPS, PASSWORDS, theirs_ctx), theirs_ctx


@pytest.mark.parametrize("step", STEPS, ids=[s.name for s in STEPS])
def test_same_answer_as_mlflow(played: Played, step: Step) -> None:
    ours, theirs = played[0][step.name], played[2][step.name]
    if step.differs is not None:
        assert (ours.status, theirs.status) == step.differs, f"{step.name}: ours {ours.status} {ours.body!r} vs MLflow {theirs.status}"
    else:
        assert ours.status == theirs.status, f"{step.name}: ours {ours.status} {ours.body!r} vs MLflow {theirs.status} {theirs.body!r}"
    if step.compare_json:
        assert ours.body == theirs.body
    elif isinstance(theirs.body, dict) and "error_code" in theirs.body:
        assert isinstance(ours.body, dict) and ours.body.get("error_code") == theirs.body["error_code"], (ours.body, theirs.body)
    if step.user == BOB:
        assert CANARY not in json.dumps(ours.body), f"{step.name}: xalice's secret in {ours.body!r}"


def test_a_graphql_batch_runs_nothing(played: Played) -> None:
    answer = played[0]["graphql: a batch of two queries"]
    assert isinstance(answer.body, dict) and answer.body["data"] is None


def test_her_resources_are_unchanged(played: Played) -> None:
    _, ours, _, theirs = played
    # Refused metrics left her logged model alone, on both servers.
    assert ours["lm_metrics"] == theirs["lm_metrics"] == []
    # MLflow's store moved her trace into xbob's experiment when he started it there; ours refused.
    assert ours["trace_experiment"] == ours["exp"]
    assert theirs["trace_experiment"] == theirs["bob_exp"]
