"""Basic-auth users."""

from __future__ import annotations

from serverless_mlflow.core.errors import invalid


def validate_username(username: str | None) -> None:
    if username is None or username == "":
        raise invalid("Username cannot be empty.")


def validate_password(password: str | None) -> None:
    if password is None or len(password) < 12:
        raise invalid("Password must be at least 12 characters.")
