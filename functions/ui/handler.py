"""UI feature: ``/`` answers index.html, ``/static-files/<path>`` the build's files (MLflow's own routes).

Every file travels gzipped (``Content-Encoding: gzip``; browsers always accept it), which keeps the largest
bundle far below Lambda's 6 MB response cap. ``/static-files`` carries MLflow's long max-age (the bundle
names are content hashes), index.html is revalidated on every load, and both answer 304 to a current ETag.
"""

from __future__ import annotations

import base64
import gzip
from typing import Any

from aws_lambda_powertools.event_handler import Response

from serverless_mlflow.auth import browser
from serverless_mlflow.core.errors import not_found
from serverless_mlflow.http.api import Request, build_app, error_response, lambda_entry
from serverless_mlflow.http.static_files import INDEX, INDEX_CACHE_CONTROL, STATIC_CACHE_CONTROL, content_type

from . import files

# A plain (not gzipped) body is only sent to a client that refuses gzip, and only when it fits the cap as base64.
MAX_PLAIN_BYTES = 4_000_000


def index(req: Request) -> Response:
    # Under basic auth MLflow's app answers the page only with valid credentials: its 401 challenge makes the
    # browser prompt (the route has no authorizer, whose bare 401 would not), and the browser then sends them on.
    refused = browser.challenge(req)
    if refused is not None:
        return refused
    return _serve(req, INDEX, INDEX_CACHE_CONTROL)


def static_file(req: Request) -> Response:
    relative = req.path_params.get("path", "")
    if not relative or ".." in relative.split("/") or relative.startswith("/") or "\\" in relative:
        return _not_found()
    return _serve(req, relative, STATIC_CACHE_CONTROL)


def _serve(req: Request, relative: str, cache_control: str) -> Response:
    try:
        found = files.read(relative, req.headers.get("if-none-match"))
    except files.NotModified:
        return Response(status_code=304, content_type=None, body="", headers={"Cache-Control": cache_control})
    if found is None:
        return _not_found()
    headers = {"Cache-Control": cache_control, "ETag": found.etag, "Vary": "Accept-Encoding"}
    body = found.gzipped
    if "gzip" in req.headers.get("accept-encoding", "") or len(body) > MAX_PLAIN_BYTES:
        headers["Content-Encoding"] = "gzip"
    else:
        body = gzip.decompress(body)
        if len(body) > MAX_PLAIN_BYTES:
            body, headers["Content-Encoding"] = found.gzipped, "gzip"
    return _binary(content_type(relative), body, headers)


def _binary(kind: str, body: bytes, headers: dict[str, str]) -> Response:
    """A body sent as is (base64 in the Lambda response). Encoded here: Powertools would serialize a
    bytes body of a JSON content type (manifest.json) as JSON."""
    response = Response(status_code=200, content_type=kind, body=base64.b64encode(body).decode("ascii"), headers=headers)
    response.base64_encoded = True
    return response


def _not_found() -> Response:
    # MLflow's Flask app answers its HTML 404 page here; every error here is MLflow's JSON shape.
    return error_response(not_found("The requested static file was not found."))


def stage_root_redirect(event: dict[str, Any]) -> dict[str, Any] | None:
    """With a named stage the API lives at ``/<stage>/``: ``/<stage>`` must redirect there, or the page's
    relative ``static-files/...`` URLs would resolve outside the stage."""
    stage = (event.get("requestContext") or {}).get("stage", "$default")
    if stage != "$default" and event.get("rawPath") == f"/{stage}":
        return {"statusCode": 301, "headers": {"Location": f"/{stage}/"}, "body": "", "isBase64Encoded": False}
    return None


app = build_app("ui", {"index": index, "static_file": static_file})
_resolve = lambda_entry(app)


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return stage_root_redirect(event) or _resolve(event, context)
