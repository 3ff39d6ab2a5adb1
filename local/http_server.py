"""The HTTP front of the local runtime: what API Gateway does before and after the function runs."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("serverless_mlflow.local")
# One line per request, as ``mlflow server`` prints them (client, request line, status) plus the time taken;
# ``python -m local`` sends it to stdout (``ACCESS_LOG=false`` turns it off), elsewhere it stays silent.
access_log = logging.getLogger("serverless_mlflow.local.access")

# Invoke = (method, raw path, query, headers, body) -> the function's (API Gateway v2) response.
Invoke = Callable[[str, str, str, dict[str, str], bytes], dict[str, Any]]
LOCAL_FAILURE = {
    "statusCode": 500,
    "headers": {"content-type": "application/json"},
    "body": json.dumps({"error_code": "INTERNAL_ERROR", "message": "local runtime failure"}),
}


def serve(host: str, port: int, invoke: Invoke) -> ThreadingHTTPServer:
    server = ThreadingHTTPServer((host, port), _request_handler(invoke))
    server.daemon_threads = True
    return server


def _request_handler(invoke: Invoke) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # Small writes go out at once: with Nagle's algorithm on, each response waits for the client's delayed
        # ACK (40 ms on Linux) before its body leaves, which made every local request ~40 ms slower.
        disable_nagle_algorithm = True

        def _handle(self) -> None:
            started = time.perf_counter()
            status = self._answer()
            if access_log.isEnabledFor(logging.INFO):
                client = f"{self.client_address[0]}:{self.client_address[1]}"
                elapsed_ms = (time.perf_counter() - started) * 1000
                access_log.info('%s - "%s %s %s" %d %.0f ms', client, self.command, self.path, self.request_version, status, elapsed_ms)

        def _answer(self) -> int:
            """Read the request, invoke, write the response; returns the status sent."""
            split = urlsplit(self.path)
            length = self._content_length()
            if length is None:
                self.close_connection = True
                return self._respond(
                    {"statusCode": 400, "headers": {"content-type": "application/json"}, "body": '{"message":"Bad Request"}'}
                )
            body = self.rfile.read(length) if length else b""
            headers: dict[str, str] = {}
            for key, value in self.headers.items():
                headers[key.lower()] = f"{headers[key.lower()]},{value}" if key.lower() in headers else value
            try:
                response = invoke(self.command, split.path, split.query, headers, body)
            except Exception:
                log.exception("local invocation failed")
                response = LOCAL_FAILURE
            return self._respond(response)

        def _content_length(self) -> int | None:
            """The declared body length; None for a value API Gateway would reject (negative, not a number)."""
            raw = self.headers.get("content-length")
            if raw is None:
                return 0
            try:
                length = int(raw)
            except ValueError:
                return None
            return length if length >= 0 else None

        def _respond(self, response: dict[str, Any]) -> int:
            raw = response.get("body") or ""
            payload = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
            status = int(response.get("statusCode", 200))
            self.send_response(status)
            for key, value in (response.get("headers") or {}).items():
                self.send_header(key, str(value))
            for cookie in response.get("cookies") or []:
                self.send_header("set-cookie", cookie)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)
            return status

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass  # the access line is written once the response is sent, with its time (``_handle``)

        def log_message(self, format: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), format % args)

    return Handler
