"""An item collection at DynamoDB's 10 GB, end to end (issue 23): the write is answered as MLflow's
RESOURCE_CONFLICT (HTTP 409, which MLflow's client does not retry) naming what is full, and nothing of the
request is written.

DynamoDB refuses a write that would grow a full collection with ``ItemCollectionSizeLimitExceededException``
(``ItemCollectionSizeLimitExceeded`` as a transaction's cancellation reason). A wrapper around the real DynamoDB
Local client raises exactly that, with the real botocore exception classes, for writes into the partitions a
test declares full; everything else goes to DynamoDB Local.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import requests

from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY, PK
from serverless_mlflow.storage.table import connection
from serverless_mlflow.store.run_metrics import HISTORY
from tests.conftest import unique

pytestmark = pytest.mark.e2e

API = "/api/2.0/mlflow"


class FullCollections:
    """The real DynamoDB client, except that writes into the partitions in ``full`` are refused as DynamoDB refuses
    them past 10 GB (deletes shrink a collection: they pass)."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.full: set[str] = set()
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _grows_full(self, items: list[dict[str, Any]]) -> bool:
        return any(item[PK]["S"] in self.full for item in items)

    def _refuse(self, operation: str) -> Exception:
        self.refused += 1
        error = {"Error": {"Code": "ItemCollectionSizeLimitExceededException", "Message": "Collection size exceeded."}}
        return self._real.exceptions.ItemCollectionSizeLimitExceededException(error, operation)

    def put_item(self, **kwargs: Any) -> Any:
        if self._grows_full([kwargs["Item"]]):
            raise self._refuse("PutItem")
        return self._real.put_item(**kwargs)

    def update_item(self, **kwargs: Any) -> Any:
        if self._grows_full([kwargs["Key"]]):
            raise self._refuse("UpdateItem")
        return self._real.update_item(**kwargs)

    def batch_write_item(self, **kwargs: Any) -> Any:
        puts = [r["PutRequest"]["Item"] for requests_ in kwargs["RequestItems"].values() for r in requests_ if "PutRequest" in r]
        if self._grows_full(puts):
            raise self._refuse("BatchWriteItem")
        return self._real.batch_write_item(**kwargs)

    def transact_write_items(self, **kwargs: Any) -> Any:
        reasons = []
        for op in kwargs["TransactItems"]:
            ((kind, body),) = op.items()
            grows = kind in ("Put", "Update") and self._grows_full([body.get("Item") or body["Key"]])
            reasons.append({"Code": "ItemCollectionSizeLimitExceeded" if grows else "None"})
        if any(reason["Code"] != "None" for reason in reasons):
            self.refused += 1
            error = {
                "Error": {"Code": "TransactionCanceledException", "Message": "Transaction cancelled [ItemCollectionSizeLimitExceeded]"},
                "CancellationReasons": reasons,
            }
            raise self._real.exceptions.TransactionCanceledException(error, "TransactWriteItems")
        return self._real.transact_write_items(**kwargs)


@pytest.fixture
def collections(server: str, local_runtime: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[FullCollections]:
    local_runtime.drain_stream()  # nothing of an earlier test left for the indexer
    wrapper = FullCollections(table.client())
    monkeypatch.setattr(connection, "_client", wrapper)
    yield wrapper
    wrapper.full.clear()
    local_runtime.drain_stream()


def _post(server: str, path: str, body: dict[str, Any]) -> requests.Response:
    return requests.post(f"{server}{API}/{path}", json=body, timeout=60)


def _run(server: str, run_id: str) -> dict[str, Any]:
    return requests.get(f"{server}{API}/runs/get", params={"run_id": run_id}, timeout=60).json()["run"]


def _history(server: str, run_id: str, key: str) -> list[dict[str, Any]]:
    body = requests.get(f"{server}{API}/metrics/get-history", params={"run_id": run_id, "metric_key": key}, timeout=60).json()
    return body.get("metrics", [])


def _refused(response: requests.Response, names: str) -> None:
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["error_code"] == "RESOURCE_CONFLICT"
    assert names in body["message"] and "10 GB" in body["message"] and "nothing was written" in body["message"]


def test_a_full_experiment_partition_refuses_growth_and_writes_nothing(server: str, collections: FullCollections) -> None:
    experiment_id = _post(server, "experiments/create", {"name": unique("full")}).json()["experiment_id"]
    run_id = _post(server, "runs/create", {"experiment_id": experiment_id, "start_time": 1}).json()["run"]["info"]["run_id"]
    assert _post(server, "runs/log-metric", {"run_id": run_id, "key": "old", "value": 1.0, "timestamp": 1, "step": 0}).status_code == 200
    before = _run(server, run_id)
    collections.full.add(ENTITY["experiment"].pk.render({"experiment_id": experiment_id}))
    batch = {
        "run_id": run_id,
        "metrics": [{"key": "new", "value": 2.0, "timestamp": 2, "step": 1}, {"key": "old", "value": 3.0, "timestamp": 3, "step": 5}],
        "params": [{"key": "lr", "value": "0.1"}],
        "tags": [{"key": "team", "value": "a"}],
    }
    _refused(_post(server, "runs/log-batch", batch), f"experiment {experiment_id}")
    _refused(
        _post(server, "runs/log-batch", {"run_id": run_id, "metrics": batch["metrics"], "tags": batch["tags"]}),
        f"experiment {experiment_id}",
    )
    _refused(_post(server, "runs/set-tag", {"run_id": run_id, "key": "team", "value": "a"}), f"experiment {experiment_id}")
    _refused(_post(server, "runs/create", {"experiment_id": experiment_id, "start_time": 2}), f"experiment {experiment_id}")
    # A metric of a run the indexer has caught up with first needs the run's marker in the experiment partition:
    # refused there, before any point is written.
    _refused(
        _post(server, "runs/log-metric", {"run_id": run_id, "key": "new", "value": 4.0, "timestamp": 4, "step": 2}),
        f"experiment {experiment_id}",
    )
    assert collections.refused >= 5
    collections.full.clear()
    assert _run(server, run_id)["data"] == before["data"]
    assert _history(server, run_id, "new") == []
    assert [m["value"] for m in _history(server, run_id, "old")] == [1.0]
    found = _post(server, "runs/search", {"experiment_ids": [experiment_id]}).json()["runs"]
    assert [r["info"]["run_id"] for r in found] == [run_id]


def test_a_full_metric_history_refuses_its_points_and_writes_nothing(server: str, collections: FullCollections) -> None:
    experiment_id = _post(server, "experiments/create", {"name": unique("full-history")}).json()["experiment_id"]
    run_id = _post(server, "runs/create", {"experiment_id": experiment_id, "start_time": 1}).json()["run"]["info"]["run_id"]
    assert _post(server, "runs/log-metric", {"run_id": run_id, "key": "loss", "value": 1.0, "timestamp": 1, "step": 0}).status_code == 200
    collections.full.add(HISTORY.pk.render({"run_id": run_id, "key": "loss"}))
    _refused(
        _post(server, "runs/log-metric", {"run_id": run_id, "key": "loss", "value": 0.5, "timestamp": 2, "step": 1}),
        f"the history of metric 'loss' of run {run_id}",
    )
    _refused(
        _post(server, "runs/log-batch", {"run_id": run_id, "metrics": [{"key": "loss", "value": 0.4, "timestamp": 3, "step": 2}]}),
        f"the history of metric 'loss' of run {run_id}",
    )
    # Other metrics of the run are other collections: they log.
    assert _post(server, "runs/log-metric", {"run_id": run_id, "key": "acc", "value": 0.9, "timestamp": 2, "step": 1}).status_code == 200
    collections.full.clear()
    assert [m["value"] for m in _history(server, run_id, "loss")] == [1.0]
    assert {m["key"]: m["value"] for m in _run(server, run_id)["data"]["metrics"]} == {"loss": 1.0, "acc": 0.9}
