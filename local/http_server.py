"""The HTTP front of the local runtime: what API Gateway does before and after the function runs."""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from local.events import mlflow_error

log = logging.getLogger("serverless_mlflow.local")
# One line per request, as ``mlflow server`` prints them (client, request line, status) plus the time taken;
# ``python -m local`` sends it to stdout (``ACCESS_LOG=false`` turns it off), elsewhere it stays silent.
access_log = logging.getLogger("serverless_mlflow.local.access")

# Invoke = (method, raw path, query, headers, body) -> the function's (API Gateway v2) response.
Invoke = Callable[[str, str, str, dict[str, str], bytes], dict[str, Any]]
LOCAL_FAILURE = mlflow_error(500, "local runtime failure")


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
                return self._respond(mlflow_error(400, "Bad Request: the Content-Length header is not a length."))
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
            if response.get("stream") is not None:
                return self._respond_streaming(response)
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

        def _respond_streaming(self, response: dict[str, Any]) -> int:
            """A function URL in RESPONSE_STREAM mode: the body leaves chunk by chunk as it is produced."""
            status = int(response.get("statusCode", 200))
            self.send_response(status)
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
            return status

        def __getattr__(self, name: str) -> Any:
            # Every method reaches the route table (an unknown one on a known path is a 405 there), not
            # http.server's 501 page.
            if name.startswith("do_"):
                return self._handle
            raise AttributeError(name)

        def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
            """http.server's own refusals (a request line over 64 KB: 414, too many headers: 431, a malformed
            request: 400) in MLflow's JSON error shape instead of its HTML page."""
            text = " ".join(part for part in (message or self.responses.get(code, ("Error",))[0], explain) if part)
            self.close_connection = True
            if not str(getattr(self, "request_version", "")).startswith("HTTP/1."):
                self.request_version = "HTTP/1.1"  # an unreadable request line: still answer with a status line
            self._respond(mlflow_error(code, text))

        def log_request(self, code: int | str = "-", size: int | str = "-") -> None:
            pass  # the access line is written once the response is sent, with its time (``_handle``)

        def log_message(self, format: str, *args: Any) -> None:
            log.info("%s %s", self.address_string(), format % args)

    return Handler
