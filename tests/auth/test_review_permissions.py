"""Label schemas, review queues and issues under basic auth: ours vs MLflow's own basic-auth app, step by step.

Who may manage questions (experiment MANAGE), create and own queues (EDIT), see a queue (MANAGE, an assigned
user, or its EDIT owner), review through it (EDIT and assigned), reassign it (MANAGE), prune it, and read or
change issues (the experiment's READ / EDIT); queue listings narrowed for READ-only callers; a custom queue
may not take a registered user's name.
"""

from __future__ import annotations

import uuid

import pytest

from tests.auth.conftest import ADMIN, WITH_MLFLOW, basic_runtime
from tests.auth.scenario import M2, M3, PASSWORDS, Answer, Ctx, Step, _set, play

pytestmark = WITH_MLFLOW

# Names of their own on the session's MLflow reference (other scenarios there create alice, bob and carol).
ALICE, BOB, CAROL = "ralice", "rbob", "rcarol"
REVIEW_PASSWORDS = {ADMIN: PASSWORDS[ADMIN], ALICE: PASSWORDS["alice"], BOB: PASSWORDS["bob"], CAROL: PASSWORDS["carol"]}

TRACE_ID = "tr-" + uuid.uuid4().hex


def _exp(c: Ctx, **more: object) -> dict[str, object]:
    return {"experiment_id": c["exp"], **more}


def _queue(c: Ctx, **more: object) -> dict[str, object]:
    return {"queue_id": c["queue"], **more}


def _grant(username: str, permission: str) -> Step:
    return Step(
        f"{username} gets {permission}",
        ADMIN,
        "POST",
        f"{M3}/users/permissions/grant",
        lambda c: {"username": username, "resource_type": "experiment", "resource_id": c["exp"], "permission": permission},
    )


_TRACE = {"trace_id": TRACE_ID, "request_time": "2025-01-01T00:00:00Z", "state": "OK"}

STEPS: list[Step] = [
    *(
        Step(f"admin creates {u}", ADMIN, "POST", f"{M2}/users/create", lambda c, u=u: {"username": u, "password": REVIEW_PASSWORDS[u]})
        for u in (ALICE, BOB, CAROL)
    ),
    Step(
        "alice creates an experiment",
        ALICE,
        "POST",
        f"{M2}/experiments/create",
        lambda c: {"name": "review-auth"},
        keep=_set("exp", lambda b: b["experiment_id"]),
    ),
    Step(
        "alice starts a trace",
        ALICE,
        "POST",
        f"{M3}/traces",
        lambda c: {
            "trace": {
                "trace_info": {**_TRACE, "trace_location": {"type": "MLFLOW_EXPERIMENT", "mlflow_experiment": {"experiment_id": c["exp"]}}}
            }
        },
    ),
    # --- label schemas: MANAGE to change, READ to look ----------------------------------------------------------
    Step(
        "bob creates a question",
        BOB,
        "POST",
        f"{M3}/label-schemas/create",
        lambda c: _exp(c, name="q", type="FEEDBACK", input={"text": {}}),
    ),
    Step(
        "alice creates a question",
        ALICE,
        "POST",
        f"{M3}/label-schemas/create",
        lambda c: _exp(c, name="q", type="FEEDBACK", input={"text": {}}),
        keep=_set("schema", lambda b: b["label_schema"]["schema_id"]),
    ),
    Step("bob reads the question", BOB, "GET", f"{M3}/label-schemas/get", lambda c: {"schema_id": c["schema"]}),
    Step("bob lists questions", BOB, "GET", f"{M3}/label-schemas/list", lambda c: _exp(c)),
    Step("bob reads a question by name", BOB, "GET", f"{M3}/label-schemas/get-by-name", lambda c: _exp(c, name="q")),
    Step("bob edits the question", BOB, "PATCH", f"{M3}/label-schemas/update", lambda c: {"schema_id": c["schema"], "instruction": "x"}),
    Step("bob deletes the question", BOB, "DELETE", f"{M3}/label-schemas/delete", lambda c: {"schema_id": c["schema"]}),
    Step("bob reads a missing question", BOB, "GET", f"{M3}/label-schemas/get", lambda c: {"schema_id": "ls-missing"}),
    Step("anonymous lists questions", None, "GET", f"{M3}/label-schemas/list", lambda c: _exp(c)),
    # --- queues -----------------------------------------------------------------------------------------------
    Step("bob (READ) creates a queue", BOB, "POST", f"{M3}/review-queues/create", lambda c: _exp(c, name="bobs", queue_type="CUSTOM")),
    _grant(BOB, "EDIT"),
    Step(
        "bob creates a queue",
        BOB,
        "POST",
        f"{M3}/review-queues/create",
        lambda c: _exp(c, name="bobs", queue_type="CUSTOM"),
        keep=_set("queue", lambda b: b["review_queue"]["queue_id"]),
    ),
    Step("bob names a queue after alice", BOB, "POST", f"{M3}/review-queues/create", lambda c: _exp(c, name="Ralice", queue_type="CUSTOM")),
    Step(
        "admin names a queue after alice",
        ADMIN,
        "POST",
        f"{M3}/review-queues/create",
        lambda c: _exp(c, name="ralice ", queue_type="CUSTOM"),
    ),
    Step("bob renames his queue to carol", BOB, "POST", f"{M3}/review-queues/update", lambda c: _queue(c, name="RCAROL")),
    Step("carol reads bob's queue", CAROL, "GET", f"{M3}/review-queues/get", lambda c: _queue(c)),
    Step("carol reads bob's queue by name", CAROL, "GET", f"{M3}/review-queues/get-by-name", lambda c: _exp(c, name="bobs")),
    Step("carol lists queues", CAROL, "GET", f"{M3}/review-queues/list", lambda c: _exp(c), compare_json=False),
    Step("bob assigns carol", BOB, "POST", f"{M3}/review-queues/update", lambda c: _queue(c, update_users=True, users=["Rcarol"])),
    Step("carol reads bob's queue now", CAROL, "GET", f"{M3}/review-queues/get", lambda c: _queue(c)),
    Step("carol reads its items", CAROL, "GET", f"{M3}/review-queues/items/list", lambda c: _queue(c)),
    Step("carol adds a trace", CAROL, "POST", f"{M3}/review-queues/items/add", lambda c: _queue(c, item_ids=[TRACE_ID])),
    Step("bob adds a trace", BOB, "POST", f"{M3}/review-queues/items/add", lambda c: _queue(c, item_ids=[TRACE_ID])),
    Step(
        "carol (READ) completes it",
        CAROL,
        "POST",
        f"{M3}/review-queues/items/set-status",
        lambda c: _queue(c, item_id=TRACE_ID, status="COMPLETE"),
    ),
    Step(
        "bob (not assigned) completes it",
        BOB,
        "POST",
        f"{M3}/review-queues/items/set-status",
        lambda c: _queue(c, item_id=TRACE_ID, status="COMPLETE"),
    ),
    _grant(CAROL, "EDIT"),
    Step(
        "carol completes it",
        CAROL,
        "POST",
        f"{M3}/review-queues/items/set-status",
        lambda c: _queue(c, item_id=TRACE_ID, status="COMPLETE", completed_by="someone-else"),
    ),
    Step("carol removes it", CAROL, "POST", f"{M3}/review-queues/items/remove", lambda c: _queue(c, item_ids=[TRACE_ID])),
    Step("bob hands his queue to carol", BOB, "POST", f"{M3}/review-queues/update", lambda c: _queue(c, new_owner=CAROL)),
    Step("alice hands bob's queue to carol", ALICE, "POST", f"{M3}/review-queues/update", lambda c: _queue(c, new_owner=CAROL)),
    Step("bob deletes carol's queue", BOB, "POST", f"{M3}/review-queues/delete", lambda c: _queue(c)),
    Step("bob opens his user queue", BOB, "POST", f"{M3}/review-queues/get-or-create-user", lambda c: _exp(c, user=BOB)),
    Step("carol deletes her queue", CAROL, "POST", f"{M3}/review-queues/delete", lambda c: _queue(c)),
    Step("bob reads a missing queue", BOB, "GET", f"{M3}/review-queues/get", lambda c: {"queue_id": "rq-missing"}),
    # --- issues: the experiment's READ / EDIT ----------------------------------------------------------------
    Step(
        "bob creates an issue",
        BOB,
        "POST",
        f"{M3}/issues",
        lambda c: _exp(c, name="slow", description="d"),
        keep=_set("issue", lambda b: b["issue"]["issue_id"]),
    ),
    _grant(CAROL, "READ"),
    Step("carol creates an issue", CAROL, "POST", f"{M3}/issues", lambda c: _exp(c, name="x", description="d")),
    Step("carol reads the issue", CAROL, "GET", f"{M3}/issues/{{issue}}"),
    Step("carol renames the issue", CAROL, "PATCH", f"{M3}/issues/{{issue}}", lambda c: {"issue_id": c["issue"], "name": "y"}),
    Step("carol searches issues", CAROL, "POST", f"{M3}/issues/search", lambda c: _exp(c)),
    Step("carol searches every experiment's issues", CAROL, "POST", f"{M3}/issues/search", lambda c: {}),
    Step("admin searches every experiment's issues", ADMIN, "POST", f"{M3}/issues/search", lambda c: {}),
    Step("carol reads a missing issue", CAROL, "GET", f"{M3}/issues/iss-missing"),
]


@pytest.fixture(scope="module")
def answers(server: str, mlflow_server: str) -> tuple[dict[str, Answer], dict[str, Answer]]:
    with basic_runtime() as ours:
        return play(ours, STEPS, REVIEW_PASSWORDS), play(mlflow_server, STEPS, REVIEW_PASSWORDS)


@pytest.mark.parametrize("step", STEPS, ids=[s.name for s in STEPS])
def test_same_answer_as_mlflow(answers: tuple[dict[str, Answer], dict[str, Answer]], step: Step) -> None:
    ours, theirs = (side[step.name] for side in answers)
    assert ours.status == theirs.status, f"{step.name}: ours {ours.status} {ours.body!r} vs MLflow {theirs.status} {theirs.body!r}"
    if isinstance(theirs.body, dict) and "error_code" in theirs.body:
        assert isinstance(ours.body, dict) and ours.body.get("error_code") == theirs.body["error_code"], (ours.body, theirs.body)
