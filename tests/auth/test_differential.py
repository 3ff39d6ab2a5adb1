"""Ours vs MLflow's own basic-auth app: the same users, grants and requests, the same answers step by step."""

from __future__ import annotations

import pytest

from tests.auth.conftest import WITH_MLFLOW, basic_runtime
from tests.auth.scenario import STEPS, Answer, assert_same_answer, play

pytestmark = WITH_MLFLOW


@pytest.fixture(scope="module")
def answers(server: str, mlflow_server: str) -> tuple[dict[str, Answer], dict[str, Answer]]:
    # An empty runtime of its own, like the reference: user ids are compared too.
    with basic_runtime() as ours:
        return _relative_user_ids(play(ours)), _relative_user_ids(play(mlflow_server))


def _relative_user_ids(answers: dict[str, Answer]) -> dict[str, Answer]:
    """User ids counted from alice's: MLflow's server is shared with other modules, which create users too."""
    first = answers["admin creates alice"].body["user"]["id"]
    for answer in answers.values():
        user = answer.body.get("user") if isinstance(answer.body, dict) else None
        if isinstance(user, dict) and isinstance(user.get("id"), int):
            user["id"] -= first
    return answers


@pytest.mark.parametrize("step", STEPS, ids=[s.name for s in STEPS])
def test_same_answer_as_mlflow(answers: tuple[dict[str, Answer], dict[str, Answer]], step) -> None:
    assert_same_answer(step, *(side[step.name] for side in answers))
