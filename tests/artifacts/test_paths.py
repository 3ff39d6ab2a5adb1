"""Artifact path rules of the layer (``artifact_locations``), compared with MLflow's own validator."""

from __future__ import annotations

import pytest
from mlflow.exceptions import MlflowException
from mlflow.utils.uri import validate_path_is_safe

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.store.artifact_locations import artifact_key, relative_path, safe_relative_path

REJECTED_BY_BOTH = ["..", "../x", "a/../../x", "%2e%2e/x", "%252e%252e/x", "/abs", "%2Fabs", "a#b", "file:///etc/passwd", "a/..%2f..%2fx"]
# Stricter than MLflow on Linux (whose only separator is "/"): backslashes, drive letters, control characters.
REJECTED_HERE_ONLY = ["a\\..\\x", "a%5c..%5cx", "C:/x", "c:x", "a\x00b", "a%01b"]
ACCEPTED = {
    "1/abc/artifacts/model/MLmodel": "1/abc/artifacts/model/MLmodel",
    "a/./b//c/": "a/b/c",
    "name with spaces.txt": "name with spaces.txt",
    "a%20b": "a b",
    "...": "...",
    "ünïcode/日本.txt": "ünïcode/日本.txt",
    "": "",
}


@pytest.mark.parametrize("path", REJECTED_BY_BOTH)
def test_rejected_like_mlflow(path: str) -> None:
    with pytest.raises(MlflowException, match="Invalid path"):
        validate_path_is_safe(path)
    with pytest.raises(MlflowError) as caught:
        safe_relative_path(path)
    assert (caught.value.error_code, caught.value.message) == ("INVALID_PARAMETER_VALUE", "Invalid path")


@pytest.mark.parametrize("path", REJECTED_HERE_ONLY)
def test_rejected_stricter_than_mlflow(path: str) -> None:
    with pytest.raises(MlflowError, match="Invalid path"):
        safe_relative_path(path)


@pytest.mark.parametrize(("path", "normalised"), ACCEPTED.items())
def test_accepted_and_normalised(path: str, normalised: str) -> None:
    assert safe_relative_path(path) == normalised


def test_keys_and_locations(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ARTIFACTS_PREFIX", raising=False)
    assert artifact_key("1/r/artifacts/x") == "mlartifacts/1/r/artifacts/x"
    monkeypatch.setenv("ARTIFACTS_PREFIX", "/custom/root/")
    assert artifact_key("x") == "custom/root/x"
    with pytest.raises(MlflowError, match="too long"):
        artifact_key("x" * 1100)
    assert relative_path("mlflow-artifacts:/1/r/artifacts") == "1/r/artifacts"
    assert relative_path("mlflow-artifacts://host:5000/1/r/artifacts") == "1/r/artifacts"
    assert relative_path("s3://bucket/1/r/artifacts") is None
    assert relative_path(None) is None
