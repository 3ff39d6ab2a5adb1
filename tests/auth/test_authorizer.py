"""The Lambda authorizer and API Gateway's cache of its answers (local/authorizer.py emulates the deployed TTL)."""

from __future__ import annotations

import base64

import pytest

from tests.conftest import unique


def _basic(username: str, password: str) -> dict[str, str]:
    return {"authorization": "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()}


@pytest.fixture
def user(server: str) -> tuple[str, str]:
    from serverless_mlflow.auth import store

    name, password = unique("cached"), "first-password-1"
    store.create_user(name, password)
    return name, password


def test_answers_are_cached_per_header_for_the_ttl(user: tuple[str, str]) -> None:
    from local.authorizer import Authorizer
    from serverless_mlflow.auth import store

    name, password = user
    cached = Authorizer()
    cached.ttl = 60
    assert cached.context_for(_basic(name, password), "GET /x") == {"authenticated": True, "username": name, "is_admin": False}
    store.update_password(name, "second-password-2")
    # Within the TTL API Gateway answers from its cache: the old password still opens (documented staleness).
    assert cached.context_for(_basic(name, password), "GET /x")["authenticated"] is True
    assert cached.context_for(_basic(name, "second-password-2"), "GET /x")["authenticated"] is True
    uncached = Authorizer()
    uncached.ttl = 0
    assert uncached.context_for(_basic(name, password), "GET /x") == {"authenticated": False}
    # No header: API Gateway answers 401 itself and never invokes the authorizer.
    assert uncached.context_for({}, "GET /x") is None


def test_bad_headers_are_not_authenticated(user: tuple[str, str]) -> None:
    from serverless_mlflow.auth.authorizer import authorize, credentials

    name, password = user
    assert credentials("Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()) == (name, password)
    for header in (None, "", "Bearer x", "Basic", "Basic %%%", "Basic " + base64.b64encode(b"no-colon").decode()):
        assert credentials(header) is None
        assert authorize(header) == {"isAuthorized": True, "context": {"authenticated": False}}
    wrong = "Basic " + base64.b64encode(f"{name}:wrong-password".encode()).decode()
    assert authorize(wrong)["context"] == {"authenticated": False}


def test_password_hashes_are_salted_and_verified_in_constant_time_form() -> None:
    from serverless_mlflow.auth.passwords import check_password, hash_password

    first, second = hash_password("same-password-1"), hash_password("same-password-1")
    assert first != second and first.startswith("scrypt$")
    assert "same-password-1" not in first
    assert check_password(first, "same-password-1") and not check_password(first, "other-password")
    assert not check_password("garbage", "same-password-1")


def test_the_hash_cost_is_the_default_unless_configured(monkeypatch: pytest.MonkeyPatch) -> None:
    from serverless_mlflow.auth.passwords import check_password, hash_password

    # The suite hashes at a low cost (tests/conftest.py); the stack never sets AUTH_SCRYPT_N.
    monkeypatch.delenv("AUTH_SCRYPT_N")
    default = hash_password("same-password-1")
    assert default.split("$")[1:4] == ["16384", "8", "1"]
    monkeypatch.setenv("AUTH_SCRYPT_N", "1024")
    cheap = hash_password("same-password-1")
    assert cheap.split("$")[1:4] == ["1024", "8", "1"]
    # A check uses the cost stored with each hash.
    for stored in (default, cheap):
        assert check_password(stored, "same-password-1") and not check_password(stored, "same-password-2")
    for bad in ("1000", "512", str(2**17)):
        monkeypatch.setenv("AUTH_SCRYPT_N", bad)
        with pytest.raises(ValueError, match="AUTH_SCRYPT_N"):
            hash_password("same-password-1")
