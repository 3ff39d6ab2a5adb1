"""Least privilege per data (issue 40): the secrets key's policy names the roles that encrypt and decrypt (the
account administers the key but cannot use it), and explicit Denies keep user credentials and the gateway's
secrets writable only by the functions that own them (``infra/permissions.py`` PROTECTED)."""

from __future__ import annotations

from typing import Any

import pytest

from infra.permissions import ACCESS, PROTECTED, protected_from
from tests.infra.test_stack import API_FEATURES, Synth, construct_of, policy_statements_of

pytestmark = pytest.mark.xdist_group("infra")

FUNCTIONS = [*API_FEATURES, "indexer", "webhook_events", "webhook_delivery", "job_worker", "gateway_stream"]
CRYPTO = ("kms:Encrypt", "kms:Decrypt", "kms:ReEncrypt", "kms:GenerateDataKey", "kms:*")


def _actions(statement: dict[str, Any]) -> list[str]:
    return [statement["Action"]] if isinstance(statement["Action"], str) else list(statement["Action"])


def _permissions(name: str) -> str:
    return "gateway_runtime" if name == "gateway_stream" else name


def test_the_key_policy_names_each_role_that_encrypts_or_decrypts_and_the_account_cannot(synth: Synth) -> None:
    key = synth.json["Resources"][synth.logical_id(synth.stack.secrets_key)]["Properties"]["KeyPolicy"]["Statement"]
    named: dict[str, set[str]] = {}
    for statement in key:
        principal = statement["Principal"]["AWS"]
        if "Fn::GetAtt" in principal:
            named[principal["Fn::GetAtt"][0]] = set(_actions(statement))
        else:
            # The account (root): administration only, no cryptographic use through IAM delegation.
            assert not [a for a in _actions(statement) if a.startswith(CRYPTO) or a == "kms:*"], statement
    expected = {
        synth.logical_id(construct_of(synth, name).role): set(ACCESS[_permissions(name)].kms)
        for name in FUNCTIONS
        if ACCESS[_permissions(name)].kms
    }
    assert named == expected and len(expected) >= 4  # gateway, gateway_runtime, gateway_stream, webhooks, webhook_delivery


@pytest.mark.parametrize("name", FUNCTIONS)
def test_protected_data_is_denied_to_every_role_but_its_owners(synth: Synth, name: str) -> None:
    statements = policy_statements_of(synth, name)
    denies = [s for s in statements if s["Effect"] == "Deny"]
    denied_keys = {key for s in denies for key in s.get("Condition", {}).get("ForAnyValue:StringLike", {}).get("dynamodb:LeadingKeys", [])}
    denied_attributes = {
        a for s in denies for a in s.get("Condition", {}).get("ForAnyValue:StringEquals", {}).get("dynamodb:Attributes", [])
    }
    owner_of = {label for label, protected in PROTECTED.items() if _permissions(name) in protected.owners}
    writes = any(
        a in ("dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem")
        for s in statements
        if s["Effect"] == "Allow"
        for a in _actions(s)
    )
    for label, protected in PROTECTED.items():
        denied = set(protected.leading_keys) <= denied_keys and set(protected.attributes) <= denied_attributes
        assert denied == (writes and label not in owner_of), (name, label)
    assert len(protected_from(_permissions(name))) == len([p for p in PROTECTED.values() if writes and _permissions(name) not in p.owners])


def test_owners_write_their_data_and_the_gateway_runtime_writes_only_spend_and_events(synth: Synth) -> None:
    for owner in ("auth", "gateway"):
        assert not [s for s in policy_statements_of(synth, owner) if s["Effect"] == "Deny" and "USERLIST" in str(s) and owner == "auth"]
    for name in ("gateway_runtime", "gateway_stream"):
        (writes,) = [s for s in policy_statements_of(synth, name) if s["Effect"] == "Allow" and "dynamodb:PutItem" in _actions(s)]
        assert set(_actions(writes)) == {"dynamodb:PutItem", "dynamodb:UpdateItem"}
        assert writes["Condition"] == {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["GWB#*", "EVENT#*"]}}
