"""Logged models (MLflow 3): names."""

from __future__ import annotations

from serverless_mlflow.core.errors import invalid

LOGGED_MODEL_BAD_CHARS = ("/", ":", ".", "%", '"', "'")


def validate_logged_model_name(name: str | None) -> None:
    if name is None:
        return
    if not name or any(c in name for c in LOGGED_MODEL_BAD_CHARS):
        raise invalid(
            f"Invalid model name ({name!r}) provided. Model name must be a non-empty string "
            f"and cannot contain the following characters: {LOGGED_MODEL_BAD_CHARS}"
        )
