"""Job tokens: a job that calls this server's API runs as the user who submitted it, never as more.

The function that enqueues a job (``functions/jobs``) mints a token bound to (username, job id, expiry),
HMAC-SHA256-signed with a key only it, the authorizer and the functions that check credentials on public routes
(``meta``: the client's ``server-info``) can read. The token travels in the job's SQS message; the worker sends it
as the basic-auth password of that user; the authorizer accepts it only untampered, unexpired, for that user and
while its job is live (``job_is_live``: the job exists, that user submitted it, and it is not finished), then applies
that user's own permissions. A token is never logged and never stored in the table.

Revocation: finishing, cancelling or deleting the job revokes its token (the expiry only bounds a job that never
finishes). An authorizer answer is cached per Authorization header (``AUTHORIZER_CACHE_SECONDS``, 60 s), so a
cancelled job's token stops working at most that long after the cancel.

The key: deployed, a Secrets Manager secret the stack generates (``JOB_TOKEN_SECRET_ARN``; read once per process);
locally, a random key the runtime generates at start (``JOB_TOKEN_KEY``).

Format: ``mlflow-job.<base64url JSON {"u": username, "j": job id, "e": expiry (epoch s)}>.<base64url HMAC>``.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
import threading
import time
from typing import Any

PREFIX = "mlflow-job."
# A demo job's longest run: up to MAX_RECEIVES (4) deliveries of the worker's 15-minute limit, their backoffs
# (10 + 20 + 40 s) and a continuation or two, plus time waiting in the queue. A job still running past this
# is refused (401) and fails; nothing longer is enqueued today.
DEFAULT_TTL_SECONDS = 2 * 60 * 60

_key: bytes | None = None
_key_lock = threading.Lock()


class NoKey(RuntimeError):
    """This function has no job-token key (not granted, or basic auth is off)."""


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def key() -> bytes:
    global _key
    local = os.environ.get("JOB_TOKEN_KEY")
    if local:
        return bytes.fromhex(local)
    secret_arn = os.environ.get("JOB_TOKEN_SECRET_ARN")
    if not secret_arn:
        raise NoKey("no job-token key")
    with _key_lock:
        if _key is None:
            import boto3

            secret = boto3.client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"]
            _key = secret.encode("utf-8")
        return _key


def available() -> bool:
    return bool(os.environ.get("JOB_TOKEN_KEY") or os.environ.get("JOB_TOKEN_SECRET_ARN"))


def _sign(payload: str) -> str:
    return _b64(hmac.new(key(), payload.encode("ascii"), hashlib.sha256).digest())


def mint(username: str, job_id: str, ttl_seconds: float = DEFAULT_TTL_SECONDS, now: float | None = None) -> str:
    expiry = int((time.time() if now is None else now) + ttl_seconds)
    payload = _b64(json.dumps({"u": username, "j": job_id, "e": expiry}, separators=(",", ":")).encode("utf-8"))
    return f"{PREFIX}{payload}.{_sign(payload)}"


def is_token(password: str) -> bool:
    return password.startswith(PREFIX)


def _claims(token: str) -> dict[str, Any] | None:
    body = token[len(PREFIX) :] if is_token(token) else ""
    payload, sep, signature = body.partition(".")
    if not sep:
        return None
    try:
        claims = json.loads(_unb64(payload))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(claims, dict) or not all(isinstance(claims.get(k), t) for k, t in (("u", str), ("j", str), ("e", int))):
        return None
    return {"payload": payload, "signature": signature, **claims}


def username_of(token: str) -> str | None:
    """The user a token names (unverified: what the worker sends it as)."""
    claims = _claims(token)
    return claims["u"] if claims else None


def verify(username: str, token: str) -> str | None:
    """The job id of a valid token for ``username``: signed with this server's key, unexpired, naming that user.
    None otherwise (also when this function cannot read the key: unverifiable is refused)."""
    claims = _claims(token)
    if claims is None or claims["u"] != username or claims["e"] <= time.time():
        return None
    try:
        expected = _sign(claims["payload"])
    except NoKey:
        return None
    return claims["j"] if hmac.compare_digest(expected, claims["signature"]) else None


def job_is_live(job_id: str, username: str) -> bool:
    """Whether the job a token names can still act: it exists, ``username`` submitted it, and it may still run
    (pending, running or awaiting recovery). One GetItem on the job's own partition."""
    from serverless_mlflow.storage import table
    from serverless_mlflow.store.jobs import CANCELABLE, JOB

    item = table.get(JOB.key(job_id=job_id), projection="#s, creator", names={"#s": "status"})
    return item is not None and item.get("creator") == username and item.get("status") in CANCELABLE
