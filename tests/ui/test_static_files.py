"""The web UI's static files: ``/`` is index.html, ``/static-files/<path>`` the wheel's build, gzipped,
with MLflow's cache headers and ETags; a named stage without its slash redirects."""

from __future__ import annotations

import gzip
import http.client
from urllib.parse import urlsplit

import pytest

from local.events import LambdaContext, api_gateway_event
from serverless_mlflow.http.static_files import STATIC_CACHE_CONTROL, compress, content_type, stage, wheel_build_dir

pytestmark = pytest.mark.e2e


def _get(server: str, path: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """Raw HTTP (no client-side decoding), so the test sees exactly what the browser receives."""
    url = urlsplit(server)
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    connection.request("GET", path, headers=headers or {})
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return response.status, {k.lower(): v for k, v in response.getheaders()}, body


def test_index_is_served_at_the_root(server: str) -> None:
    status, headers, body = _get(server, "/", {"Accept-Encoding": "gzip, deflate, br"})
    assert status == 200 and headers["content-encoding"] == "gzip"
    assert headers["content-type"] == "text/html; charset=utf-8" and headers["cache-control"] == "no-cache"
    assert gzip.decompress(body) == (wheel_build_dir() / "index.html").read_bytes()
    again, again_headers, _ = _get(server, "/", {"Accept-Encoding": "gzip", "If-None-Match": headers["etag"]})
    assert again == 304 and again_headers["cache-control"] == "no-cache"


def test_the_main_bundle_fits_the_lambda_cap_gzipped(server: str) -> None:
    (bundle,) = (wheel_build_dir() / "static" / "js").glob("main.*.js")
    status, headers, body = _get(server, f"/static-files/static/js/{bundle.name}", {"Accept-Encoding": "gzip"})
    assert status == 200 and headers["content-encoding"] == "gzip" and headers["cache-control"] == STATIC_CACHE_CONTROL
    assert headers["content-type"] == "application/javascript; charset=utf-8"
    assert gzip.decompress(body) == bundle.read_bytes()
    # Base64 in the Lambda response: well below 6 MB even though the plain bundle is 4.4 MB.
    assert len(body) * 4 / 3 < 3_000_000 < bundle.stat().st_size


def test_small_files_are_plain_for_clients_without_gzip_and_missing_ones_404(server: str) -> None:
    status, headers, body = _get(server, "/static-files/manifest.json")
    assert status == 200 and "content-encoding" not in headers
    assert body == (wheel_build_dir() / "manifest.json").read_bytes()
    for missing in ("/static-files/nope.js", "/static-files/../index.html", "/static-files/static/%2e%2e/%2e%2e/x"):
        assert _get(server, missing)[0] == 404, missing


def test_named_stage_without_slash_redirects() -> None:
    from ui.handler import lambda_handler

    event = api_gateway_event("GET", "/prod", "", {}, b"", "GET /", {}, "x")
    event["requestContext"]["stage"] = "prod"
    response = lambda_handler(event, LambdaContext("ui"))
    assert response["statusCode"] == 301 and response["headers"]["Location"] == "/prod/"


def test_staging_is_deterministic(tmp_path) -> None:
    build = tmp_path / "build"
    (build / "static").mkdir(parents=True)
    (build / "index.html").write_text("<html></html>")
    (build / "static" / "a.css").write_text("body{}")
    first, second = stage(build, tmp_path / "one"), stage(build, tmp_path / "two")
    assert (first / "static" / "a.css").read_bytes() == (second / "static" / "a.css").read_bytes() == compress(b"body{}")
    assert gzip.decompress((first / "index.html").read_bytes()) == b"<html></html>"
    assert content_type("x/a.css") == "text/css; charset=utf-8" and content_type("f.woff2") == "font/woff2"
