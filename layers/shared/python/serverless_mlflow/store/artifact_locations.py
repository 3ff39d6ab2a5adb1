"""Where artifacts of experiments, runs, logged models and traces live.

An experiment created without an explicit location gets ``mlflow-artifacts:/<id>``; the client then
talks to the artifact routes, and the server maps the path after the scheme onto the stack's bucket:
``mlflow-artifacts:/<path>`` is ``s3://$BUCKET_NAME/$ARTIFACTS_PREFIX/<path>`` (prefix ``mlartifacts``,
the directory name ``mlflow server`` uses, so the bucket can hold other data beside it). Experiments
created with an explicit ``s3://...`` location keep it: the client then uses S3 directly.
"""

from __future__ import annotations

import os
import re
from urllib.parse import unquote

from serverless_mlflow.core.errors import invalid

SCHEME = "mlflow-artifacts"
DEFAULT_PREFIX = "mlartifacts"
# S3 object keys are at most 1024 bytes of UTF-8.
MAX_KEY_BYTES = 1024
# MLflow decodes a path until it stops changing, at most this many rounds (utils/uri._decode).
_MAX_DECODE_ROUNDS = 10
_DRIVE = re.compile(r"^[A-Za-z]:")


def default_experiment_artifact_location(experiment_id: str) -> str:
    """``mlflow-artifacts:/<id>``: the client then talks to our artifact routes (presigned S3)."""
    root = os.environ.get("DEFAULT_ARTIFACT_ROOT", f"{SCHEME}:/").rstrip("/")
    return f"{root}/{experiment_id}"


def artifacts_prefix() -> str:
    return os.environ.get("ARTIFACTS_PREFIX", DEFAULT_PREFIX).strip("/")


def artifacts_root_uri() -> str:
    """``s3://$BUCKET_NAME/$ARTIFACTS_PREFIX``: the ``mlflow-artifacts:/`` root as an S3 URI (e.g. trace archival's
    default location). Composing it needs the bucket's name only, not access to the bucket (``storage.s3``)."""
    return f"s3://{os.environ['BUCKET_NAME']}/{artifacts_prefix()}".rstrip("/")


def artifact_key(relative_path: str) -> str:
    """The S3 key of a (validated, normalised) path relative to the ``mlflow-artifacts:/`` root."""
    prefix = artifacts_prefix()
    key = f"{prefix}/{relative_path}" if prefix else relative_path
    if len(key.encode("utf-8")) > MAX_KEY_BYTES:
        raise invalid(f"Artifact path is too long: S3 keys are limited to {MAX_KEY_BYTES} bytes.")
    return key


def relative_path(uri: str | None) -> str | None:
    """The path of an ``mlflow-artifacts:`` URI relative to the root (``mlflow-artifacts:/1/r/artifacts``
    -> ``1/r/artifacts``); None for any other scheme (``s3://``: direct mode, not served by us)."""
    if not uri or not uri.startswith(f"{SCHEME}:"):
        return None
    rest = uri[len(SCHEME) + 1 :]
    if rest.startswith("//"):  # mlflow-artifacts://host:port/path names a server, then the path
        rest = rest[2:].partition("/")[2]
    return "/".join(segment for segment in rest.split("/") if segment not in ("", "."))


def _decode(path: str) -> str:
    """The path as MLflow's ``validate_path_is_safe`` returns it: percent-decoded until stable."""
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(path)
        if decoded == path:
            return path
        path = decoded
    raise invalid("Invalid path")


decoded_path = _decode


def safe_relative_path(path: str | None) -> str:
    """MLflow's ``validate_path_is_safe`` for a key below the artifact root, a little stricter.

    The path is percent-decoded until stable (so ``%2e%2e`` and ``%252e%252e`` are ``..``), then rejected
    with 400 "Invalid path" when it has a ``..`` segment, is absolute (``/x``, ``C:/x``, ``file:``), or holds
    ``#``, a backslash or a control character (MLflow escapes control characters; S3 keys with them are
    unusable, so they are refused). Empty and ``.`` segments are dropped, so one object has one path and
    prefix checks (the deleted-run guard) cannot be side-stepped with ``1/./<run>``.
    """
    decoded = _decode(path or "")
    if (
        "#" in decoded
        or "\\" in decoded
        or any(ord(char) < 32 or ord(char) == 127 for char in decoded)
        or decoded.startswith("/")
        or _DRIVE.match(decoded)
        or decoded.lower().startswith("file:")
        or ".." in decoded.split("/")
    ):
        raise invalid("Invalid path")
    return "/".join(segment for segment in decoded.split("/") if segment not in ("", "."))


def append_to_uri_path(uri: str, *paths: str) -> str:
    """MLflow's ``utils/uri.append_to_uri_path``: run and logged-model artifact URIs under a location.

    ``s3://b/x?q=1`` + ``r``, ``artifacts`` -> ``s3://b/x/r/artifacts?q=1``; ``mlflow-artifacts:/1`` keeps
    its one-slash form; a plain path is joined as a POSIX path.
    """
    import posixpath
    import urllib.parse

    def join(prefix: str, suffix: str) -> str:
        if not prefix:
            return suffix
        return posixpath.join(prefix, suffix.lstrip(posixpath.sep))

    path = ""
    for subpath in paths:
        path = join(path, subpath)
    parsed = urllib.parse.urlparse(uri)
    if ".." in urllib.parse.unquote(parsed.query).split("/"):
        raise invalid("Invalid query string")
    if not parsed.scheme:
        return join(uri, path)
    prefix = ""
    if not parsed.path.startswith("/"):
        # urlunparse would turn "scheme:rel" into "scheme:///rel"; keep the original form.
        prefix = parsed.scheme + ":"
        parsed = parsed._replace(scheme="")
    return prefix + urllib.parse.urlunparse(parsed._replace(path=join(parsed.path, path)))
