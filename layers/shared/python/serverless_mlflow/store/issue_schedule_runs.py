"""What one scheduled issue-detection occurrence does, read from the experiment's tags as MLflow 3.18's dispatcher
reads them (``mlflow/genai/discovery/{schedule,settings,checkpoint}.py``): the model and trace-filter halves of the
schedule, the saved priorities (categories, instructions) and the window since the checkpoint. The result is the
params of MLflow's ``scheduled_issue_detection`` job, byte for byte.

Parsing keeps MLflow's leniency: a clause this reader cannot apply is dropped, an unusable model falls back to the
job's default, unreadable priorities mean every category.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from serverless_mlflow.store.issue_schedule import DAILY, HOURLY, SCHEDULE_TAG, SCHEDULE_VERSION, WEEKLY, Timing

FILTER_TAG = "mlflow.issueDetection.scheduleTraceFilter"
PRIORITIES_TAG = "mlflow.issueDetection.priorities"
CHECKPOINT_TAG = "mlflow.issueDetection.checkpoint"
MAX_TRACE_FILTERS = 20
MAX_MODEL_IDENTIFIER_LENGTH = 200
_FORBIDDEN_FILTER_CHARS = "`'\"\\"
# mlflow.genai.discovery.constants.DEFAULT_CATEGORIES (3.18): every category, in MLflow's order.
DEFAULT_CATEGORIES = ("correctness", "latency", "execution", "adherence", "relevance", "safety", "cost")
_HOUR_MS = 60 * 60 * 1000
FIRST_RUN_LOOKBACK_MS = {HOURLY: _HOUR_MS, DAILY: 24 * _HOUR_MS, WEEKLY: 7 * 24 * _HOUR_MS}
# STALE_WATERMARK_CAP_MS: how far back one run may reach (a long-paused schedule resumes with 8 days at most).
STALE_WATERMARK_CAP_MS = 8 * 24 * _HOUR_MS


@dataclass(frozen=True)
class Model:
    """``ScheduleModel``: an AI Gateway endpoint, or a provider's model (with the saved secret chosen for it)."""

    provider: str = ""
    model: str = ""
    endpoint_name: str = ""
    secret_id: str = ""

    def uri(self) -> str:
        return f"gateway:/{self.endpoint_name}" if self.endpoint_name else f"{self.provider.lower()}:/{self.model}"


def _control(text: str) -> bool:
    return any(ord(char) < 0x20 or ord(char) == 0x7F for char in text)


def _clause(entry: object) -> str | None:
    """``_parse_trace_filter`` + ``to_filter_clause``: one equality clause, or None when it cannot be applied."""
    if not isinstance(entry, dict):
        return None
    namespace = "tags" if entry.get("field") == "tag" else "request_metadata"
    key = entry.get("key")
    if not isinstance(key, str) or not (key := key.strip()):
        return None
    value = entry.get("value") if isinstance(entry.get("value"), str) else ""
    if entry.get("operator", "=") != "=":
        return None
    if any(char in key or char in value for char in _FORBIDDEN_FILTER_CHARS) or _control(key) or _control(value):
        return None
    return f"{namespace}.`{key}` = '{value}'"


def filter_string(raw: str | None) -> str:
    """``DetectionSchedule.to_filter_string``: the usable clauses (the first 20), ANDed; "" when none."""
    try:
        parsed = json.loads(raw) if raw else []
    except (TypeError, ValueError, RecursionError):
        return ""
    if not isinstance(parsed, list):
        return ""
    return " AND ".join(clause for entry in parsed[:MAX_TRACE_FILTERS] if (clause := _clause(entry)) is not None)


def _identifier(value: object) -> str:
    if not isinstance(value, str):
        return ""
    stripped = value.strip()
    if not stripped or len(stripped) > MAX_MODEL_IDENTIFIER_LENGTH or any(char.isspace() or ord(char) < 0x20 for char in stripped):
        return ""
    return stripped


def model(raw_schedule: str | None) -> Model | None:
    """``_parse_model``: the schedule's model selection, or None (the job's default model) when unusable."""
    try:
        parsed = json.loads(raw_schedule) if raw_schedule else None
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or parsed.get("version") != SCHEDULE_VERSION or not isinstance(entry := parsed.get("model"), dict):
        return None
    if endpoint_name := _identifier(entry.get("endpointName")):
        return Model(endpoint_name=endpoint_name)
    provider, name = _identifier(entry.get("provider")), _identifier(entry.get("model"))
    if not provider or not name:
        return None
    secret_id = entry.get("secretId")
    return Model(provider=provider, model=name, secret_id=secret_id if isinstance(secret_id, str) and secret_id.strip() else "")


def priorities(raw: str | None) -> tuple[list[str], str]:
    """``parse_detection_settings``: (categories, instructions); the categories the tag sets to ``true``, every
    category when none (or unreadable)."""
    try:
        parsed = json.loads(raw) if raw else None
    except (TypeError, ValueError, RecursionError):
        parsed = None
    if not isinstance(parsed, dict):
        return list(DEFAULT_CATEGORIES), ""
    instructions = parsed.get("instructions") if isinstance(parsed.get("instructions"), str) else ""
    raw_categories = parsed.get("categories")
    if not isinstance(raw_categories, dict):
        return list(DEFAULT_CATEGORIES), instructions
    selected: dict[str, bool] = {}
    for category, is_selected in raw_categories.items():
        if isinstance(category, str) and category.strip() and isinstance(is_selected, bool):
            selected[category.strip()] = is_selected
    return [category for category, chosen in selected.items() if chosen] or list(DEFAULT_CATEGORIES), instructions


def watermark(raw: str | None) -> int | None:
    """``parse_detection_checkpoint``'s ``lastScannedTraceTimeMs``: None when absent, foreign or not finite."""
    try:
        parsed = json.loads(raw) if raw else None
    except (TypeError, ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or parsed.get("version") != 1:
        return None
    value = parsed.get("lastScannedTraceTimeMs")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


def window_lower_bound_ms(raw_checkpoint: str | None, cadence: str, fire_time_ms: int) -> int:
    """``sample_window``'s lower bound: the watermark, or one cadence interval back on the first run; never older
    than the stale cap."""
    covered = watermark(raw_checkpoint)
    lower = covered if covered is not None else fire_time_ms - FIRST_RUN_LOOKBACK_MS[cadence]
    return max(lower, fire_time_ms - STALE_WATERMARK_CAP_MS)


def job_params(experiment_id: str, tags: dict[str, str], timing: Timing, fire_time_ms: int) -> dict[str, Any]:
    """The params MLflow's ``_submit_occurrence`` submits ``run_scheduled_issue_detection_job`` with."""
    categories, instructions = priorities(tags.get(PRIORITIES_TAG))
    chosen = model(tags.get(SCHEDULE_TAG))
    return {
        "experiment_id": experiment_id,
        "window_lower_bound_ms": window_lower_bound_ms(tags.get(CHECKPOINT_TAG), timing.cadence, fire_time_ms),
        "window_upper_bound_ms": fire_time_ms,
        "categories": categories,
        "instructions": instructions,
        "trace_filter": filter_string(tags.get(FILTER_TAG)),
        "model": chosen.uri() if chosen else None,
    }
