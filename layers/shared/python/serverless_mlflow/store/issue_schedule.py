"""The timing half of MLflow 3.18's issue-detection schedule (``mlflow/genai/discovery/schedule.py``).

A schedule lives in experiment tags: ``mlflow.issueDetection.schedule`` (cadence, start time, weekday, timezone;
written by the UI through the generic tag route) and ``mlflow.issueDetection.scheduleState`` (what the server has
dispatched, written only by the server). ``POST /ajax-api/3.0/mlflow/issues/schedule/state`` brings the state in
line with a schedule that was just saved and answers when it next fires; the monitor's dispatcher
(``issue_detection_dispatch``) claims due occurrences with the same arithmetic. What a run does (model, trace
filters, priorities, window) is read by ``issue_schedule_runs``.

Parsing keeps MLflow's leniency exactly (an unreadable start time, weekday or zone falls back to the default, an
unknown envelope version or cadence is no schedule), so the answer and the state written are MLflow's, byte for byte.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

SCHEDULE_TAG = "mlflow.issueDetection.schedule"
STATE_TAG = "mlflow.issueDetection.scheduleState"
SCHEDULE_VERSION = 1
DEFAULT_TIMEZONE = "UTC"
DEFAULT_FIRE_TIME = "09:00"
DEFAULT_WEEKDAY = 0  # Monday, numbered as datetime.weekday()
HOURLY, DAILY, WEEKLY = "hourly", "daily", "weekly"
_STEPS = {HOURLY: timedelta(hours=1), DAILY: timedelta(days=1), WEEKLY: timedelta(weeks=1)}


@dataclass(frozen=True)
class Timing:
    """What decides when a schedule fires (``DetectionSchedule`` without the model, filters and paused flag)."""

    cadence: str
    timezone: str = DEFAULT_TIMEZONE
    fire_time: str = DEFAULT_FIRE_TIME
    weekday: int = DEFAULT_WEEKDAY

    @property
    def fingerprint(self) -> str:
        """``DetectionSchedule.timing``: recorded with the state, so a changed timing is told from time passing."""
        return f"{self.cadence}|{self.fire_time}|{self.weekday}|{self.timezone}"


@dataclass(frozen=True)
class State:
    """``DetectionScheduleState``."""

    last_fire_time_ms: int
    last_dispatched_at_ms: int | None = None
    last_run_id: str | None = None
    timing: str | None = None
    next_fire_time_ms: int | None = None

    def to_json(self) -> str:
        payload: dict[str, object] = {"version": SCHEDULE_VERSION, "lastFireTimeMs": self.last_fire_time_ms}
        if self.last_dispatched_at_ms is not None:
            payload["lastDispatchedAtMs"] = self.last_dispatched_at_ms
        if self.last_run_id is not None:
            payload["lastRunId"] = self.last_run_id
        if self.timing is not None:
            payload["timing"] = self.timing
        if self.next_fire_time_ms is not None:
            payload["nextFireTimeMs"] = self.next_fire_time_ms
        # json.dumps' default separators, as MLflow writes the tag.
        return json.dumps(payload)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _envelope(raw: str | None) -> dict[str, Any] | None:
    if not raw:
        return None
    try:
        parsed = json.loads(raw)
    except (TypeError, ValueError, RecursionError):
        return None
    # ``!=`` as MLflow compares: ``true`` and ``1.0`` read as version 1.
    if not isinstance(parsed, dict) or parsed.get("version") != SCHEDULE_VERSION:
        return None
    return parsed


def _zone(name: str) -> tzinfo:
    """The zone; UTC even where no IANA data is installed (a runtime without tzdata then still answers, in UTC, as
    MLflow falls back for a zone it cannot load)."""
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        if name == DEFAULT_TIMEZONE:
            return UTC
        raise


def _timezone(name: object) -> str:
    if not isinstance(name, str) or not name:
        return DEFAULT_TIMEZONE
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return DEFAULT_TIMEZONE
    return name


def _ascii_decimal(text: str, max_digits: int) -> bool:
    return 1 <= len(text) <= max_digits and text.isascii() and text.isdecimal()


def _fire_time(value: object) -> str:
    if isinstance(value, str):
        hour, separator, minute = value.strip().partition(":")
        if separator and _ascii_decimal(hour, 2) and _ascii_decimal(minute, 2) and int(hour) <= 23 and int(minute) <= 59:
            return f"{int(hour):02d}:{int(minute):02d}"
    return DEFAULT_FIRE_TIME


def _weekday(value: object) -> int:
    return value if _is_int(value) and 0 <= value <= 6 else DEFAULT_WEEKDAY  # type: ignore[return-value,operator]


def parse_timing(raw: str | None) -> Timing | None:
    """``parse_detection_schedule``'s timing: None without a schedule, or for an unknown version or cadence."""
    parsed = _envelope(raw)
    if parsed is None:
        return None
    cadence = next((name for name in _STEPS if name == parsed.get("cadence")), None)
    if cadence is None:
        return None
    return Timing(
        cadence=cadence,
        timezone=_timezone(parsed.get("timezone")),
        fire_time=_fire_time(parsed.get("fireTime")),
        weekday=_weekday(parsed.get("weekday")),
    )


def parse_state(raw: str | None) -> State | None:
    """``parse_detection_schedule_state``: fields of the wrong type read as unset; no ``lastFireTimeMs`` is none."""
    parsed = _envelope(raw)
    if parsed is None or not _is_int(parsed.get("lastFireTimeMs")):
        return None
    timing = parsed.get("timing")
    return State(
        last_fire_time_ms=parsed["lastFireTimeMs"],
        last_dispatched_at_ms=parsed.get("lastDispatchedAtMs") if _is_int(parsed.get("lastDispatchedAtMs")) else None,
        last_run_id=parsed.get("lastRunId") if isinstance(parsed.get("lastRunId"), str) else None,
        timing=timing if isinstance(timing, str) and timing else None,
        next_fire_time_ms=parsed.get("nextFireTimeMs") if _is_int(parsed.get("nextFireTimeMs")) else None,
    )


def _anchor(timing: Timing, reference_ms: int) -> tuple[tzinfo, datetime, timedelta]:
    """``_fire_time_anchor``: the candidate fire time near ``reference_ms`` as a naive wall clock in the schedule's
    zone, and the cadence's step (kept naive so the local hour survives a DST change)."""
    zone = _zone(timing.timezone)
    naive = datetime.fromtimestamp(reference_ms / 1000, tz=zone).replace(tzinfo=None)
    hour, _, minute = timing.fire_time.partition(":")
    if timing.cadence == HOURLY:
        base = naive.replace(minute=int(minute), second=0, microsecond=0)
    else:
        base = naive.replace(hour=int(hour), minute=int(minute), second=0, microsecond=0)
        if timing.cadence == WEEKLY:
            base -= timedelta(days=(naive.weekday() - timing.weekday) % 7)
    return zone, base, _STEPS[timing.cadence]


def next_fire_time_ms(timing: Timing, after_ms: int) -> int:
    """The first fire time strictly after ``after_ms``, built in wall-clock terms of the schedule's zone (so the
    local hour survives a DST change) and resolved to an instant by ``zoneinfo``, as MLflow does."""
    zone, base, step = _anchor(timing, after_ms)
    for index in range(4):
        candidate_ms = int((base + step * index).replace(tzinfo=zone).timestamp() * 1000)
        if candidate_ms > after_ms:
            return candidate_ms
    raise ValueError(f"Could not find the next {timing.cadence} fire time after {after_ms} in {timing.timezone}")


def synced_state(timing: Timing, state: State | None, now_ms: int) -> State:
    """The state after a save (``_sync_issue_detection_schedule_state_handler``): claim the first occurrence when
    none was recorded, adopt the timing when the state recorded none, re-anchor at ``now_ms`` when it changed, and
    leave it alone (the same object) when it did not."""
    if state is None:
        return State(last_fire_time_ms=now_ms, timing=timing.fingerprint, next_fire_time_ms=next_fire_time_ms(timing, now_ms))
    if state.timing is None:
        return replace(state, timing=timing.fingerprint, next_fire_time_ms=next_fire_time_ms(timing, state.last_fire_time_ms))
    if state.timing != timing.fingerprint:
        return reanchored(state, timing, now_ms)
    return state


def reanchored(state: State, timing: Timing, anchor_ms: int) -> State:
    """``reanchor_timing``: an edited timing takes effect from its next occurrence after ``anchor_ms``."""
    return replace(state, last_fire_time_ms=anchor_ms, timing=timing.fingerprint, next_fire_time_ms=next_fire_time_ms(timing, anchor_ms))


def parse_paused(raw: str | None) -> bool:
    """The schedule's ``paused`` flag ("Off" in the UI keeps the schedule, paused); only JSON ``true`` pauses."""
    parsed = _envelope(raw)
    return parsed is not None and parsed.get("paused") is True


def _latest_fire_time_ms(timing: Timing, at_or_before_ms: int) -> int | None:
    """The most recent fire time at or before ``at_or_before_ms`` (candidates filtered, not assumed ordered: a DST
    shift moves one by an hour either way)."""
    zone, base, step = _anchor(timing, at_or_before_ms)
    candidates = (int((base + step * index).replace(tzinfo=zone).timestamp() * 1000) for index in range(1, -3, -1))
    due = [candidate_ms for candidate_ms in candidates if candidate_ms <= at_or_before_ms]
    return max(due) if due else None


def due_occurrence_ms(timing: Timing, paused: bool, state: State | None, now_ms: int) -> int | None:
    """``due_occurrence_ms``: the fire time to run now (the most recent one due, so downtime costs one catch-up
    run), or None; a paused schedule or one without state is never due."""
    if paused or state is None:
        return None
    fire_time_ms = next_fire_time_ms(timing, state.last_fire_time_ms)
    if fire_time_ms > now_ms:
        return None
    latest_ms = _latest_fire_time_ms(timing, now_ms)
    return fire_time_ms if latest_ms is None else max(fire_time_ms, latest_ms)


def claimed(state: State, timing: Timing, fire_time_ms: int, now_ms: int) -> State:
    """``claim_occurrence``: the state recorded when the occurrence at ``fire_time_ms`` is dispatched."""
    return replace(
        state,
        last_fire_time_ms=fire_time_ms,
        last_dispatched_at_ms=now_ms,
        timing=timing.fingerprint,
        next_fire_time_ms=next_fire_time_ms(timing, fire_time_ms),
    )
