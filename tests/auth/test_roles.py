"""Roles (MLflow 3's basic-auth RBAC) against MLflow's own basic-auth app: the role scenario step by step over
HTTP, and the real ``AuthServiceClient``'s role methods, on both servers.

Ids are compared by the order they first appear in (MLflow's reference is shared with other modules, whose
users and grants take ids too). MLflow keeps each user's own grants in a synthetic ``__user_<id>__`` role and
lists it among the roles; this server keeps them with the user and lists them as permissions only, so those
roles are left out of MLflow's answers before comparing.
"""

from __future__ import annotations

from typing import Any

import pytest
from mlflow.exceptions import RestException
from mlflow.server import get_app_client

from tests.auth.conftest import ADMIN, ADMIN_PASSWORD, WITH_MLFLOW, basic_runtime
from tests.auth.role_scenario import PASSWORDS, PREFIX, STEPS
from tests.auth.scenario import Answer, Step, assert_same_answer, play
from tests.auth.test_client import PASSWORD, as_user
from tests.conftest import unique

pytestmark = WITH_MLFLOW

_ID_KINDS = {"role_id": "role", "user_id": "user"}


class Ids:
    """Server ids -> their order of first appearance, per kind of id."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, int], int] = {}

    def __call__(self, kind: str, value: int) -> str:
        ordinal = self.seen.setdefault((kind, value), sum(1 for k, _ in self.seen if k == kind))
        return f"{kind}-{ordinal}"


def _kind_of(obj: dict[str, Any]) -> str:
    if "permissions" in obj and "workspace" in obj:
        return "role"
    if "resource_type" in obj:
        return "role_permission"
    if "user_id" in obj:
        return "assignment"
    return "user"


def _synthetic(obj: Any) -> bool:
    return isinstance(obj, dict) and any(str(obj.get(key, "")).startswith("__user_") for key in ("name", "role_name"))


def normalized(body: Any, ids: Ids, experiment_id: str | None = None) -> Any:
    """The answer with ids by order of appearance, without MLflow's synthetic per-user roles, and with only
    this scenario's users and roles in listings."""
    if isinstance(body, list):
        return [normalized(item, ids, experiment_id) for item in body if not _synthetic(item) and _ours(item)]
    if not isinstance(body, dict):
        return body
    out = {}
    for key, value in body.items():
        if key == "id" and isinstance(value, int):
            out[key] = ids(_kind_of(body), value)
        elif key in _ID_KINDS and isinstance(value, int):
            out[key] = ids(_ID_KINDS[key], value)
        elif key == "resource_pattern" and value == experiment_id:
            out[key] = "EXPERIMENT"  # the scenario's experiment (other modules' experiments take ids on MLflow's)
        else:
            out[key] = normalized(value, ids, experiment_id)
    return out


def _ours(item: Any) -> bool:
    """Users and roles of this scenario (listings on the shared reference hold other modules' too)."""
    if not isinstance(item, dict):
        return True
    if "username" in item and "is_admin" in item:
        return str(item["username"]).startswith(PREFIX)
    if "permissions" in item and "workspace" in item:
        return str(item["name"]).startswith(PREFIX)
    return True


def _played(url: str) -> dict[str, Answer]:
    ctx: dict[str, Any] = {}
    answers = play(url, STEPS, PASSWORDS, ctx)
    ids = Ids()
    return {name: Answer(answer.status, normalized(answer.body, ids, ctx["exp"])) for name, answer in answers.items()}


@pytest.fixture(scope="module")
def answers(server: str, mlflow_server: str) -> tuple[dict[str, Answer], dict[str, Answer]]:
    with basic_runtime() as ours:
        mine = _played(ours)
    return mine, _played(mlflow_server)


@pytest.mark.parametrize("step", STEPS, ids=[s.name for s in STEPS])
def test_same_answer_as_mlflow(answers: tuple[dict[str, Answer], dict[str, Answer]], step: Step) -> None:
    assert_same_answer(step, *(side[step.name] for side in answers))


def test_role_grants_decide_requests(answers: tuple[dict[str, Answer], dict[str, Answer]]) -> None:
    """What the scenario shows, stated on its own (so a change on both sides is noticed too)."""
    ours, _ = answers
    statuses = {name: ours[name].status for name in ours}
    assert statuses["ann reads the experiment"] == 200
    assert statuses["ann cannot tag it"] == 403
    assert statuses["ann tags the experiment"] == 200
    assert statuses["ann cannot delete it"] == 403
    assert statuses["denied ann reads the experiment"] == 403
    assert statuses["denied ann reads the Default experiment"] == 403
    assert ours["ann's own MANAGE and the role's EDIT"].body == {"allowed": True, "permission": "MANAGE"}
    assert statuses["ben cannot create a role yet"] == 403
    assert statuses["ben creates a role"] == 200
    assert statuses["ben creates a role elsewhere"] == 403
    assert statuses["ben makes cat an admin"] == 403
    assert statuses["ben tags the experiment"] == 200
    assert statuses["cat's experiment access after the delete"] == 403


def _client_calls(url: str) -> list[Any]:
    """The AuthServiceClient's role methods, in a lifecycle, with what each answered (entities as JSON)."""
    member, name = unique("rho-client"), unique("rho-client-role")
    out: list[Any] = []
    with as_user(ADMIN, ADMIN_PASSWORD):
        auth = get_app_client("basic-auth", tracking_uri=url)
        auth.create_user(member, PASSWORD)
        role = auth.create_role("default", name, description="made by the client")
        out.append(role.to_json())
        out.append(auth.get_role(role.id).to_json())
        out.append([r.to_json() for r in auth.list_roles("default") if r.name == name])
        permission = auth.add_role_permission(role.id, "registered_model", "*", "READ")
        out.append(permission.to_json())
        out.append(auth.update_role_permission(permission.id, "USE").to_json())
        out.append([p.to_json() for p in auth.list_role_permissions(role.id)])
        out.append(auth.update_role(role.id, description="still the client's").to_json())
        out.append(auth.assign_role(member, role.id).to_json())
        out.append([r.to_json() for r in auth.list_user_roles(member)])
        out.append([a.to_json() for a in auth.list_role_users(role.id)])
        out.append(sorted(r.name for r in auth.list_all_roles() if r.name == name))
        with pytest.raises(RestException) as duplicate:
            auth.assign_role(member, role.id)
        out.append(duplicate.value.error_code)
        auth.unassign_role(member, role.id)
        auth.remove_role_permission(permission.id)
        out.append([p.to_json() for p in auth.list_role_permissions(role.id)])
        auth.delete_role(role.id)
        with pytest.raises(RestException) as missing:
            auth.get_role(role.id)
        out.append(missing.value.error_code)
    ids = Ids()
    return [normalized(value, ids) for value in out]


def test_auth_service_client_roles_same_as_mlflow(basic_server: str, mlflow_server: str) -> None:
    ours, theirs = _client_calls(basic_server), _client_calls(mlflow_server)
    # The names are unique per call; everything else must match.
    for side in (ours, theirs):
        side[0].pop("name"), side[1].pop("name"), side[2][0].pop("name"), side[6].pop("name"), side[8][0].pop("name")
        side[10] = len(side[10])
    assert ours == theirs
    assert ours[-1] == "RESOURCE_DOES_NOT_EXIST" and ours[11] == "RESOURCE_ALREADY_EXISTS"
