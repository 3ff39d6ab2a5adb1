"""Model version sources: MLflow's validation (server/handlers.py) and the storage location.

A version's ``storage_location`` is what get-download-uri answers:
* ``models:/m-<id>``: the logged model's artifact location (and ``run_id`` defaults to the logged
  model's ``source_run_id``), as MLflow's SQL store does;
* ``models:/<name>/<version>`` (copy_model_version): that version's download URI;
* ``runs:/<run_id>/<path>``: ``<run artifact_uri>/<path>``. MLflow stores the ``runs:/`` URI itself
  and lets the client resolve it; resolving once here saves the client a get_run per load.
"""

from __future__ import annotations

import os
import pathlib
import posixpath
import re
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, NamedTuple

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.store import logged_models as logged_model_store
from serverless_mlflow.store import runs as run_store

PROMPT_SOURCE_PLACEHOLDERS = frozenset({"dummy-source", "prompt-template"})
MODELS_URI_SUFFIX_LATEST = "latest"


class ParsedModelUri(NamedTuple):
    model_id: str | None = None
    name: str | None = None
    version: str | None = None
    stage: str | None = None
    alias: str | None = None


@dataclass
class ResolvedSource:
    source: str
    run_id: str | None
    model_id: str | None
    storage_location: str


# --- lookups in the tracking data (the layer's store: the tracking features write them) -------------

# The run item (404 "Run with id=... not found") and the logged model item (404 when unknown or deleted).
get_run = run_store.get_run_item
get_logged_model = logged_model_store.get_model_item


def logged_model_location(model: dict[str, Any]) -> str:
    return model.get("artifact_location") or ""


# --- URI parsing (mlflow/store/artifact/utils/models.py, runs_artifact_repo.py) -------------------


def improper_model_uri(uri: str) -> MlflowError:
    # MLflow raises it without an error code (a 500 from its server); bad input is a 400 here.
    return invalid(
        f"Not a proper models:/ URI: {uri}. "
        "Models URIs must be of the form 'models:/name/suffix' "
        "or 'models:/name@alias' where suffix is a version"
        f", stage, or the string {MODELS_URI_SUFFIX_LATEST!r}"
        " and where alias is a registered model alias. "
        "Only one of suffix or alias can be defined at a time."
    )


def parse_model_uri(uri: str) -> ParsedModelUri:
    parsed = urllib.parse.urlparse(uri, allow_fragments=False)
    if parsed.scheme != "models":
        raise improper_model_uri(uri)
    path = parsed.path
    if not path.startswith("/") or len(path) <= 1:
        raise improper_model_uri(uri)
    parts = path.lstrip("/").split("/")
    if len(parts) > 2 or parts[0].strip() == "":
        raise improper_model_uri(uri)
    if len(parts) == 2:
        name, suffix = parts
        if suffix.strip() == "":
            raise improper_model_uri(uri)
        if suffix.isdigit():
            return ParsedModelUri(name=name, version=suffix)
        if suffix.lower() == MODELS_URI_SUFFIX_LATEST:
            return ParsedModelUri(name=name)
        return ParsedModelUri(name=name, stage=suffix)
    if "@" in path:
        alias_parts = parts[0].rsplit("@", 1)
        if len(alias_parts) != 2 or alias_parts[1].strip() == "":
            raise improper_model_uri(uri)
        return ParsedModelUri(name=alias_parts[0], alias=alias_parts[1])
    return ParsedModelUri(parts[0])


def parse_runs_uri(uri: str) -> tuple[str, str | None]:
    message = f"Not a proper runs:/ URI: {uri}. Runs URIs must be of the form 'runs:/<run_id>/run-relative/path/to/artifact'"
    parsed = urllib.parse.urlparse(uri)
    path = parsed.path
    if parsed.scheme != "runs" or not path.startswith("/") or len(path) <= 1:
        raise invalid(message)
    parts = path[1:].split("/")
    if parts[0] == "":
        raise invalid(message)
    artifact_path = "/".join(parts[1:]) if len(parts) > 1 else None
    return parts[0], artifact_path or None


def is_local_uri(uri: str) -> bool:
    parsed = urllib.parse.urlparse(uri)
    if parsed.scheme == "":
        return True
    remote = parsed.hostname and not (
        parsed.hostname == "." or parsed.hostname.startswith("localhost") or parsed.hostname.startswith("127.0.0.1")
    )
    if parsed.scheme == "file":
        if remote:
            raise invalid(
                f"{uri} is not a valid remote uri. For remote access on windows, please consider using a different scheme "
                "such as SMB (e.g. smb://<hostname>/<path>)."
            )
        return True
    return False


def local_path(uri: str) -> pathlib.Path:
    path = urllib.parse.urlparse(uri).path if uri.startswith("file:") else uri
    return pathlib.Path(urllib.request.url2pathname(path)).resolve()


# --- validation (server/handlers.py) --------------------------------------------------------------


def invalid_source(source: str, source_id_name: str) -> MlflowError:
    return invalid(
        f"Invalid model version source: '{source}'. The {source_id_name} request parameter must "
        "identify the resource that contains the source."
    )


def validate_prompt_source(source: str) -> None:
    if source not in PROMPT_SOURCE_PLACEHOLDERS:
        raise invalid(f"Invalid prompt source: '{source}'. Prompt sources must use an MLflow placeholder.")


def validate_no_relative_paths(source: str) -> None:
    message = (
        f"Invalid model version source: '{source}'. If supplying a source as an http, https, "
        "local file path, ftp, objectstore, or mlflow-artifacts uri, an absolute path must be "
        "provided without relative path references present. "
        "Please provide an absolute path."
    )
    while (unquoted := urllib.parse.unquote_plus(source)) != source:
        source = unquoted
    source_path = re.sub(r"/+", "/", urllib.parse.urlparse(source).path.rstrip("/"))
    if "\x00" in source_path or any(part == ".." for part in source.split("/")):
        raise invalid(message)
    resolved = pathlib.Path(source_path).resolve().as_posix()
    _, resolved_path = os.path.splitdrive(resolved)
    if resolved_path != source_path:
        raise invalid(message)


def _unquote_all(value: str) -> str:
    while (unquoted := urllib.parse.unquote(value)) != value:
        value = unquoted
    return value


def _uri_parts(uri: str) -> tuple[str, str, tuple[str, ...]]:
    parsed = urllib.parse.urlsplit(uri)
    return parsed.scheme.lower(), parsed.netloc.lower(), tuple(_unquote_all(p) for p in parsed.path.split("/") if p)


def is_uri_within_root(source: str, root: str) -> bool:
    source_scheme, source_authority, source_parts = _uri_parts(source)
    root_scheme, root_authority, root_parts = _uri_parts(root)
    return (
        source_scheme == root_scheme
        and source_authority == root_authority
        and bool(root_parts)
        and source_parts[: len(root_parts)] == root_parts
    )


def is_mlflow_artifact_source(source: str) -> bool:
    scheme, _, parts = _uri_parts(source)
    if scheme == "mlflow-artifacts":
        return True
    route = ("api", "2.0", "mlflow-artifacts", "artifacts")
    return scheme in ("http", "https") and any(parts[i : i + len(route)] == route for i in range(len(parts) - len(route) + 1))


def _parse_version_source(source: str) -> ParsedModelUri:
    try:
        return parse_model_uri(source)
    except MlflowError:
        raise invalid_source(source, "model_id") from None


def _source_run(run_id: str, source: str) -> dict[str, Any]:
    try:
        return get_run(run_id)
    except MlflowError as error:
        if error.error_code == "RESOURCE_DOES_NOT_EXIST":
            raise invalid_source(source, "run_id") from None
        raise


def _source_model(model_id: str, source: str) -> dict[str, Any]:
    try:
        return get_logged_model(model_id)
    except MlflowError as error:
        if error.error_code == "RESOURCE_DOES_NOT_EXIST":
            raise invalid_source(source, "model_id") from None
        raise


def _within_local_root(source: str, root: str) -> bool:
    if not is_local_uri(root):
        return False
    root_dir, path = local_path(root), local_path(source)
    return root_dir in (path, *path.parents)


def validate_source_run(source: str, run_id: str | None) -> None:
    if is_local_uri(source):
        if run_id and _within_local_root(source, _source_run(run_id, source).get("artifact_uri", "")):
            return
        raise invalid(
            f"Invalid model version source: '{local_path(source)}'. To use a local path as a model version "
            "source, the run_id request parameter has to be specified and the local path has to be "
            "contained within the artifact directory of the run specified by the run_id."
        )
    validate_no_relative_paths(source)
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme == "runs":
        if parsed.netloc:
            raise invalid_source(source, "run_id")
        source_run_id, _ = parse_runs_uri(source)
        if run_id and source_run_id == run_id:
            return
        raise invalid_source(source, "run_id")
    if parsed.scheme == "models":
        if parsed.netloc or _parse_version_source(source).model_id is not None:
            raise invalid_source(source, "model_id")
    if is_mlflow_artifact_source(source):
        if run_id and is_uri_within_root(source, _source_run(run_id, source).get("artifact_uri", "")):
            return
        raise invalid_source(source, "run_id")


def validate_source_model(source: str, model_id: str) -> None:
    if is_local_uri(source):
        if model_id and _within_local_root(source, logged_model_location(_source_model(model_id, source))):
            return
        raise invalid(
            f"Invalid model version source: '{local_path(source)}'. To use a local path as a model version "
            "source, the model_id request parameter has to be specified and the local path has to "
            "be contained within the artifact directory of the run specified by the model_id."
        )
    validate_no_relative_paths(source)
    parsed = urllib.parse.urlparse(source)
    if parsed.scheme == "models":
        if parsed.netloc:
            raise invalid_source(source, "model_id")
        source_model_id = _parse_version_source(source).model_id
        if source_model_id is not None:
            if model_id and source_model_id == model_id:
                return
            raise invalid_source(source, "model_id")
    if parsed.scheme == "runs":
        raise invalid_source(source, "model_id")
    if is_mlflow_artifact_source(source):
        if model_id and is_uri_within_root(source, logged_model_location(_source_model(model_id, source))):
            return
        raise invalid_source(source, "model_id")


def join_uri(root: str, path: str | None) -> str:
    if not path:
        return root
    return root.rstrip("/") + "/" + posixpath.normpath(path).lstrip("/")
