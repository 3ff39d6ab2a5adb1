"""The HTTP front of the local runtime: what API Gateway does before and after the function runs."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("serverless_mlflow.local")

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
            split = urlsplit(self.path)
            length = self._content_length()
            if length is None:
                self._respond({"statusCode": 400, "headers": {"content-type": "application/json"}, "body": '{"message":"Bad Request"}'})
                self.close_connection = True
                return
            body = self.rfile.read(length) if length else b""
            headers: dict[str, str] = {}
            for key, value in self.headers.items():
                headers[key.lower()] = f"{headers[key.lower()]},{value}" if key.lower() in headers else value
            try:
                response = invoke(self.command, split.path, split.query, headers, body)
            except Exception:
                log.exception("local invocation failed")
                response = LOCAL_FAILURE
            self._respond(response)

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

        def _respond(self, response: dict[str, Any]) -> None:
            if response.get("stream") is not None:
                self._respond_streaming(response)
                return
            raw = response.get("body") or ""
            payload = base64.b64decode(raw) if response.get("isBase64Encoded") else raw.encode("utf-8")
            self.send_response(int(response.get("statusCode", 200)))
            for key, value in (response.get("headers") or {}).items():
                self.send_header(key, str(value))
            for cookie in response.get("cookies") or []:
                self.send_header("set-cookie", cookie)
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(payload)

        def _respond_streaming(self, response: dict[str, Any]) -> None:
            """A function URL in RESPONSE_STREAM mode: the body leaves chunk by chunk as it is produced."""
            self.send_response(int(response.get("statusCode", 200)))
            for key, value in (response.get("headers") or {}).items():
                self.send_header(key, str(value))
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for chunk in response["stream"]:
                if chunk:
                    self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

        def log_message(self, format: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), format % args)

    return Handler
