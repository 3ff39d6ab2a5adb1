"""Values encrypted with the stack's KMS key: the table holds ciphertext only.

Each value is encrypted by KMS ``Encrypt`` under the key named by ``GATEWAY_KMS_KEY_ID``, with an encryption
context that names what it belongs to (a gateway secret's id and name, a webhook's id): like MLflow's AAD, a
ciphertext copied onto another record fails to decrypt. The plaintext key never leaves KMS, so there is no
data key to wrap and no crypto library to ship in the (pure-Python) layer; the price is KMS's 4 KB plaintext
limit, which API keys, service-account JSON and webhook secrets fit. Each function's role says whether it may
encrypt, decrypt or both (``infra/permissions.py``).
"""

from __future__ import annotations

import os
import threading
from typing import Any

from serverless_mlflow.core.errors import MlflowError

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
        raise MlflowError("The server has no encryption key configured (GATEWAY_KMS_KEY_ID).", "INTERNAL_ERROR")
    return key_id


def encrypt(data: bytes, context: dict[str, str]) -> bytes:
    """Ciphertext of ``data`` (at most ``MAX_PLAINTEXT_BYTES``; callers refuse larger values first)."""
    answer = _client().encrypt(KeyId=_key_id(), Plaintext=data, EncryptionContext=context)
    return bytes(answer["CiphertextBlob"])


def decrypt(ciphertext: bytes, context: dict[str, str]) -> bytes:
    answer = _client().decrypt(CiphertextBlob=ciphertext, EncryptionContext=context, KeyId=_key_id())
    return bytes(answer["Plaintext"])
