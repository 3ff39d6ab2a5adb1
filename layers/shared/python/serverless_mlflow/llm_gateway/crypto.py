"""Secret values encrypted with the stack's KMS key: the table holds ciphertext only.

Each value (the JSON of ``secret_value``) is encrypted by KMS ``Encrypt`` under the key named by
``GATEWAY_KMS_KEY_ID``, with the secret's id and name as encryption context: like MLflow's AAD, a ciphertext
copied onto another secret fails to decrypt. The plaintext key never leaves KMS, so there is no data key to
wrap and no crypto library to ship in the (pure-Python) layer; the price is KMS's 4 KB plaintext limit,
which API keys and service-account JSON fit. Only the gateway runtime functions decrypt (``decrypt``); the
configuration API never does (its role holds ``kms:Encrypt`` only).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from serverless_mlflow.errors import MlflowError, invalid

# KMS Encrypt takes at most 4096 bytes of plaintext.
MAX_PLAINTEXT_BYTES = 4096

_lock = threading.Lock()
_clients: dict[str | None, Any] = {}


def _client() -> Any:
    endpoint = os.environ.get("KMS_ENDPOINT_URL") or None  # moto's KMS in the local runtime
    with _lock:
        if endpoint not in _clients:
            import boto3
            from botocore.config import Config

            _clients[endpoint] = boto3.client("kms", endpoint_url=endpoint, config=Config(retries={"mode": "standard", "max_attempts": 5}))
        return _clients[endpoint]


def _key_id() -> str:
    key_id = os.environ.get("GATEWAY_KMS_KEY_ID")
    if not key_id:
        raise MlflowError("The AI gateway has no encryption key configured (GATEWAY_KMS_KEY_ID).", "INTERNAL_ERROR")
    return key_id


def context(secret_id: str, secret_name: str) -> dict[str, str]:
    return {"mlflow_secret_id": secret_id, "mlflow_secret_name": secret_name}


def encrypt(plaintext: str, secret_id: str, secret_name: str) -> bytes:
    data = plaintext.encode("utf-8")
    if len(data) > MAX_PLAINTEXT_BYTES:
        raise invalid(f"secret_value is too large: {len(data)} bytes of JSON, at most {MAX_PLAINTEXT_BYTES} are accepted.")
    answer = _client().encrypt(KeyId=_key_id(), Plaintext=data, EncryptionContext=context(secret_id, secret_name))
    return bytes(answer["CiphertextBlob"])


def decrypt(ciphertext: bytes, secret_id: str, secret_name: str) -> str:
    """The secret's JSON; KMS refuses a ciphertext that was sealed for another secret (encryption context)."""
    answer = _client().decrypt(CiphertextBlob=bytes(ciphertext), KeyId=_key_id(), EncryptionContext=context(secret_id, secret_name))
    return bytes(answer["Plaintext"]).decode("utf-8")
