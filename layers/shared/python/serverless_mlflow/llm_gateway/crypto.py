"""Secret values encrypted with the stack's KMS key: the table holds ciphertext only.

Each value (the JSON of ``secret_value``) is encrypted by KMS ``Encrypt`` under the key named by
``GATEWAY_KMS_KEY_ID``, with the secret's id and name as encryption context: like MLflow's AAD, a ciphertext
copied onto another secret fails to decrypt. The plaintext key never leaves KMS, so there is no data key to
wrap and no crypto library to ship in the (pure-Python) layer; the price is KMS's 4 KB plaintext limit,
which API keys and service-account JSON fit. Only the gateway runtime functions decrypt (``decrypt``); the
configuration API never does (its role holds ``kms:Encrypt`` only).
"""

from __future__ import annotations

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.storage import kms_secrets

MAX_PLAINTEXT_BYTES = kms_secrets.MAX_PLAINTEXT_BYTES


def context(secret_id: str, secret_name: str) -> dict[str, str]:
    return {"mlflow_secret_id": secret_id, "mlflow_secret_name": secret_name}


def encrypt(plaintext: str, secret_id: str, secret_name: str) -> bytes:
    data = plaintext.encode("utf-8")
    if len(data) > MAX_PLAINTEXT_BYTES:
        raise invalid(f"secret_value is too large: {len(data)} bytes of JSON, at most {MAX_PLAINTEXT_BYTES} are accepted.")
    return kms_secrets.encrypt(data, context(secret_id, secret_name))


def decrypt(ciphertext: bytes, secret_id: str, secret_name: str) -> str:
    """The secret's JSON; KMS refuses a ciphertext that was sealed for another secret (encryption context)."""
    return kms_secrets.decrypt(bytes(ciphertext), context(secret_id, secret_name)).decode("utf-8")
