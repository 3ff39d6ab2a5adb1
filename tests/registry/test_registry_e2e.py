"""End-to-end registry flows through the local runtime with the real MlflowClient."""

from __future__ import annotations

import pytest
import requests
from mlflow.exceptions import MlflowException, RestException

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def _items(name: str) -> list[dict]:
    from registry.items import partition

    from serverless_mlflow.storage import table

    return table.query(partition(name))


def _error(excinfo: pytest.ExceptionInfo[BaseException]) -> str:
    return getattr(excinfo.value, "error_code", "")


def test_create_get_update_tags(client) -> None:
    name = unique("rm#ü ")
    created = client.create_registered_model(name, tags={"team": "a", "x.y:z": "z"}, description="first")
    assert created.name == name and created.description == "first"
    assert created.tags == {"team": "a", "x.y:z": "z"}
    got = client.get_registered_model(name)
    assert got.name == name and got.tags == {"team": "a", "x.y:z": "z"} and got.latest_versions == []
    assert got.creation_timestamp == created.creation_timestamp

    updated = client.update_registered_model(name, description="second")
    assert updated.description == "second"
    assert updated.last_updated_timestamp >= created.last_updated_timestamp

    client.set_registered_model_tag(name, "team", "b")
    client.delete_registered_model_tag(name, "x.y:z")
    client.delete_registered_model_tag(name, "never-set")  # deleting a missing tag is a no-op in MLflow
    assert client.get_registered_model(name).tags == {"team": "b"}

    with pytest.raises(MlflowException) as excinfo:
        client.create_registered_model(name)
    assert _error(excinfo) == "RESOURCE_ALREADY_EXISTS"
    assert f"Registered Model (name={name}) already exists." in str(excinfo.value)


def test_missing_model_and_version_errors(client) -> None:
    name = unique("missing")
    with pytest.raises(RestException) as excinfo:
        client.get_registered_model(name)
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    assert str(excinfo.value).endswith(f"Registered Model with name={name} not found")
    client.create_registered_model(name)
    with pytest.raises(RestException) as excinfo:
        client.get_model_version(name, "7")
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    assert f"Model Version (name={name}, version=7) not found" in str(excinfo.value)
    with pytest.raises(RestException) as excinfo:
        client.set_registered_model_tag(unique("nope"), "k", "v")
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    with pytest.raises(RestException) as excinfo:
        client.create_model_version(unique("nope"), "s3://bucket/model")
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    with pytest.raises(RestException) as excinfo:
        client.create_registered_model("bad/name")
    assert _error(excinfo) == "INVALID_PARAMETER_VALUE"


def test_versions_aliases_stages(client) -> None:
    name = unique("mv")
    client.create_registered_model(name)
    v1 = client.create_model_version(name, "s3://bucket/m1", tags={"k": "v"}, description="d1")
    v2 = client.create_model_version(name, "s3://bucket/m2")
    v3 = client.create_model_version(name, "s3://bucket/m3")
    assert (v1.version, v2.version, v3.version) == ("1", "2", "3")
    assert v1.tags == {"k": "v"} and v1.description == "d1" and v1.current_stage == "None" and v1.status == "READY"

    client.set_registered_model_alias(name, "champion", "2")
    client.set_registered_model_alias(name, "prod", "2")
    by_alias = client.get_model_version_by_alias(name, "champion")
    assert by_alias.version == "2" and sorted(by_alias.aliases) == ["champion", "prod"]
    assert client.get_model_version_by_alias(name, "latest").version == "3"
    with pytest.raises(RestException) as excinfo:
        client.get_model_version_by_alias(name, "nope")
    assert _error(excinfo) == "INVALID_PARAMETER_VALUE"
    assert "Registered model alias nope not found." in str(excinfo.value)
    for reserved in ("latest", "v3", "V10"):
        with pytest.raises(RestException) as excinfo:
            client.set_registered_model_alias(name, reserved, "1")
        assert _error(excinfo) == "INVALID_PARAMETER_VALUE"
    with pytest.raises(RestException) as excinfo:
        client.set_registered_model_alias(name, "ghost", "99")
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"

    rm = client.get_registered_model(name)
    assert {a: v for a, v in rm.aliases.items()} == {"champion": "2", "prod": "2"}
    assert [mv.version for mv in rm.latest_versions] == ["3"]

    client.set_model_version_tag(name, "1", "quality", "good")
    client.delete_model_version_tag(name, "1", "k")
    assert client.get_model_version(name, "1").tags == {"quality": "good"}
    assert client.update_model_version(name, "1", description="new").description == "new"

    staged = client.transition_model_version_stage(name, "1", "staging")
    assert staged.current_stage == "Staging"
    client.transition_model_version_stage(name, "2", "Production")
    client.transition_model_version_stage(name, "3", "Production", archive_existing_versions=True)
    assert client.get_model_version(name, "2").current_stage == "Archived"
    latest = {mv.current_stage: mv.version for mv in client.get_latest_versions(name)}
    assert latest == {"Staging": "1", "Archived": "2", "Production": "3"}
    assert [mv.version for mv in client.get_latest_versions(name, stages=["Production"])] == ["3"]
    with pytest.raises(MlflowException):
        client.transition_model_version_stage(name, "1", "bogus")

    client.delete_model_version(name, "2")
    with pytest.raises(RestException) as excinfo:
        client.get_model_version(name, "2")
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    assert client.get_registered_model(name).aliases == {}  # aliases of the deleted version went with it
    assert not [i for i in _items(name) if i["sk"].startswith("M#V#0000000002")]  # its tags are gone too
    v4 = client.create_model_version(name, "s3://bucket/m4")
    # GET variant of get-latest-versions (the client falls back to it), repeated stages.
    response = requests.get(
        f"{client.tracking_uri}/api/2.0/mlflow/registered-models/get-latest-versions",
        params=[("name", name), ("stages", "Staging"), ("stages", "Production")],
        timeout=60,
    )
    assert sorted(v["version"] for v in response.json()["model_versions"]) == ["1", "3"]
    assert v4.version == "4"  # numbers are never reused
    assert client.get_model_version_download_uri(name, "4") == "s3://bucket/m4"

    client.delete_registered_model_alias(name, "champion")
    with pytest.raises(RestException):
        client.get_model_version_by_alias(name, "champion")


def test_rename_and_delete(client) -> None:
    name, new_name = unique("old"), unique("new")
    client.create_registered_model(name, tags={"t": "1"})
    for i in range(3):
        client.create_model_version(name, f"s3://bucket/{i}", tags={"i": str(i)})
    client.set_registered_model_alias(name, "best", "2")
    client.rename_registered_model(name, new_name)
    renamed = client.get_registered_model(new_name)
    assert renamed.name == new_name and renamed.tags == {"t": "1"} and renamed.aliases == {"best": "2"}
    with pytest.raises(RestException) as excinfo:
        client.get_registered_model(name)
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    mv = client.get_model_version_by_alias(new_name, "best")
    assert (mv.name, mv.version, mv.tags) == (new_name, "2", {"i": "1"})
    assert client.create_model_version(new_name, "s3://bucket/next").version == "4"

    other = unique("other")
    client.create_registered_model(other)
    with pytest.raises(RestException) as excinfo:
        client.rename_registered_model(other, new_name)
    assert _error(excinfo) == "RESOURCE_ALREADY_EXISTS"

    client.delete_registered_model(new_name)
    with pytest.raises(RestException) as excinfo:
        client.get_registered_model(new_name)
    assert _error(excinfo) == "RESOURCE_DOES_NOT_EXIST"
    with pytest.raises(RestException):
        client.get_model_version(new_name, "1")
    # The name is free again and starts from version 1.
    client.create_registered_model(new_name)
    assert client.create_model_version(new_name, "s3://bucket/again").version == "1"
