"""Request messages of the web UI routes: the page and the build's files take no fields (declared for the
request fuzz suite; ``/static-files/{path+}`` reads its path parameter)."""

from __future__ import annotations

from serverless_mlflow.request import Message

MESSAGES: dict[str, Message] = {
    "index": Message({}),
    "static_file": Message({}),
}
