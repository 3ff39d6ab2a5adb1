"""The gateway runtime's request table: one greedy ``invoke`` route whose body is MLflow's gateway JSON (the
endpoint in ``model`` or the path, chat ``messages`` or embeddings ``input``). The runtime reads bodies as MLflow's
pydantic models do (``payloads.py``) and answers FastAPI's ``{"detail": ...}``; this table declares the fields for
the request fuzz suite."""

from __future__ import annotations

from serverless_mlflow.request import Message

MESSAGES: dict[str, Message] = {
    "invoke": Message({"model": "string", "messages": "[message]", "input": "string", "stream": "bool", "max_tokens": "int32"}),
}
