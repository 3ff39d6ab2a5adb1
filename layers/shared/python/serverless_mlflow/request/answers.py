"""MLflow's answer to a request field of the wrong type: the one place its text is built."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.core.validation import invalid_value

API_DOCS_HINT = " See the API docs for more information about request parameters."


def type_hint(value: Any) -> str:
    """The hint MLflow's handler appends to a type failure."""
    return f" Hint: Value was of type '{type(value).__name__}'."


def type_error(path: str, value: Any) -> MlflowError:
    """MLflow's answer to a value of the wrong type (or out of its proto type's range) at ``path``."""
    return invalid(invalid_value(path, value, type_hint(value)) + API_DOCS_HINT)
