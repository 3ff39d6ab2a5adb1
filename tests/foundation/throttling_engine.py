"""A throttling DynamoDB: an HTTP proxy in front of the session's DynamoDB Local that, while ``throttling`` is on,
answers every write the way DynamoDB answers one it refuses for throughput, on the wire (so botocore's own retry
machinery sees it): a single write or a batch ``ProvisionedThroughputExceededException``, a transaction
``TransactionCanceledException`` with ``ThrottlingError`` reasons. While ``stalling`` is on, it holds those
operations without answering (a call that hangs). Everything else is forwarded unchanged."""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.parse
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems"})
_TYPE = "com.amazonaws.dynamodb.v20120810#"


def _refusal(operation: str, body: dict[str, Any]) -> dict[str, Any]:
    if operation == "TransactWriteItems":
        reasons = [{"Code": "ThrottlingError", "Message": "Throughput exceeds the current capacity of your table or index."}]
        reasons += [{"Code": "None"}] * (len(body.get("TransactItems", [])) - 1)
        return {
            "__type": _TYPE + "TransactionCanceledException",
            "Message": "Transaction cancelled, please refer cancellation reasons for specific reasons [ThrottlingError]",
            "CancellationReasons": reasons,
        }
    return {
        "__type": _TYPE + "ProvisionedThroughputExceededException",
        "message": "The level of configured provisioned throughput for the table was exceeded.",
    }


class ThrottlingEngine:
    def __init__(self, upstream: str) -> None:
        parsed = urllib.parse.urlsplit(upstream)
        self._upstream = (parsed.hostname or "127.0.0.1", parsed.port or 80)
        self.throttling = False
        self.stalling = False
        self.stalled: Counter[str] = Counter()
        self.operations = WRITES  # the writes refused while throttling
        self.refused: Counter[str] = Counter()
        engine = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *_: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                operation = (self.headers.get("X-Amz-Target") or "").rpartition(".")[2]
                if engine.stalling and operation in engine.operations:
                    engine.stalled[operation] += 1
                    while engine.stalling:
                        time.sleep(0.1)
                    self.close_connection = True
                    return
                if engine.throttling and operation in engine.operations:
                    engine.refused[operation] += 1
                    self._answer(
                        400, {"Content-Type": "application/x-amz-json-1.0"}, json.dumps(_refusal(operation, json.loads(raw))).encode()
                    )
                    return
                status, headers, body = engine.forward(self.command, self.path, dict(self.headers), raw)
                self._answer(status, headers, body)

            def _answer(self, status: int, headers: dict[str, str], body: bytes) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def forward(self, method: str, path: str, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection(*self._upstream, timeout=120)
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            connection.close()

    def start(self) -> ThrottlingEngine:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
