"""The runtime's streaming front: an HTTP server for the Lambda Web Adapter (the function URL, RESPONSE_STREAM).

Lambda streams responses natively only on its Node.js runtimes; a Python function streams through the Lambda
Web Adapter layer: the function's handler is ``run.sh`` beside this file, which the adapter's ``/opt/bootstrap``
runs in place of the Python runtime; it starts this server on ``AWS_LWA_PORT`` (8080) and the adapter relays
each function URL request to it once ``READINESS_PATH`` answers, passing the response on as it is written. A
streamed answer goes out chunk by chunk with chunked transfer encoding. The local runtime serves ``/gateway/...`` with ``handler.serve`` too, so streaming is the
same on a laptop. Requests are authorized before they get here: IAM (SigV4) on the function URL, or in basic
mode the same credential check as the API's authorizer, made by the function itself (``access.py``).
"""

from __future__ import annotations

import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from . import calls
from .answers import Answer, Call
from .handler import serve

# The adapter's readiness check (``AWS_LWA_READINESS_CHECK_PATH``): answered here without a table read, as
# MLflow's ``/health``. ``infra`` sets the adapter's variables from these two.
READINESS_PATH = "/health"
DEFAULT_PORT = 8080
# HTTP API's answer to a request no route matches: the function URL serves only what the API routes here.
_NOT_FOUND = Answer(status=404, body=b'{"message":"Not Found"}')
_HEALTHY = Answer(status=200, body=b"OK", headers={"content-type": "text/plain; charset=utf-8"})


def write_answer(handler: BaseHTTPRequestHandler, answer: Answer) -> None:
    """Send an answer on a request handler: a body with its length, or a stream with chunked encoding."""
    handler.send_response(answer.status)
    for key, value in answer.headers.items():
        handler.send_header(key, value)
    if answer.stream is None:
        handler.send_header("content-length", str(len(answer.body)))
        handler.end_headers()
        if handler.command != "HEAD":
            handler.wfile.write(answer.body)
        return
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    for chunk in answer.stream:
        if chunk:
            handler.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            handler.wfile.flush()
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def call_from_request(handler: BaseHTTPRequestHandler, body: bytes) -> Call:
    """A request as the function URL passes it (no authorizer: in basic mode ``access`` checks credentials)."""
    split = urlsplit(handler.path)
    path = split.path
    return Call(
        method=handler.command,
        path=path[len(calls.GATEWAY_PREFIX) :] if path.startswith(calls.GATEWAY_PREFIX) else path,
        query=split.query,
        headers={k.lower(): v for k, v in handler.headers.items()},
        body=body,
    )


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        path = urlsplit(self.path).path
        if self.command == "GET" and path == READINESS_PATH:
            write_answer(self, _HEALTHY)
        elif self.command in ("GET", "POST") and path.startswith(f"{calls.GATEWAY_PREFIX}/"):
            # The API's routes to the runtime: GET and POST /gateway/{path+}.
            write_answer(self, serve(call_from_request(self, body)))
        else:
            write_answer(self, _NOT_FOUND)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = _handle

    def log_message(self, format: str, *args: Any) -> None:
        pass


def main() -> None:
    # The adapter connects to 127.0.0.1 on AWS_LWA_PORT (its own fallback is PORT, then 8080).
    port = int(os.environ.get("AWS_LWA_PORT") or os.environ.get("PORT") or DEFAULT_PORT)
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


if __name__ == "__main__":
    main()
