"""TypeSafe System One (MLflow's ``typesafe.py``): one typed, unary passthrough route."""

from __future__ import annotations

from typing import Any, ClassVar

from ..upstream import GatewayHTTPError, builtin_base, join, post_json
from .base import TYPESAFE_SYSTEM_ONE, Provider, usage_from

DEFAULT_BASE = builtin_base("https://api.typesafe.ai/v1")


class TypeSafeProvider(Provider):
    DISPLAY_NAME = "TypeSafe"
    PASSTHROUGH_PATHS: ClassVar[dict[str, str]] = {TYPESAFE_SYSTEM_ONE: "systemone"}

    def passthrough(self, action: str, payload: dict[str, Any], headers: dict[str, str]) -> Any:
        path = self.check_passthrough(action)
        if payload.get("stream"):
            raise GatewayHTTPError(400, "TypeSafe System One does not support streaming.")
        body = {k: v for k, v in payload.items() if k != "stream"} | {"model": self.model.model_name}
        base = self.model.auth_config.get("api_base") or DEFAULT_BASE
        return post_json(join(base, path), {"Authorization": f"Bearer {self.model.secret_value.get('api_key', '')}"}, body)

    def passthrough_usage(self, action: str, answer: dict[str, Any]) -> dict[str, int] | None:
        return usage_from(answer.get("usage") if isinstance(answer, dict) else None, "input_tokens", "output_tokens")
