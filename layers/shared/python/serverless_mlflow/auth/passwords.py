"""Salted, slow password hashes with the standard library's scrypt (no native dependency in the layer).

Format: ``scrypt$<n>$<r>$<p>$<salt b64>$<hash b64>``, so the cost can be raised later without breaking
stored hashes. n=2**14, r=8 costs ~16 MB and tens of milliseconds: slow for guessing, fine for a
Lambda (the authorizer's answers are cached by API Gateway, so a client pays it once per cache period).
``AUTH_SCRYPT_N`` (a power of two, 2**10..2**16) sets the cost of new hashes: the test suite lowers it (thousands of
basic-auth requests); the stack never sets it. A check always uses the cost stored with the hash.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

_N, _R, _P = 2**14, 8, 1
_N_RANGE = (2**10, 2**16)
_LENGTH = 32


def hash_password(password: str) -> str:
    n, salt = _cost(), secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode("utf-8"), salt=salt, n=n, r=_R, p=_P, dklen=_LENGTH, maxmem=_maxmem(n, _R))
    return "$".join(("scrypt", str(n), str(_R), str(_P), _b64(salt), _b64(digest)))


def _cost() -> int:
    """scrypt's N for a new hash: ``AUTH_SCRYPT_N`` if it is a power of two in range, else the default."""
    n = int(os.environ.get("AUTH_SCRYPT_N") or _N)
    if n & (n - 1) or not _N_RANGE[0] <= n <= _N_RANGE[1]:
        raise ValueError(f"AUTH_SCRYPT_N must be a power of two from {_N_RANGE[0]} to {_N_RANGE[1]}, not {n}")
    return n


def check_password(stored: str, password: str) -> bool:
    try:
        scheme, n, r, p, salt, expected = stored.split("$")
        if scheme != "scrypt":
            return False
        digest = hashlib.scrypt(
            password.encode("utf-8"),
            salt=_unb64(salt),
            n=int(n),
            r=int(r),
            p=int(p),
            dklen=_LENGTH,
            maxmem=_maxmem(int(n), int(r)),
        )
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(digest, _unb64(expected))


def _maxmem(n: int, r: int) -> int:
    """Twice what scrypt's buffers take (128 * r * n bytes), for OpenSSL's own overhead."""
    return 2 * 128 * r * n


def generate_password() -> str:
    return secrets.token_urlsafe(24)


def _b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"))
