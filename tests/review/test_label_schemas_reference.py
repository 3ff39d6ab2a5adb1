"""Label schemas over raw REST, answered like MLflow's own server (Flask handlers + SqlAlchemyStore on sqlite):
create with every input kind and every refusal, get by id and name, the default question a first list seeds,
paging, renames, input edits and the default question's protection."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import unique
from tests.reference_twin import HttpTwin

pytestmark = pytest.mark.e2e

TIMES = frozenset({"created_at", "last_updated_at"})


def experiment_twin(server: str, volatile: frozenset[str] = TIMES) -> HttpTwin:
    twin = HttpTwin.start(server, api="/api/2.0/mlflow", volatile=volatile)
    twin.bind("exp", *_ids(twin.call("POST", "experiments/create", {"name": unique("review-ref")}), "experiment_id"))
    twin.api = "/api/3.0/mlflow"
    return twin


def _ids(answers: Any, field: str) -> tuple[str, str]:
    ours, reference = answers
    assert ours.status == reference.status == 200, (ours, reference)
    return str(ours.body[field]), str(reference.body[field])


@pytest.fixture
def twin(server: str) -> HttpTwin:
    return experiment_twin(server)


INPUTS: list[dict[str, Any]] = [
    {"pass_fail": {"positive_label": "Correct", "negative_label": "Incorrect"}},
    {"categorical": {"options": ["good", "bad", "ugly"], "multi_select": True}},
    {"categorical": {"options": ["a"]}},
    {"numeric": {"min_value": 0, "max_value": 10.5}},
    {"numeric": {}},
    {"text": {"max_length": 200}},
    {"text": {}},
]


@pytest.mark.parametrize("schema_input", INPUTS, ids=[next(iter(i)) + str(n) for n, i in enumerate(INPUTS)])
def test_create_get_each_input(twin: HttpTwin, schema_input: dict[str, Any]) -> None:
    body = {
        "experiment_id": "{exp}",
        "name": "Is it correct?",
        "type": "FEEDBACK",
        "input": schema_input,
        "instruction": "Judge it",
        "enable_comment": True,
    }
    twin.same("POST", "label-schemas/create", body, bind=("ls", "label_schema.schema_id"))
    twin.same("GET", "label-schemas/get", query={"schema_id": "{ls}"})
    twin.same("GET", "label-schemas/get-by-name", query={"experiment_id": "{exp}", "name": "Is it correct?"})
    twin.same("POST", "label-schemas/create", body)  # a second schema of that name


@pytest.mark.parametrize(
    "body",
    [
        {"name": "x", "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "{exp}", "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "x", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "x", "type": "EXPECTATION"},
        {"experiment_id": "{exp}", "name": "x", "type": 0, "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "x", "type": "BOGUS", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "", "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "feedback", "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "n" * 251, "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"text": {}}, "instruction": "i" * 1001},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"pass_fail": {"positive_label": "y", "negative_label": "y"}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"pass_fail": {"positive_label": "y"}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"categorical": {"options": []}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"categorical": {"options": ["a", "a"]}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"categorical": {"options": [str(i) for i in range(11)]}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"categorical": {"options": ["o" * 65]}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"numeric": {"min_value": 5, "max_value": 1}}},
        {"experiment_id": "{exp}", "name": "x", "type": "FEEDBACK", "input": {"text": {"max_length": 0}}},
        {"experiment_id": "987654321", "name": "x", "type": "FEEDBACK", "input": {"text": {}}},
        {"experiment_id": "abc", "name": "x", "type": "FEEDBACK", "input": {"text": {}}},
    ],
)
def test_create_refusals(twin: HttpTwin, body: dict[str, Any]) -> None:
    twin.same("POST", "label-schemas/create", body)


def test_default_question_paging_update_and_delete(twin: HttpTwin) -> None:
    for name in ("first", "second", "third"):
        body = {"experiment_id": "{exp}", "name": name, "type": "EXPECTATION", "input": {"categorical": {"options": ["x", "y"]}}}
        twin.same("POST", "label-schemas/create", body, bind=(name, "label_schema.schema_id"))
    # The first list seeds the protected default question ("Feedback", free text): the newest, so listed first.
    ours, _ = twin.same(
        "GET", "label-schemas/list", query={"experiment_id": "{exp}"}, ordered=True, bind=("default", "label_schemas.0.schema_id")
    )
    assert [s["name"] for s in ours.body["label_schemas"]] == ["Feedback", "third", "second", "first"]
    twin.same("GET", "label-schemas/list", query={"experiment_id": "{exp}"}, ordered=True)
    ours, _ = twin.same("GET", "label-schemas/list", query={"experiment_id": "{exp}", "max_results": 3}, ordered=True)
    ours_rest = twin.session.get(
        f"{twin.ours_url}/api/3.0/mlflow/label-schemas/list",
        params={"experiment_id": twin.ours_values["exp"], "page_token": ours.body["next_page_token"], "max_results": 3},
        timeout=30,
    ).json()
    assert [s["name"] for s in ours_rest["label_schemas"]] == ["first"] and ours_rest["next_page_token"] == ""
    for bad in ({"max_results": 0}, {"max_results": 50001}, {"max_results": "x"}, {"page_token": "!!"}):
        twin.same("GET", "label-schemas/list", query={"experiment_id": "{exp}", **bad})
    twin.same("GET", "label-schemas/list", query={"experiment_id": "987654321"})
    for change in (
        {"name": "renamed", "instruction": "new", "enable_comment": True},
        {"name": "second"},
        {"name": "Feedback"},
        {"input": {"categorical": {"options": ["x", "y", "z"]}}},
        {"input": {"categorical": {"options": ["x"], "multi_select": True}}},
        {"input": {"text": {}}},
        {"input": {}},
        {},
    ):
        twin.same("PATCH", "label-schemas/update", {"schema_id": "{first}", **change})
    twin.same("GET", "label-schemas/get-by-name", query={"experiment_id": "{exp}", "name": "renamed"})
    twin.same("GET", "label-schemas/get-by-name", query={"experiment_id": "{exp}", "name": "first"})
    twin.same("PATCH", "label-schemas/update", {"schema_id": "{default}", "instruction": "mine"})
    twin.same("PATCH", "label-schemas/update", {"schema_id": "ls-missing", "name": "z"})
    twin.same("DELETE", "label-schemas/delete", {"schema_id": "{default}"})
    twin.same("DELETE", "label-schemas/delete", {"schema_id": "{second}"})
    twin.same("DELETE", "label-schemas/delete", {"schema_id": "{second}"})
    twin.same("GET", "label-schemas/get", query={"schema_id": "{second}"})
    # The freed name can be taken again.
    twin.same(
        "POST",
        "label-schemas/create",
        {"experiment_id": "{exp}", "name": "second", "type": "FEEDBACK", "input": {"text": {}}},
        bind=("again", "label_schema.schema_id"),
    )
    twin.same("GET", "label-schemas/list", query={"experiment_id": "{exp}"}, ordered=True)
