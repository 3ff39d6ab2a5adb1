"""The ``/api/2.0/mlflow-artifacts/*`` routes: the client moves artifact bytes straight to and from S3.

Uploads: ``mpu/create`` answers presigned UploadPart URLs, the client PUTs the parts to S3, then
``mpu/complete`` (or ``mpu/abort``). Downloads: ``presigned/<path>`` answers a presigned GET URL and the
size. ``GET artifacts/<path>`` (the client's proxied download, used only when multipart downloads are
off) redirects to the same URL, so no artifact byte passes through the function there either. The one
exception is ``PUT artifacts/<path>``: the 3.17 client PUTs files smaller than
MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE, so small bodies are accepted and larger ones refused with the fix.
"""

from __future__ import annotations

import gzip
from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.http.api import JSON_CONTENT_TYPE, Request, build_app, dumps, lambda_entry
from serverless_mlflow.store import artifact_listing

from . import browse, presigned_urls, storage, ui_upload
from .messages import MESSAGES

# A Lambda response is capped at 6 MB; a gzipped body travels base64-encoded (4/3 larger).
MAX_PLAIN_RESPONSE = 5_500_000
MAX_GZIP_RESPONSE = 4_000_000


def _sized_json(body: dict[str, Any], req: Request) -> Response:
    """JSON that fits the Lambda response cap: gzip when large (listings of huge directories, many part
    URLs) and the client accepts it (requests always does), else a clear error rather than a 502."""
    text = dumps(body)
    if len(text) <= MAX_PLAIN_RESPONSE:
        return Response(status_code=200, content_type=JSON_CONTENT_TYPE, body=text)
    if "gzip" in req.headers.get("accept-encoding", "") and len(gzip.compress(text.encode("utf-8"), 6)) <= MAX_GZIP_RESPONSE:
        # Powertools compresses (and base64-encodes) the body itself when the client accepts gzip.
        return Response(status_code=200, content_type=JSON_CONTENT_TYPE, body=text, compress=True)
    raise invalid("The response would exceed the 6 MB AWS Lambda limit: list a subdirectory, or upload in fewer parts.")


def _path(req: Request) -> str:
    return req.path_params.get("path", "")


def list_artifacts(req: Request) -> Response:
    message = req.message(MESSAGES["list_artifacts"])
    files = artifact_listing.list_directory(message.get("path"))
    # proto3 JSON leaves out an empty repeated field: an empty directory answers {} as MLflow does.
    return _sized_json({"files": files} if files else {}, req)


def list_run_artifacts(req: Request) -> Response:
    message = req.message(MESSAGES["list_run_artifacts"])
    return _sized_json(artifact_listing.list_run_artifacts(message["run_id"], message.get("path")), req)


def list_logged_model_artifacts(req: Request) -> Response:
    message = req.message(MESSAGES["list_logged_model_artifacts"])
    listing = artifact_listing.list_logged_model_artifacts(req.path_params.get("model_id", ""), message.get("artifact_directory_path"))
    return _sized_json(listing, req)


def download_artifact(req: Request) -> Response:
    return Response(status_code=302, content_type=None, body="", headers={"Location": storage.download_url(_path(req))})


def upload_artifact(req: Request) -> dict[str, Any]:
    storage.upload_small(_path(req), req.raw_body, req.headers.get("content-type"))
    return {}


def delete_artifact(req: Request) -> dict[str, Any]:
    storage.delete_artifacts(_path(req))
    return {}


def create_multipart_upload(req: Request) -> Response:
    message = req.message(MESSAGES["create_multipart_upload"])
    created = storage.create_multipart_upload(_path(req), message["path"], message.get("num_parts", 0))
    return _sized_json(created, req)


def complete_multipart_upload(req: Request) -> dict[str, Any]:
    message = req.message(MESSAGES["complete_multipart_upload"])
    storage.complete_multipart_upload(_path(req), message["path"], message.get("upload_id", ""), message.get("parts", []))
    return {}


def abort_multipart_upload(req: Request) -> dict[str, Any]:
    message = req.message(MESSAGES["abort_multipart_upload"])
    storage.abort_multipart_upload(_path(req), message["path"], message.get("upload_id", ""))
    return {}


def presigned_download(req: Request) -> dict[str, Any]:
    return storage.presigned_download(_path(req))


# --- the web UI's artifact browser ---------------------------------------------------------------


def _redirect(url: str) -> Response:
    return Response(status_code=302, content_type=None, body="", headers={"Location": url})


def _query(req: Request, name: str) -> str | None:
    values = req.query.get(name)
    return values[0] if values else None


def _required_query(req: Request, name: str) -> str:
    value = _query(req, name)
    if value is None:
        raise invalid(f"Missing value for required parameter '{name}'.")
    return value


def _file(req: Request, path: str, presigned_json: bool = False) -> Response:
    """A redirect to the file's viewer URL; with ``presigned=true`` where MLflow honours it, the presigned URL as JSON."""
    if presigned_json and _query(req, "presigned") == "true":
        return _sized_json(storage.presigned_download(path), req)
    return _redirect(storage.viewer_url(path))


def get_run_artifact(req: Request) -> Response:
    run_id = _query(req, "run_id") or _query(req, "run_uuid") or ""
    return _file(req, browse.run_artifact_path(run_id, _required_query(req, "path")))


def get_model_version_artifact(req: Request) -> Response:
    path = browse.model_version_artifact_path(_query(req, "name") or "", _query(req, "version") or "", _required_query(req, "path"))
    return _file(req, path, presigned_json=True)


def get_logged_model_artifact(req: Request) -> Response:
    path = _query(req, "artifact_file_path")
    if not path:
        raise MlflowError('Request must include the "artifact_file_path" query parameter.', "BAD_REQUEST")
    return _file(req, browse.logged_model_artifact_path(req.path_params.get("model_id", ""), path), presigned_json=True)


def upload_run_artifact(req: Request) -> Response:
    length = req.headers.get("content-length", "")
    ui_upload.upload_run_artifact(
        _query(req, "run_uuid"),
        _query(req, "path"),
        int(length) if length.isdigit() else None,
        req.raw_body,
        req.headers.get("content-type"),
    )
    # MLflow answers an empty 200 (no JSON body) with a JSON content type.
    return Response(status_code=200, content_type=JSON_CONTENT_TYPE, body="")


def create_presigned_upload_url(req: Request) -> dict[str, Any]:
    message = req.message(MESSAGES["create_presigned_upload_url"])
    raise presigned_urls.upload_url(message.get("run_id", ""), message.get("model_id", ""), message.get("path", ""))


def create_presigned_download_url(req: Request) -> dict[str, Any]:
    message = req.message(MESSAGES["create_presigned_download_url"])
    raise presigned_urls.download_url(message["run_id"], message["path"], message.get("expiration"))


app = build_app(
    "artifacts",
    {
        "list_artifacts": list_artifacts,
        "list_run_artifacts": list_run_artifacts,
        "list_logged_model_artifacts": list_logged_model_artifacts,
        "download_artifact": download_artifact,
        "upload_artifact": upload_artifact,
        "delete_artifact": delete_artifact,
        "create_multipart_upload": create_multipart_upload,
        "complete_multipart_upload": complete_multipart_upload,
        "abort_multipart_upload": abort_multipart_upload,
        "presigned_download": presigned_download,
        "get_run_artifact": get_run_artifact,
        "upload_run_artifact": upload_run_artifact,
        "create_presigned_upload_url": create_presigned_upload_url,
        "create_presigned_download_url": create_presigned_download_url,
        "get_model_version_artifact": get_model_version_artifact,
        "get_logged_model_artifact": get_logged_model_artifact,
    },
)
lambda_handler = lambda_entry(app)
