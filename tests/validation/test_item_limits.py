"""Values that would make one DynamoDB item exceed 400 KB are refused with MLflow's 400 before any write
(issue 11): nothing is half-written, and the same request without the oversized value then succeeds."""

from __future__ import annotations

import pytest
import requests

from tests.conftest import unique

pytestmark = pytest.mark.e2e

OVERSIZED = "x" * (405 * 1024)  # 405 KiB: over DynamoDB's 400 KB item limit on its own


def _post(server: str, path: str, body: dict) -> requests.Response:
    return requests.post(f"{server}/api/2.0/mlflow/{path}", json=body, timeout=60)


def _assert_refused(response: requests.Response) -> None:
    assert response.status_code == 400, response.text
    error = response.json()
    assert error["error_code"] == "INVALID_PARAMETER_VALUE" and "too large to store" in error["message"]


def test_registered_model_with_oversized_description_is_refused_and_not_created(server: str) -> None:
    name = unique("big-desc")
    _assert_refused(_post(server, "registered-models/create", {"name": name, "description": OVERSIZED}))
    missing = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30)
    assert missing.status_code == 404
    assert _post(server, "registered-models/create", {"name": name, "description": "fits"}).status_code == 200
    update = requests.patch(f"{server}/api/2.0/mlflow/registered-models/update", json={"name": name, "description": OVERSIZED}, timeout=60)
    _assert_refused(update)
    got = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30).json()
    assert got["registered_model"]["description"] == "fits"


@pytest.mark.parametrize("source", ["s3://bucket/" + OVERSIZED, ("s3://bucket/" + OVERSIZED)[: 400 * 1024]], ids=["405KiB", "400KiB"])
def test_model_version_with_oversized_source_is_refused_and_not_created(server: str, source: str) -> None:
    # A 400 KiB source alone fits DynamoDB's limit; with the version's other attributes the item does not.
    name = unique("big-source")
    assert _post(server, "registered-models/create", {"name": name}).status_code == 200
    _assert_refused(_post(server, "model-versions/create", {"name": name, "source": source}))
    search = requests.get(f"{server}/api/2.0/mlflow/model-versions/search", params={"filter": f"name = '{name}'"}, timeout=30).json()
    assert search.get("model_versions", []) == []
    created = _post(server, "model-versions/create", {"name": name, "source": "s3://bucket/model"}).json()
    assert created["model_version"]["version"] == "1", "the refused request took no version number"


def test_run_renamed_to_an_oversized_name_is_refused(server: str) -> None:
    experiment_id = _post(server, "experiments/create", {"name": unique("big-run")}).json()["experiment_id"]
    run_id = _post(server, "runs/create", {"experiment_id": experiment_id, "run_name": "small"}).json()["run"]["info"]["run_id"]
    _assert_refused(_post(server, "runs/update", {"run_id": run_id, "run_name": OVERSIZED}))
    run = requests.get(f"{server}/api/2.0/mlflow/runs/get", params={"run_id": run_id}, timeout=30).json()["run"]
    assert run["info"]["run_name"] == "small"


def test_experiment_with_oversized_description_tag_is_refused_like_mlflow(server: str) -> None:
    # MLflow itself caps tag values (20,000 characters for experiment tags): its own message, before our limit.
    response = _post(
        server, "experiments/create", {"name": unique("big-exp"), "tags": [{"key": "mlflow.note.content", "value": OVERSIZED}]}
    )
    assert response.status_code == 400 and "exceeds the maximum length" in response.json()["message"]


def test_the_guard_counts_like_dynamodb_local(server: str) -> None:
    from serverless_mlflow.core import errors
    from serverless_mlflow.storage import schema, table
    from serverless_mlflow.storage.item_size import MAX_ITEM_BYTES, item_bytes

    key = {schema.PK: unique("SIZE#"), schema.SK: "item"}
    base = {**key, "blob": ""}
    padding = MAX_ITEM_BYTES - item_bytes(table.to_item(base))
    table.put({**base, "blob": "é" * (padding // 2)})  # exactly at the limit (2-byte characters): DynamoDB accepts it
    assert table.get(key)["blob"] == "é" * (padding // 2)
    with pytest.raises(errors.MlflowError, match="too large to store"):
        table.put({**base, "blob": "x" * (padding + 1)})
