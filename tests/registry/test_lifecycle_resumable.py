"""Rename and delete of big models that die half way and are finished by a retry or by a later read.

The model is seeded through the registry's own domain functions (same code as the handlers, without
HTTP, to keep the run short); the interruption uses the ``stop_after`` hook of the lifecycle module;
the retry and every check go through the real client over HTTP.
"""

from __future__ import annotations

import pytest
import requests
from mlflow.exceptions import RestException

from tests.conftest import unique

pytestmark = pytest.mark.e2e

VERSIONS = 100
ALIASES = 100
MODEL_TAGS = 20


def _seed(name: str) -> None:
    """Create the model through the domain code, then bulk-load versions, tags and aliases as the
    registry writes them (same item builders). Bulk loading keeps the setup fast on moto, whose
    transactions deep-copy the whole table."""
    from registry import items, models

    from serverless_mlflow.storage import table

    models.create_registered_model(name, {f"mt{i}": f"v{i}" for i in range(MODEL_TAGS)}, "big one")
    bulk = []
    for i in range(1, VERSIONS + 1):
        bulk.append(
            items.version_item(
                {
                    "name": name,
                    "version": i,
                    "creation_timestamp": i,
                    "last_updated_timestamp": i,
                    "description": "",
                    "current_stage": "None",
                    "source": f"s3://b/{i}",
                    "run_id": "",
                    "run_link": "",
                    "status": "READY",
                    "storage_location": f"s3://b/{i}",
                }
            )
        )
        bulk.append(items.version_tag_item(name, i, "n", str(i)))
    bulk += [items.alias_item(name, f"a{i}", i % VERSIONS + 1) for i in range(ALIASES)]
    table.batch_write(bulk)
    table.update(items.meta_key(name), "SET next_version = :n", values={":n": VERSIONS + 1})


def _partition_items(name: str) -> list[dict]:
    from registry.items import partition

    from serverless_mlflow.storage import table

    return table.query(partition(name))


def _listed(name: str) -> bool:
    from registry.items import entry_key

    from serverless_mlflow.storage import table

    return table.get(entry_key(name)) is not None


def _retry_rename(server: str, old: str, new: str) -> None:
    """The HTTP retry of the same POST (what urllib3 does after a 5xx): it finishes the job and answers 200.

    (MlflowClient.rename_registered_model first GETs the old name, which also finishes the job but then
    answers 404, as it would after any completed rename.)
    """
    response = requests.post(f"{server}/api/2.0/mlflow/registered-models/rename", json={"name": old, "new_name": new}, timeout=120)
    assert response.status_code == 200, response.text
    assert response.json()["registered_model"]["name"] == new


def _assert_complete(client, name: str) -> None:
    rm = client.get_registered_model(name)
    assert rm.description == "big one"
    assert rm.tags == {f"mt{i}": f"v{i}" for i in range(MODEL_TAGS)}
    assert rm.aliases == {f"a{i}": str(i % VERSIONS + 1) for i in range(ALIASES)}
    found = client.search_model_versions(f"name = '{name}'")
    assert sorted(int(mv.version) for mv in found) == list(range(1, VERSIONS + 1))
    assert all(mv.tags == {"n": mv.version} and mv.name == name for mv in found)
    assert client.get_model_version_by_alias(name, "a7").version == "8"
    # 1 META + versions + their tags + aliases + model tags, and nothing else.
    assert len(_partition_items(name)) == 1 + 2 * VERSIONS + ALIASES + MODEL_TAGS
    assert _listed(name)


def _assert_gone(client, name: str) -> None:
    with pytest.raises(RestException) as excinfo:
        client.get_registered_model(name)
    assert excinfo.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert _partition_items(name) == []
    assert not _listed(name)


@pytest.mark.parametrize("finisher", ["retry", "read_new", "read_old"])
@pytest.mark.slow
def test_rename_interrupted_then_finished(server: str, client, finisher: str) -> None:
    from registry import lifecycle, models

    old, new = unique("big-old"), unique("big-new")
    _seed(old)
    with pytest.raises(lifecycle.Interrupted):
        models.rename_registered_model(old, new, stop_after=3)
    # Half way: both partitions hold items, markers on both META items.
    assert _partition_items(old) and _partition_items(new)

    if finisher == "retry":
        _retry_rename(server, old, new)
    elif finisher == "read_new":
        assert client.get_registered_model(new).name == new
    else:
        with pytest.raises(RestException):
            client.get_model_version(old, "1")  # a read of the old name finishes the job, then 404
    _assert_gone(client, old)
    _assert_complete(client, new)
    # Writes to the new name work again; the old name can be re-created from scratch.
    assert client.create_model_version(new, "s3://b/next").version == str(VERSIONS + 1)
    client.create_registered_model(old)
    assert client.create_model_version(old, "s3://b/first").version == "1"


def test_rename_interrupted_before_final_step(server: str, client) -> None:
    from registry import lifecycle, models

    old, new = unique("fin-old"), unique("fin-new")
    _seed(old)
    with pytest.raises(lifecycle.Interrupted):
        models.rename_registered_model(old, new, stop_after=-1)  # every batch done, step 3 not
    assert [i["sk"] for i in _partition_items(old)] == ["M#META"]
    _retry_rename(server, old, new)
    _assert_gone(client, old)
    _assert_complete(client, new)


def test_delete_interrupted_then_read(client) -> None:
    from registry import lifecycle, models

    name = unique("big-del")
    _seed(name)
    with pytest.raises(lifecycle.Interrupted):
        models.delete_registered_model(name, stop_after=2)
    assert _partition_items(name)
    assert client.search_model_versions(f"name = '{name}'") == []  # a half-deleted model lists nothing
    _assert_gone(client, name)  # the read finished the delete


def test_delete_interrupted_retry_succeeds(server: str, client) -> None:
    from registry import lifecycle, models

    name = unique("del-retry")
    _seed(name)
    with pytest.raises(lifecycle.Interrupted):
        models.delete_registered_model(name, stop_after=1)
    # The HTTP retry of the same DELETE finishes the job and succeeds (MlflowClient would GET first,
    # which also finishes it, then answer 404 as after any completed delete).
    response = requests.delete(f"{server}/api/2.0/mlflow/registered-models/delete", json={"name": name}, timeout=120)
    assert response.status_code == 200, response.text
    _assert_gone(client, name)
