"""The gateway's invocation routes (MLflow's ``mlflow/server/gateway_api.py``), independent of the transport.

``answer`` takes a request and returns an ``Answer``: a status, headers and either a body or an iterator of
bytes (a stream). The HTTP API handler buffers a stream into one body; the function URL's server
(``stream_server.py``) writes it out as it comes. Each route checks, resolves and fails in MLflow's order
(``flows.py`` runs the call itself).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from serverless_mlflow.core.errors import MlflowError
from serverless_mlflow.llm_gateway import providers as p
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError
from serverless_mlflow.request import workspace as request_workspace

from . import access, flows, payloads
from .answers import GEMINI, INVOCATIONS, PROXY, Answer, Call, detail, json_answer

__all__ = ["GATEWAY_PREFIX", "Answer", "Call", "answer"]

GATEWAY_PREFIX = "/gateway"
_PASSTHROUGH = {
    "/openai/v1/chat/completions": p.OPENAI_CHAT,
    "/openai/v1/embeddings": p.OPENAI_EMBEDDINGS,
    "/openai/v1/responses": p.OPENAI_RESPONSES,
    "/openai/v1/responses/compact": p.OPENAI_RESPONSES_COMPACT,
    "/anthropic/v1/messages": p.ANTHROPIC_MESSAGES,
    "/typesafe/v1/systemone": p.TYPESAFE_SYSTEM_ONE,
}


def answer(call: Call) -> Answer:
    try:
        workspace = _workspace(call)
        with request_workspace.bound(workspace):
            if refusal := access.refusal(call):
                return refusal
            result = _route(call)
        if result.stream is not None:
            result.stream = _bound_stream(result.stream, workspace)
        return result
    except GatewayHTTPError as error:
        return detail(error.status, error.detail)
    except MlflowError as error:
        # MLflow's translate_http_exception: an MlflowException becomes {"detail": {error_code, message}}.
        return detail(error.http_status, {"error_code": error.error_code, "message": error.message})


def _workspace(call: Call) -> str:
    """The workspace the call names (``X-MLFLOW-WORKSPACE``) when workspaces are enabled, else ``default``."""
    if not request_workspace.enabled():
        return request_workspace.DEFAULT_WORKSPACE
    from serverless_mlflow.store import workspaces  # only with workspaces enabled: not at every cold start

    return workspaces.resolve(call.headers.get(request_workspace.HEADER))


def _bound_stream(chunks: Iterator[bytes], workspace: str) -> Iterator[bytes]:
    """A streamed answer's chunks are produced after ``answer`` returns, by whoever writes them out (the function
    URL's server, or the API handler buffering them); its spend and usage trace are recorded as the last chunk is
    produced. Each step runs bound to the call's workspace, so they are recorded there, not in ``default``. The
    binding is set and reset around each step in the consumer's own frame (a context variable set across a
    generator's ``yield`` would leak into, and be reset from, whatever context resumes it)."""
    try:
        while True:
            with request_workspace.bound(workspace):
                try:
                    chunk = next(chunks)
                except StopIteration:
                    return
            yield chunk
    finally:
        close = getattr(chunks, "close", None)
        if close is not None:  # an abandoned stream (client gone) finishes its trace in its workspace too
            with request_workspace.bound(workspace):
                close()


def _route(call: Call) -> Answer:
    path = call.path
    if call.method == "GET" and path == "/mlflow/v1/models":
        return json_answer(200, {"object": "list", "data": [_model(name, created) for name, created in access.usable_endpoints(call)]})
    if call.method != "POST":
        return detail(405, "Method Not Allowed")
    if path == "/mlflow/v1/chat/completions":
        body = payloads.body(call.body)
        return flows.chat_completions(call, payloads.pop_model(body), body)
    if match := INVOCATIONS.match(path):
        return flows.invocations(call, match["endpoint"], payloads.body(call.body))
    if path in _PASSTHROUGH:
        return flows.passthrough(call, _PASSTHROUGH[path], payloads.body(call.body))
    if match := GEMINI.match(path):
        action = p.GEMINI_GENERATE if match["action"] == "generateContent" else p.GEMINI_STREAM
        return flows.gemini(call, match["endpoint"], action, payloads.body(call.body))
    if match := PROXY.match(path):
        return flows.proxy(call, match["endpoint"], match["path"] + (f"?{call.query}" if call.query else ""), payloads.body(call.body))
    return detail(404, "Not Found")


def _model(name: str, created: int) -> dict[str, Any]:
    return {"id": name, "object": "model", "created": created // 1000, "owned_by": "mlflow"}
