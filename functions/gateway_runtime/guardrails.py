"""An endpoint's guardrails on a unified chat call (MLflow's ``gateway/guardrails.py`` JudgeGuardrail and
``guardrail_utils``), without mlflow: BEFORE guardrails judge the request, AFTER ones the response; a failing
VALIDATION guardrail blocks the call (400, ``Guardrail '<name>' blocked: <rationale>``), a failing SANITIZATION
one has its action endpoint rewrite the payload.

The judge is the guardrail's scorer: a ``make_judge`` judge whose model is a gateway endpoint
(``gateway:/<name>``). Its prompt is built as MLflow's field-based InstructionsJudge builds it, and it is
called as MLflow's judge calls it, through this gateway's chat route (so its call is traced and budgeted
like any other). With usage tracking, each run is traced in the call's usage trace as MLflow's
``process_request`` / ``process_response`` trace it: a ``guardrail/<name>`` GUARDRAIL span (the request, or
request and response, in; the payload it lets through out; ERROR with the ``GuardrailViolation`` when it
blocks), under it a ``judge`` EVALUATOR span (out: passed and rationale) and, when it sanitizes, a
``sanitization`` LLM span (payload and rationale in, the rewritten payload out). A guardrail whose scorer cannot run here (a built-in scorer, a judge on a provider model,
a custom ``@scorer``) fails the call with INVALID_STATE: an endpoint never serves traffic without a
guardrail it is configured to run (MLflow fails closed the same way for custom scorers).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from serverless_mlflow.core.errors import wrong_state
from serverless_mlflow.llm_gateway import guardrail_configs
from serverless_mlflow.llm_gateway.upstream import GatewayHTTPError

from .answers import Answer, Call
from .spans import Span, recording
from .tracing import GatewayTrace

# Internal sanitization calls carry it so the gateway skips guardrails on them (no recursion).
BYPASS_HEADER = "x-mlflow-guardrail-bypass"
_MAX_RATIONALE_LEN = 500
_VARIABLE = re.compile(r"\{\{\s*(\w+)\s*\}\}")
_JUDGE_BASE_PROMPT = (
    "You are an expert judge tasked with evaluating the performance of an AI\nagent on a particular query. You will be "
    "given instructions that describe the criteria and\nmethodology for evaluating the agent's performance on the query."
)
_RESULT = "The evaluation rating/result"
_RATIONALE = "Detailed explanation for the evaluation"
_SANITIZE_PROMPT = """\
You are a content sanitizer. You will receive a JSON payload and an issue description.
Fix the issue by modifying the content using the following rules:
- Replace content that cannot be safely rephrased (e.g. sensitive data, PII, credentials)
  with [REDACTED].
- Rewrite content that can be made acceptable (e.g. soften hostile tone, remove bias,
  generalize specifics).
Preserve the payload structure and overall intent. Do not add new fields or change the schema.
Return ONLY a valid JSON object with the same schema as the input payload.

Issue: {rationale}

Input payload:
{payload_json}"""

# Runs a chat body on a named endpoint through the gateway's own chat route; answers its JSON or raises.
ChatCall = Callable[[str, dict[str, Any]], dict[str, Any]]


class Guardrail:
    def __init__(self, item: dict[str, Any], action_endpoint: str | None) -> None:
        self.name: str = item["name"]
        self.stage: str = item["stage"]
        self.action: str = item["action"]
        self.action_endpoint = action_endpoint
        scorer = json.loads(json.loads(item["scorer"])["serialized_scorer"])
        judge = scorer.get("instructions_judge_pydantic_data") if isinstance(scorer, dict) else None
        model = judge.get("model") if isinstance(judge, dict) else None
        if scorer.get("call_source") is not None or not isinstance(model, str) or not model.startswith("gateway:/"):
            raise wrong_state(
                f"Guardrail '{self.name}' uses a scorer this gateway cannot run: only judges created with make_judge "
                "on a gateway endpoint (model 'gateway:/<endpoint>') run as guardrails here."
            )
        self.instructions: str = judge["instructions"]
        self.judge_endpoint = model.removeprefix("gateway:/")

    def _messages(self, inputs: Any, outputs: Any) -> list[dict[str, str]]:
        system = f"{_JUDGE_BASE_PROMPT}\n\nYour task: {self.instructions}."
        system += (
            "\n\nYou *must* format your evaluation rating as a JSON object with the following fields (no markdown). Pay close "
            "attention to the field type of the evaluation rating (string, boolean, numeric, etc.), and ensure that it "
            f"conforms to the instructions.\n\n- result (str): {_RESULT}\n- rationale (str): {_RATIONALE}"
        )
        values = {"inputs": inputs, "outputs": outputs}
        parts = []
        for variable in dict.fromkeys(_VARIABLE.findall(self.instructions)):
            if values.get(variable) is not None:
                parts.append(f"{variable}: {json.dumps(values[variable], default=str, indent=2, ensure_ascii=False)}")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]

    def judge(self, chat: ChatCall, inputs: Any, outputs: Any = None) -> tuple[bool, str]:
        """(passed, rationale) from the judge's JSON answer; an answer that is not one blocks."""
        answer = chat(self.judge_endpoint, {"messages": self._messages(inputs, outputs)})
        try:
            verdict = json.loads(_strip_fences(answer["choices"][0]["message"]["content"]))
            value = verdict["result"]
        except (KeyError, IndexError, TypeError, ValueError):
            return False, "The guardrail's judge did not answer a rating."
        passed = value if isinstance(value, bool) else str(value).strip().lower() == "yes"
        rationale = verdict.get("rationale") or str(value)
        return passed, str(rationale)[:_MAX_RATIONALE_LEN]

    def process(self, chat: ChatCall, trace: GatewayTrace, payload: dict[str, Any], request: Any, response: Any = None) -> dict[str, Any]:
        """Judge ``request`` (and ``response`` for an AFTER guardrail), then let ``payload`` through, block it or
        sanitize it; traced as MLflow's guardrail spans."""
        span_inputs = request if self.stage == "BEFORE" else {"request": request, "response": response}
        with recording(trace.child(f"guardrail/{self.name}", "GUARDRAIL")) as span:
            span.set_inputs(span_inputs)
            with recording(trace.child("judge", "EVALUATOR", parent=span)) as judge_span:
                passed, rationale = self.judge(chat, request, response)
                judge_span.set_outputs({"passed": passed, "rationale": rationale})
            output = self.enforce(chat, trace, span, payload, passed, rationale)
            span.set_outputs(output)
        return output

    def enforce(
        self, chat: ChatCall, trace: GatewayTrace, span: Span, payload: dict[str, Any], passed: bool, rationale: str
    ) -> dict[str, Any]:
        if passed:
            return payload
        if self.action == "VALIDATION":
            raise self._blocked(rationale)
        return self._sanitize(chat, trace, span, payload, rationale)

    def _sanitize(self, chat: ChatCall, trace: GatewayTrace, parent: Span, payload: dict[str, Any], rationale: str) -> dict[str, Any]:
        if not self.action_endpoint:
            raise self._blocked("Sanitization requires an action_llm_url but none was configured.")
        with recording(trace.child("sanitization", "LLM", parent=parent)) as span:
            span.set_inputs({"payload": payload, "rationale": rationale})
            result = self._rewrite(chat, payload, rationale)
            span.set_outputs(result)
        return result

    def _rewrite(self, chat: ChatCall, payload: dict[str, Any], rationale: str) -> dict[str, Any]:
        content = _SANITIZE_PROMPT.format(rationale=rationale, payload_json=json.dumps(payload, indent=2))
        try:
            answer = chat(self.action_endpoint, {"messages": [{"role": "user", "content": content}]})
        except GatewayHTTPError as error:
            raise self._blocked(f"Sanitization request failed: {error.detail}") from error
        try:
            text = answer["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._blocked("Sanitization LLM response is missing 'choices[0].message.content'.") from None
        try:
            result = json.loads(text)
        except (TypeError, ValueError):
            raise self._blocked("Sanitization LLM returned invalid JSON.") from None
        if not isinstance(result, dict):
            raise self._blocked("Sanitization LLM returned invalid JSON.")
        return result

    def _blocked(self, rationale: str) -> GatewayHTTPError:
        """MLflow's ``GuardrailViolation`` (the type its spans and SSE error chunks name), answered as a 400."""
        return GatewayHTTPError(400, f"Guardrail '{self.name}' blocked: {rationale}", "GuardrailViolation")


def _strip_fences(text: str) -> str:
    text = text.strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    return text


def load(call: Call, endpoint_id: str) -> list[Guardrail]:
    """The endpoint's guardrails in execution order; none on an internal sanitization call."""
    if {k.lower(): v for k, v in call.headers.items()}.get(BYPASS_HEADER) == "1":
        return []
    configs = [guardrail for _, guardrail in guardrail_configs.endpoint_configs(endpoint_id) if guardrail is not None]
    if not configs:
        return []
    action_ids = sorted({g["action_endpoint_id"] for g in configs if g.get("action_endpoint_id")})
    names = guardrail_configs.endpoint_names(action_ids)
    return [Guardrail(item, names.get(item.get("action_endpoint_id") or "")) for item in configs]


def before(guardrails: list[Guardrail], chat: ChatCall, trace: GatewayTrace, payload: dict[str, Any]) -> dict[str, Any]:
    """``run_pre_llm_guardrails`` on the request's ``model_dump()`` form (``payloads.chat_dump``)."""
    for guardrail in guardrails:
        if guardrail.stage == "BEFORE":
            payload = guardrail.process(chat, trace, payload, payload)
    return payload


def after(
    guardrails: list[Guardrail], chat: ChatCall, trace: GatewayTrace, request: dict[str, Any], response: dict[str, Any]
) -> dict[str, Any]:
    """``run_post_llm_guardrails``."""
    for guardrail in guardrails:
        if guardrail.stage == "AFTER":
            response = guardrail.process(chat, trace, response, request, response)
    return response


def answer_json(answer: Answer) -> dict[str, Any]:
    """An in-process gateway answer as the judge's HTTP client reads it: its JSON, or the error it carries."""
    body = json.loads(answer.body or b"{}")
    if answer.status != 200:
        raise GatewayHTTPError(answer.status, body.get("detail", body) if isinstance(body, dict) else body, "HTTPException")
    return body
