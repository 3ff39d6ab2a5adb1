"""A local mock LLM provider: OpenAI-compatible, Anthropic and Gemini shapes, streaming and not.

Tests and benchmarks point gateway model definitions at it (``api_base`` = ``<url>/v1``) so that no call
leaves the machine. Answers are deterministic: the reply to a chat is ``"mock reply: <last user text>"``,
with token counts derived from the words in and out. A prompt containing a marker steers it:

* ``FAIL<status>`` (e.g. ``FAIL429``, ``FAIL500``): the provider answers that status with its error shape;
* ``SLEEP<seconds>``: the provider waits before answering (timeouts);
* ``PACE<ms>``: a streamed answer waits that long between chunks;
* ``/model/<id>/converse``: Amazon Bedrock's Converse API (what boto3's bedrock-runtime client calls when
  pointed here), for the gateway's Bedrock provider;
* ``JUDGE``: a judge-style JSON answer (``{"result": "yes", "rationale": ...}``), what MLflow's judges parse;
  with ``VIOLATION`` too, the judge answers ``"no"`` (a guardrail that blocks);
* a gateway guardrail's sanitization prompt: the payload it carries, ``VIOLATION`` replaced by ``[REDACTED]``.

A test scripts further answers with ``MockLLM.script(marker, reply)``: a request whose messages (system ones too)
contain ``marker`` gets ``reply`` (a string, or a function of the last user text), checked before the markers above. MLflow's optimizers and issue discovery
send prompts of their own that only the test knows how to answer.

The answers' shapes per provider API are in ``tools/mock_llm_shapes.py``.

``python -m tools.mock_llm [port]`` serves it on its own (default 5127).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tools import mock_llm_shapes as shapes
from tools.mock_llm_shapes import CREATED

_FAIL = re.compile(r"FAIL(\d{3})")
_SLEEP = re.compile(r"SLEEP(\d+(?:\.\d+)?)")
_PACE = re.compile(r"PACE(\d+)")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(_text_of(part.get("text", "") if isinstance(part, dict) else part) for part in content)
    return ""


def _last_user_text(body: dict[str, Any]) -> str:
    messages = body.get("messages") or []
    for message in reversed(messages):
        if message.get("role") == "user":
            return _text_of(message.get("content"))
    if "input" in body:  # OpenAI responses API
        return _text_of(body["input"]) if not isinstance(body["input"], str) else body["input"]
    contents = body.get("contents") or []  # Gemini
    for content in reversed(contents):
        return " ".join(part.get("text", "") for part in content.get("parts", []))
    return json.dumps(body)[:200]


def _all_text(body: dict[str, Any]) -> str:
    """Every message's text (system prompts included: MLflow's pipelines put their instructions there)."""
    parts = [_text_of(message.get("content")) for message in body.get("messages") or [] if isinstance(message, dict)]
    parts.append(_text_of(body.get("system")))  # Anthropic
    parts.append(_last_user_text(body))
    return "\n".join(parts)


def reply_for(prompt: str) -> str:
    if "You are a content sanitizer" in prompt and "Input payload:" in prompt:
        payload = prompt.split("Input payload:", 1)[1].strip()
        return payload.replace("VIOLATION", "[REDACTED]")
    if "VIOLATION" in prompt and ("JUDGE" in prompt or "rationale" in prompt.lower()):
        return json.dumps({"result": "no", "rationale": "The mock judge found a VIOLATION marker."})
    if "JUDGE" in prompt or "rationale" in prompt.lower():
        return json.dumps({"result": "yes", "rationale": "The mock judge finds the answer acceptable."})
    return f"mock reply: {prompt[-200:]}"


class MockLLM:
    """The mock provider on 127.0.0.1; ``requests`` lists every request it received (path, body)."""

    def __init__(self, port: int = 0) -> None:
        self.requests: list[tuple[str, dict[str, Any], dict[str, str]]] = []
        self._rules: list[tuple[str, Callable[[str], str]]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._server.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def script(self, marker: str, reply: str | Callable[[str], str]) -> MockLLM:
        """Answer prompts containing ``marker`` with ``reply`` (first matching rule wins, in the order added)."""
        self._rules.append((marker, reply if callable(reply) else lambda _prompt, text=reply: text))
        return self

    def reply(self, prompt: str, body: dict[str, Any] | None = None) -> str:
        every = _all_text(body) if body is not None else prompt
        for marker, answer in list(self._rules):
            if marker in every:
                return answer(prompt)
        return reply_for(prompt)

    def start(self) -> MockLLM:
        threading.Thread(target=self._server.serve_forever, daemon=True, name="mock-llm").start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def _handler(mock: MockLLM) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                self._json(
                    200, {"object": "list", "data": [{"id": "mock-model", "object": "model", "created": CREATED, "owned_by": "mock"}]}
                )
            else:
                self._json(404, {"error": {"message": "not found", "type": "invalid_request_error"}})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            mock.requests.append((self.path, body, {k.lower(): v for k, v in self.headers.items()}))
            try:
                self._post(body)
            except (AttributeError, TypeError, KeyError, IndexError, ValueError) as error:
                # A provider refuses a body of the wrong shape (the request fuzz sends them): 400, never a dropped
                # connection the gateway would have to answer as an upstream failure.
                self._json(400, {"error": {"message": f"mock: cannot read the request ({error})", "type": "invalid_request_error"}})

        def _post(self, body: Any) -> None:
            if not isinstance(body, dict):
                raise TypeError("the body is not a JSON object")
            prompt = _last_user_text(body)
            if (sleep := _SLEEP.search(prompt)) is not None:
                time.sleep(float(sleep.group(1)))
            if (fail := _FAIL.search(prompt)) is not None:
                status = int(fail.group(1))
                if "/messages" in self.path:
                    self._json(status, {"type": "error", "error": {"type": "api_error", "message": f"mock failure {status}"}})
                else:
                    self._json(status, {"error": {"message": f"mock failure {status}", "type": "api_error", "code": str(status)}})
                return
            path = self.path.split("?")[0]
            pace = _PACE.search(prompt)
            self.pace = int(pace.group(1)) / 1000 if pace else 0.005
            if path.endswith("/converse"):
                converse_prompt = shapes.converse_prompt(body)
                self._answer(shapes.bedrock_converse(converse_prompt, mock.reply(converse_prompt)))
                return
            reply = mock.reply(prompt, body)
            if path.endswith("/chat/completions"):
                self._answer(shapes.openai_chat(body, prompt, reply))
            elif path.endswith("/embeddings"):
                self._answer(shapes.embeddings(body))
            elif path.endswith("/responses"):
                self._answer(shapes.responses(body, prompt, reply))
            elif path.endswith("/messages"):
                self._answer(shapes.anthropic(body, prompt, reply))
            elif path.endswith(":generateContent") or path.endswith(":streamGenerateContent"):
                self._answer(shapes.gemini(path.endswith(":streamGenerateContent"), prompt, reply))
            else:
                self._json(404, {"error": {"message": f"unknown path {path}", "type": "invalid_request_error"}})

        # --- transport -------------------------------------------------------------------------------
        def _answer(self, answer: shapes.Answer) -> None:
            """A provider's answer (``mock_llm_shapes``): a 200 JSON body, or a stream of events."""
            if isinstance(answer, list):
                self._sse(answer)
            else:
                self._json(200, answer)

        def _json(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _sse(self, events: list[str]) -> None:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            for event in events:
                data = event.encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                time.sleep(self.pace)  # a real provider's pace: chunks arrive one by one
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    return Handler


if __name__ == "__main__":
    server = MockLLM(int(sys.argv[1]) if len(sys.argv) > 1 else 5127).start()
    print(f"mock LLM provider on {server.url}", flush=True)
    threading.Event().wait()
