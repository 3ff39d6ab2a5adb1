"""Bad input on the registry routes answers MLflow's 4xx, never a 500 (issue 11), compared with MLflow's own
server over SqlAlchemyStore (the runs tests' reference).

* A version number no version can have (< 1, >= 10^10) is simply not found, on every route that names a
  version, with MLflow's status, error code and message. Beyond sqlite's integers MLflow's server itself
  fails (500); ours still answers "not found".
* A tag whose key or value is not a string is refused on create_registered_model and create_model_version,
  and nothing is created.
"""

from __future__ import annotations

from typing import Any

import pytest
import requests

from tests.conftest import unique
from tests.runs.conftest import Answer, Twin, reference_client

pytestmark = pytest.mark.e2e

VERSION_ROUTES: list[tuple[str, str, dict[str, Any]]] = [
    ("GET", "model-versions/get", {}),
    ("PATCH", "model-versions/update", {"description": "d"}),
    ("POST", "model-versions/set-tag", {"key": "k", "value": "v"}),
    ("DELETE", "model-versions/delete-tag", {"key": "k"}),
    ("POST", "registered-models/alias", {"alias": "champion"}),
    ("POST", "model-versions/transition-stage", {"stage": "Production", "archive_existing_versions": False}),
    ("GET", "model-versions/get-download-uri", {}),
    ("DELETE", "model-versions/delete", {}),
]


@pytest.fixture
def registry_twin(server: str) -> Twin:
    twin = Twin(server, reference_client())
    name = unique("bad-version")
    twin.bind("model", name, name)
    for path, body in (("registered-models/create", {"name": name}), ("model-versions/create", {"name": name, "source": "s3://bucket/m"})):
        ours, reference = twin.call("POST", path, body)
        assert ours.status == reference.status == 200, (ours, reference)
    return twin


def _send(twin: Twin, method: str, path: str, version: str, extra: dict[str, Any]) -> tuple[Answer, Answer]:
    body = {"name": "{model}", "version": version, **extra}
    if method == "GET":
        return twin.call(method, path, query=body)
    return twin.call(method, path, body)


@pytest.mark.parametrize("version", ["0", "-1", "-9223372036854775808", str(10**10), "99999999999"])
def test_impossible_version_numbers_are_not_found_like_mlflow(registry_twin: Twin, version: str) -> None:
    for method, path, extra in VERSION_ROUTES:
        ours, reference = _send(registry_twin, method, path, version, extra)
        assert reference.status == 404, (path, reference)
        registry_twin.check(ours, reference, (method, path, version))


@pytest.mark.parametrize("version", [str(2**64), "9" * 30])
def test_version_numbers_beyond_int64_are_not_found_where_mlflow_fails(registry_twin: Twin, version: str) -> None:
    name = registry_twin.ours_values["model"]
    for method, path, extra in VERSION_ROUTES:
        ours, reference = _send(registry_twin, method, path, version, extra)
        assert reference.status == 500, "MLflow's server fails on these (sqlite integer overflow)"
        assert (ours.status, ours.body.get("error_code")) == (404, "RESOURCE_DOES_NOT_EXIST"), (path, ours)
        assert ours.body["message"] == f"Model Version (name={name}, version={version}) not found", ours


def test_existing_version_is_untouched_by_the_refused_calls(registry_twin: Twin) -> None:
    before, _ = registry_twin.call("GET", "registered-models/get", query={"name": "{model}"})
    for version in ("0", str(10**10), str(2**64)):
        for method, path, extra in VERSION_ROUTES:
            _send(registry_twin, method, path, version, extra)
    after, _ = registry_twin.call("GET", "registered-models/get", query={"name": "{model}"})
    assert before == after and after.status == 200
    version, _ = registry_twin.call("GET", "model-versions/get", query={"name": "{model}", "version": "1"})
    assert (version.body["model_version"]["current_stage"], version.body["model_version"].get("tags")) == ("None", None)


@pytest.mark.parametrize(
    ("tags", "field", "reference_status"),
    [
        ([{"key": 5, "value": "x"}], "tags[0].key", 400),
        ([{"key": ["k"], "value": "x"}], "tags[0].key", 400),
        (["not a tag"], "tags", 400),  # named as the list (create_registered_model) or its entry
        # MLflow's server stores the tag with an empty value here; ours refuses it.
        ([{"key": "k", "value": 5}], "tags[0].value", 200),
    ],
)
def test_badly_typed_tags_are_refused_and_nothing_is_created(server: str, tags: list[Any], field: str, reference_status: int) -> None:
    twin = Twin(server, reference_client())
    name = unique("bad-tag")
    twin.bind("model", name, name)
    ours, reference = twin.call("POST", "registered-models/create", {"name": "{model}", "tags": tags})
    assert (ours.status, ours.body.get("error_code")) == (400, "INVALID_PARAMETER_VALUE"), ours
    assert f"parameter '{field}" in ours.body["message"], ours
    assert reference.status == reference_status, reference
    missing = requests.get(f"{server}/api/2.0/mlflow/registered-models/get", params={"name": name}, timeout=30)
    assert missing.status_code == 404

    requests.post(f"{server}/api/2.0/mlflow/registered-models/create", json={"name": name}, timeout=30).raise_for_status()
    answer = requests.post(
        f"{server}/api/2.0/mlflow/model-versions/create", json={"name": name, "source": "s3://b/m", "tags": tags}, timeout=30
    )
    assert (answer.status_code, answer.json()["error_code"]) == (400, "INVALID_PARAMETER_VALUE"), answer.text
    assert f"parameter '{field}" in answer.json()["message"]
    versions = requests.get(f"{server}/api/2.0/mlflow/model-versions/search", params={"filter": f"name = '{name}'"}, timeout=30).json()
    assert versions.get("model_versions", []) == []
