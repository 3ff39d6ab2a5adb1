"""AI gateway configuration (secrets, model definitions) with the real client's RestStore gateway methods,
compared with MLflow's own server (its Flask app on sqlite, ``tests/mlflow_reference``) for the same calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import boto3
import pytest
import requests
from mlflow.exceptions import MlflowException
from mlflow.store.tracking.rest_store import RestStore
from mlflow.utils.rest_utils import MlflowHostCreds

from tests.conftest import unique
from tests.mlflow_reference import reference_server

pytestmark = pytest.mark.e2e

GW = "/api/3.0/mlflow/gateway"
API_KEY = "sk-proj-0123456789abcdefXYZ9"


@pytest.fixture
def stores(server: str) -> tuple[RestStore, RestStore]:
    """(ours, MLflow's): the same client code against both servers."""
    reference = reference_server()
    return RestStore(lambda: MlflowHostCreds(server)), RestStore(lambda: MlflowHostCreds(reference.url))


def _shape(entity: Any, *drop: str) -> dict[str, Any]:
    """An entity's proto as JSON, without the fields that differ by construction (ids, times)."""
    proto = json.loads(json.dumps(_to_dict(entity.to_proto())))
    for name in ("secret_id", "model_definition_id", "created_at", "last_updated_at", *drop):
        proto.pop(name, None)
    return proto


def _to_dict(proto: Any) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    return MessageToDict(proto, preserving_proto_field_name=True)


def _both(stores: tuple[RestStore, RestStore], call: Callable[[RestStore, str], Any]) -> tuple[Any, Any]:
    """The same call on both stores, each with its own unique suffix for names."""
    ours, theirs = stores
    suffix = unique("")
    return call(ours, suffix), call(theirs, suffix)


def _errors(server: str, method: str, path: str, body: dict[str, Any]) -> tuple[tuple, tuple]:
    """(status, error_code, message) from our server and from MLflow's for one raw request."""
    mine = requests.request(method, f"{server}{GW}/{path}", **_args(method, body), timeout=30)
    ref = requests.request(method, f"{reference_server().url}{GW}/{path}", **_args(method, body), timeout=30)
    return (mine.status_code, mine.json().get("error_code"), mine.json().get("message")), (
        ref.status_code,
        ref.json().get("error_code"),
        ref.json().get("message"),
    )


def _args(method: str, body: dict[str, Any]) -> dict[str, Any]:
    return {"params": body} if method == "GET" else {"json": body}


def test_secret_lifecycle_matches_mlflow(stores: tuple[RestStore, RestStore]) -> None:
    created = _both(
        stores,
        lambda s, x: s.create_gateway_secret(
            f"openai-{x}", {"api_key": API_KEY, "org": "short"}, provider="openai", auth_config={"region": " us "}, created_by="alice"
        ),
    )
    assert _shape(created[0], "secret_name") == _shape(created[1], "secret_name")
    assert created[0].masked_values == {"api_key": "sk-...XYZ9", "org": "***"}
    assert created[0].secret_id.startswith("s-") and len(created[0].secret_id) == 34

    ours = stores[0]
    pairs = list(zip(stores, created, strict=True))
    got = [store.get_secret_info(secret_id=secret.secret_id) for store, secret in pairs]
    assert _shape(got[0], "secret_name") == _shape(got[1], "secret_name")
    assert got[0] == created[0]

    listed = [[s.secret_id for s in store.list_secret_infos(provider="openai")] for store in stores]
    assert created[0].secret_id in listed[0] and created[1].secret_id in listed[1]
    assert created[0].secret_id not in [s.secret_id for s in ours.list_secret_infos(provider="anthropic")]

    # Rotate the value, replace auth_config, then clear it with a map that normalizes to empty.
    rotated = [
        store.update_gateway_secret(secret.secret_id, {"api_key": "sk-new-987654321"}, {"region": "eu"}, "bob") for store, secret in pairs
    ]
    assert _shape(rotated[0], "secret_name") == _shape(rotated[1], "secret_name")
    assert rotated[0].masked_values == {"api_key": "sk-...4321"} and rotated[0].last_updated_by == "bob"
    kept = [store.update_gateway_secret(secret.secret_id, None, None, None) for store, secret in pairs]
    assert _shape(kept[0], "secret_name") == _shape(kept[1], "secret_name")
    assert kept[0].auth_config == {"region": "eu"} and kept[0].masked_values == {"api_key": "sk-...4321"}
    cleared = [store.update_gateway_secret(secret.secret_id, None, {"api_base": "  "}, "carol") for store, secret in pairs]
    assert _shape(cleared[0], "secret_name") == _shape(cleared[1], "secret_name")
    assert cleared[0].auth_config is None

    for store, secret in pairs:
        store.delete_gateway_secret(secret.secret_id)
        with pytest.raises(MlflowException) as excinfo:
            store.get_secret_info(secret_id=secret.secret_id)
        assert excinfo.value.error_code == "RESOURCE_DOES_NOT_EXIST"
    assert created[0].secret_id not in [s.secret_id for s in ours.list_secret_infos()]
    # The name is free again once the secret is gone.
    ours.create_gateway_secret(created[0].secret_name, {"api_key": API_KEY})


def test_secret_is_stored_encrypted_and_bound_to_its_identity(server: str, stores: tuple[RestStore, RestStore]) -> None:
    import os

    from serverless_mlflow.llm_gateway import records
    from serverless_mlflow.storage import table

    ours, _ = stores
    name = unique("enc")
    secret = ours.create_gateway_secret(name, {"api_key": API_KEY})
    item = table.get(records.secret_key(secret.secret_id))
    stored = json.dumps({k: v.hex() if isinstance(v, bytes) else v for k, v in item.items()})
    assert API_KEY not in stored and API_KEY[3:-4] not in stored
    assert isinstance(item["ciphertext"], bytes) and "secret_value" not in item
    # The answer never carries the value either.
    raw = requests.get(f"{server}{GW}/secrets/get", params={"secret_id": secret.secret_id}, timeout=30).text
    assert API_KEY not in raw

    kms = boto3.client("kms", endpoint_url=os.environ["KMS_ENDPOINT_URL"])
    context = {"mlflow_secret_id": secret.secret_id, "mlflow_secret_name": name}
    plaintext = kms.decrypt(CiphertextBlob=item["ciphertext"], EncryptionContext=context)["Plaintext"]
    assert json.loads(plaintext) == {"api_key": API_KEY}
    # Copied onto another secret (another id/name), the ciphertext does not decrypt.
    with pytest.raises(kms.exceptions.InvalidCiphertextException):
        kms.decrypt(CiphertextBlob=item["ciphertext"], EncryptionContext={**context, "mlflow_secret_name": "other"})


def test_secret_errors_match_mlflow(server: str, stores: tuple[RestStore, RestStore]) -> None:
    ours, theirs = stores
    name = unique("dup")
    ours.create_gateway_secret(name, {"api_key": API_KEY})
    theirs.create_gateway_secret(name, {"api_key": API_KEY})
    cases = [
        ("POST", "secrets/create", {"secret_name": name, "secret_value": {"api_key": "x"}}),
        ("POST", "secrets/create", {"secret_value": {"api_key": "x"}}),
        ("POST", "secrets/create", {"secret_name": unique("nv")}),
        ("POST", "secrets/create", {"secret_name": unique("r"), "secret_value": {"api_key": "x", "base_url": "https://x"}}),
        ("POST", "secrets/create", {"secret_name": unique("r"), "secret_value": {"k": "v"}, "auth_config": {"model_list": "[]"}}),
        (
            "POST",
            "secrets/create",
            {"secret_name": unique("r"), "secret_value": {"k": "v"}, "auth_config": {"api_base": "http://example.com"}},
        ),
        (
            "POST",
            "secrets/create",
            {"secret_name": unique("r"), "secret_value": {"k": "v"}, "auth_config": {"api_base": "https://127.0.0.1/v1"}},
        ),
        (
            "POST",
            "secrets/create",
            {"secret_name": unique("r"), "secret_value": {"k": "v"}, "auth_config": {"api_base": "https://u:p@example.com"}},
        ),
        ("POST", "secrets/create", {"secret_name": unique("r"), "secret_value": {"k": "v"}, "auth_config": {"api_base": "https://127.1/"}}),
        ("GET", "secrets/get", {"secret_id": "s-" + "0" * 32}),
        ("GET", "secrets/get", {}),
        ("POST", "secrets/update", {"secret_id": "s-missing", "secret_value": {"api_key": "y"}}),
        ("POST", "secrets/update", {"secret_value": {"api_key": "y"}}),
        ("DELETE", "secrets/delete", {"secret_id": "s-missing"}),
        ("DELETE", "secrets/delete", {}),
    ]
    for method, path, body in cases:
        mine, ref = _errors(server, method, path, body)
        assert mine == ref, (path, body)


def test_model_definitions_match_mlflow(server: str, stores: tuple[RestStore, RestStore]) -> None:
    ours, theirs = stores
    suffix = unique("")
    secrets = [(s.create_gateway_secret(f"k1{suffix}", {"api_key": API_KEY}, provider="openai"), s) for s in stores]
    others = [s.create_gateway_secret(f"k2{suffix}", {"api_key": API_KEY}, provider="anthropic") for s in stores]

    created = [
        s.create_gateway_model_definition(f"gpt{suffix}", sec.secret_id, "openai", "gpt-4o", created_by="alice") for sec, s in secrets
    ]
    assert _shape(created[0], "secret_id") == _shape(created[1], "secret_id")
    assert created[0].secret_name == f"k1{suffix}" and created[0].model_definition_id.startswith("d-")
    got = [s.get_gateway_model_definition(d.model_definition_id) for (_, s), d in zip(secrets, created, strict=True)]
    assert got[0] == created[0]

    for (sec, s), other in zip(secrets, others, strict=True):
        assert [d.name for d in s.list_gateway_model_definitions(secret_id=sec.secret_id)] == [f"gpt{suffix}"]
        assert f"gpt{suffix}" in [d.name for d in s.list_gateway_model_definitions(provider="openai")]
        assert s.list_gateway_model_definitions(secret_id=other.secret_id) == []

    # Rename, switch secret and provider, change model name: only the given fields change.
    updated = [
        s.update_gateway_model_definition(
            d.model_definition_id, name=f"claude{suffix}", secret_id=o.secret_id, model_name="opus", provider="anthropic", updated_by="bob"
        )
        for (_, s), d, o in zip(secrets, created, others, strict=True)
    ]
    assert _shape(updated[0], "secret_id") == _shape(updated[1], "secret_id")
    assert updated[0].secret_name == f"k2{suffix}" and updated[0].created_by == "alice" and updated[0].last_updated_by == "bob"
    # The old name is free again; the new one is taken.
    for (sec, s), d in zip(secrets, created, strict=True):
        s.create_gateway_model_definition(f"gpt{suffix}", sec.secret_id, "openai", "gpt-4o")
        with pytest.raises(MlflowException) as excinfo:
            s.update_gateway_model_definition(d.model_definition_id, name=f"gpt{suffix}")
        assert excinfo.value.error_code == "RESOURCE_ALREADY_EXISTS"
        assert str(excinfo.value).endswith(f"Model definition with name 'gpt{suffix}' already exists")

    # Deleting the secret orphans the definitions that used it (MLflow: ON DELETE SET NULL).
    for (_, s), d, o in zip(secrets, created, others, strict=True):
        s.delete_gateway_secret(o.secret_id)
        orphan = s.get_gateway_model_definition(d.model_definition_id)
        assert orphan.secret_id is None and orphan.secret_name is None
        assert s.list_gateway_model_definitions(secret_id=o.secret_id) == []
    assert _shape(ours.get_gateway_model_definition(created[0].model_definition_id)) == _shape(
        theirs.get_gateway_model_definition(created[1].model_definition_id)
    )

    for (_, s), d in zip(secrets, created, strict=True):
        s.delete_gateway_model_definition(d.model_definition_id)
        with pytest.raises(MlflowException) as excinfo:
            s.get_gateway_model_definition(d.model_definition_id)
        assert excinfo.value.error_code == "RESOURCE_DOES_NOT_EXIST"


def test_model_definition_errors_match_mlflow(server: str, stores: tuple[RestStore, RestStore]) -> None:
    name = unique("taken")
    ids = []
    for store in stores:
        secret = store.create_gateway_secret(unique("k"), {"api_key": API_KEY})
        store.create_gateway_model_definition(name, secret.secret_id, "openai", "gpt-4o")
        ids.append(secret.secret_id)
    cases = [
        ("POST", "model-definitions/create", {"name": unique("m"), "secret_id": "s-missing", "provider": "openai", "model_name": "x"}),
        ("POST", "model-definitions/create", {"name": unique("m"), "provider": "openai", "model_name": "x"}),
        ("POST", "model-definitions/create", {"name": unique("m"), "secret_id": "{secret}", "model_name": "x"}),
        ("POST", "model-definitions/create", {"name": name, "secret_id": "{secret}", "provider": "openai", "model_name": "x"}),
        ("POST", "model-definitions/create", {"name": 5, "secret_id": "{secret}", "provider": "openai", "model_name": "x"}),
        ("GET", "model-definitions/get", {"model_definition_id": "d-missing"}),
        ("GET", "model-definitions/get", {}),
        ("POST", "model-definitions/update", {"model_definition_id": "d-missing", "name": "x"}),
        ("POST", "model-definitions/update", {"name": "x"}),
        ("DELETE", "model-definitions/delete", {"model_definition_id": "d-missing"}),
    ]
    for method, path, body in cases:
        mine = _errors_with(server, method, path, body, ids)
        assert mine[0] == mine[1], (path, body)


def _errors_with(server: str, method: str, path: str, body: dict[str, Any], secret_ids: list[str]) -> tuple[tuple, tuple]:
    def fill(secret_id: str) -> dict[str, Any]:
        return {k: secret_id if v == "{secret}" else v for k, v in body.items()}

    mine = requests.request(method, f"{server}{GW}/{path}", **_args(method, fill(secret_ids[0])), timeout=30).json()
    ref = requests.request(method, f"{reference_server().url}{GW}/{path}", **_args(method, fill(secret_ids[1])), timeout=30).json()
    return (mine.get("error_code"), mine.get("message")), (ref.get("error_code"), ref.get("message"))


@pytest.mark.parametrize("provider", ["no-such-provider", "OpenAI", " openai"])
def test_an_unknown_provider_is_refused_where_mlflow_stores_it(stores: tuple[RestStore, RestStore], provider: str) -> None:
    """MLflow 3.17 and 3.18 store any provider string and then answer every call to an endpoint using it with a 500
    (their LiteLLM fallback fails). Here create and update refuse a provider outside MLflow's catalog (what
    ``gateway/supported-providers`` lists) with 400, and nothing changes; a catalog provider (and an alias) is taken."""
    ours, theirs = stores
    suffix = unique("")
    secrets = [store.create_gateway_secret(f"k{suffix}", {"api_key": API_KEY}, provider="openai") for store in stores]
    # MLflow's answer: stored as given.
    stored = theirs.create_gateway_model_definition(f"d{suffix}", secrets[1].secret_id, provider, "m")
    assert stored.provider == provider
    with pytest.raises(MlflowException) as refused:
        ours.create_gateway_model_definition(f"d{suffix}", secrets[0].secret_id, provider, "m")
    assert (refused.value.error_code, refused.value.get_http_status_code()) == ("INVALID_PARAMETER_VALUE", 400)
    assert f"Unknown provider '{provider}'" in refused.value.message
    assert [d.name for d in ours.list_gateway_model_definitions()].count(f"d{suffix}") == 0

    definition = ours.create_gateway_model_definition(f"d{suffix}", secrets[0].secret_id, "openai", "m")
    with pytest.raises(MlflowException) as refused:
        ours.update_gateway_model_definition(definition.model_definition_id, provider=provider)
    assert refused.value.error_code == "INVALID_PARAMETER_VALUE"
    assert ours.get_gateway_model_definition(definition.model_definition_id).provider == "openai"
    for accepted in ("anthropic", "amazon-bedrock", "cohere"):
        updated = ours.update_gateway_model_definition(definition.model_definition_id, provider=accepted)
        assert updated.provider == accepted
