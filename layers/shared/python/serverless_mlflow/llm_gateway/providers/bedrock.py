"""Amazon Bedrock through the runtime function's own IAM role (no stored secret), over the Converse API.

MLflow's Bedrock provider calls InvokeModel with one body adapter per model family; Converse gives one shape
for every family, so unified chat and its stream answer the same way for all of them. The stack grants
``bedrock:InvokeModel*`` on the configured models only (``infra``). MLflow's Anthropic Messages passthrough on
Bedrock needs its API-key auth; with the role it answers MLflow's own 501.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

from ..upstream import GatewayHTTPError
from .base import ANTHROPIC_MESSAGES, Provider, chat_usage

_FINISH = {"max_tokens": "length", "tool_use": "tool_calls"}
_clients: dict[str | None, Any] = {}


def bedrock_client(region: str | None) -> Any:
    """bedrock-runtime with the function's own credentials (``BEDROCK_ENDPOINT_URL`` points tests at a stub)."""
    if region not in _clients:
        import boto3

        _clients[region] = boto3.client(
            "bedrock-runtime", region_name=region or None, endpoint_url=os.environ.get("BEDROCK_ENDPOINT_URL") or None
        )
    return _clients[region]


def _call(call: Callable[[], Any]) -> Any:
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return call()
    except ClientError as error:
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 502)
        raise GatewayHTTPError(status, error.response.get("Error", {}).get("Message") or str(error)) from error
    except BotoCoreError as error:
        raise GatewayHTTPError(502, str(error)) from error


class BedrockProvider(Provider):
    DISPLAY_NAME = "Amazon Bedrock"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {ANTHROPIC_MESSAGES: "model/{model}/invoke"}

    @property
    def span_provider(self) -> str:
        return "bedrock"

    def _client(self) -> Any:
        return bedrock_client(self.model.auth_config.get("aws_region_name"))

    def _converse_args(self, payload: dict[str, Any]) -> dict[str, Any]:
        messages = payload.get("messages") or []
        system = [{"text": str(m.get("content"))} for m in messages if m.get("role") == "system"]
        turns = [
            {"role": "assistant" if m.get("role") == "assistant" else "user", "content": [{"text": str(m.get("content"))}]}
            for m in messages
            if m.get("role") != "system"
        ]
        inference = {
            target: payload[source]
            for source, target in (("max_tokens", "maxTokens"), ("temperature", "temperature"), ("top_p", "topP"))
            if payload.get(source) is not None
        }
        if payload.get("stop"):
            inference["stopSequences"] = payload["stop"] if isinstance(payload["stop"], list) else [payload["stop"]]
        args: dict[str, Any] = {"modelId": self.model.model_name, "messages": turns}
        if system:
            args["system"] = system
        if inference:
            args["inferenceConfig"] = inference
        return args

    def chat(self, payload: dict[str, Any]) -> dict[str, Any]:
        resp = _call(lambda: self._client().converse(**self._converse_args(payload)))
        usage = resp.get("usage") or {}
        text = "".join(part.get("text", "") for part in ((resp.get("output") or {}).get("message") or {}).get("content") or [])
        return {
            "id": (resp.get("ResponseMetadata") or {}).get("RequestId") or f"bedrock-{int(time.time())}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self.model.model_name,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text, "tool_calls": None, "refusal": None},
                    "finish_reason": _FINISH.get(resp.get("stopReason") or "", "stop"),
                }
            ],
            "usage": chat_usage(usage.get("inputTokens"), usage.get("outputTokens"), usage.get("totalTokens")),
        }

    def chat_stream(self, payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
        resp = _call(lambda: self._client().converse_stream(**self._converse_args(payload)))
        created = int(time.time())
        for event in resp.get("stream") or []:
            delta = finish = usage = None
            if "contentBlockDelta" in event:
                delta = event["contentBlockDelta"].get("delta", {}).get("text")
            elif "messageStop" in event:
                finish = _FINISH.get(event["messageStop"].get("stopReason") or "", "stop")
            elif "metadata" in event:
                raw = event["metadata"].get("usage") or {}
                usage = chat_usage(raw.get("inputTokens"), raw.get("outputTokens"), raw.get("totalTokens"))
            else:
                continue
            choices = (
                []
                if usage
                else [{"index": 0, "finish_reason": finish, "delta": {"role": "assistant", "content": delta, "tool_calls": None}}]
            )
            yield {
                "id": f"bedrock-{created}",
                "object": "chat.completion.chunk",
                "created": created,
                "model": self.model.model_name,
                "choices": choices,
                "usage": usage,
            }

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        self.check_passthrough(action)
        if "anthropic" not in self.model.model_name:
            raise GatewayHTTPError(
                400,
                "The Anthropic Messages passthrough only supports Anthropic models on Amazon Bedrock, "
                f"but this endpoint uses '{self.model.model_name}'.",
            )
        raise GatewayHTTPError(501, "The Anthropic Messages passthrough is only supported for Bedrock API key (bearer token) auth.")
