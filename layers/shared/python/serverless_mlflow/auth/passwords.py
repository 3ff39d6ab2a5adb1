"""Salted, slow password hashes with the standard library's scrypt (no native dependency in the layer).

Format: ``scrypt$<n>$<r>$<p>$<salt b64>$<hash b64>``, so the cost can be raised later without breaking
stored hashes. n=2**14, r=8 costs ~16 MB and tens of milliseconds: slow for guessing, fine for a
Lambda (the authorizer's answers are cached by API Gateway, so a client pays it once per cache period).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

_N, _R, _P = 2**14, 8, 1
_LENGTH = 32


def hash_password(password: str) -> str:
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=_N, r=_R, p=_P, dklen=_LENGTH, maxmem=64 * 1024 * 1024)
    return "$".join(("scrypt", str(_N), str(_R), str(_P), _b64(salt), _b64(digest)))


def check_password(stored: str, password: str) -> bool:
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode("utf-8"), salt=_unb64(salt), n=int(n), r=int(r), p=int(p), dklen=_LENGTH, maxmem=64 * 1024 * 1024
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(digest, _unb64(expected))


def generate_password() -> str:
    return secrets.token_urlsafe(24)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))
