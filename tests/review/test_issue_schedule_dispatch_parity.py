"""The monitor's scheduled issue detection decides as MLflow 3.18's dispatcher does: for random schedules, states and
clocks (DST zones, unreadable fields, paused, catch-ups after downtime, hostile trace-filter clauses and model
names, priorities), which occurrence is due, how a retimed state is re-anchored and claimed, and the params the job
is submitted with are compared with 3.18.0's own ``mlflow.genai.discovery`` functions, run in the 3.18.0 client venv
(``tools.client_venvs``: the wheel over 3.17.2; built on first use)."""

from __future__ import annotations

import json
import random
import subprocess
from typing import Any

from serverless_mlflow.store import issue_schedule, issue_schedule_runs
from tools.client_venvs import by_version, ensure

ZONES = ["UTC", "America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "Not/AZone", ""]
# 2026-03-07 (New York's spring-forward weekend) and 2026-10-24 (Europe's fall-back weekend), UTC midnights.
EPOCHS = [1772841600000, 1792800000000]
HOUR = 3600 * 1000

MLFLOW_318 = """
import json, sys
from mlflow.genai.discovery import checkpoint, schedule, settings
out = []
for case in json.load(sys.stdin):
    parsed = schedule.parse_detection_schedule(case["schedule"], case["filters"])
    state = schedule.parse_detection_schedule_state(case["state"])
    if parsed is None:
        out.append(None)
        continue
    if state is not None and state.timing is not None and state.timing != parsed.timing:
        state = schedule.reanchor_timing(state, parsed, case["now"] - case["poll"])
    elif state is not None and state.timing is None:
        state = schedule.adopt_timing(state, parsed)
    due = schedule.due_occurrence_ms(parsed, state, case["now"])
    claimed = schedule.claim_occurrence(state, due, parsed, case["now"]).to_json() if due is not None else None
    chosen = settings.parse_detection_settings(case["priorities"])
    window = checkpoint.sample_window(
        checkpoint.parse_detection_checkpoint(case["checkpoint"]),
        now_ms=due or case["now"],
        first_run_lookback_ms=checkpoint.FIRST_RUN_LOOKBACK_MS[parsed.cadence.value],
    )
    out.append({
        "due": due,
        "claimed": claimed,
        "params": {
            "window_lower_bound_ms": window.lower_bound_ms,
            "window_upper_bound_ms": window.now_ms,
            "categories": list(chosen.categories),
            "instructions": chosen.instructions,
            "trace_filter": parsed.to_filter_string(),
            "model": parsed.model.to_model_uri() if parsed.model else None,
        },
    })
print(json.dumps(out))
"""


def _pick(rng: random.Random, *choices: Any) -> Any:
    return rng.choice(choices)


def _case(rng: random.Random) -> dict[str, Any]:
    epoch = rng.choice(EPOCHS)
    schedule = {
        "version": _pick(rng, 1, 1, 1, True, 2),
        "cadence": _pick(rng, "hourly", "daily", "weekly", "monthly"),
        "timezone": rng.choice(ZONES),
        "paused": _pick(rng, False, False, True, "true"),
        "fireTime": _pick(rng, f"{rng.randrange(24)}:{rng.randrange(60):02d}", "02:30", "24:00", "0045", None),
        "weekday": _pick(rng, rng.randrange(7), 7, True, None),
        "model": _pick(
            rng,
            None,
            {"endpointName": "judge-endpoint"},
            {"provider": "OpenAI", "model": "gpt-4o-mini", "secretId": "s-1"},
            {"provider": "openai", "model": "bad model"},
            {"endpointName": " ", "provider": "anthropic", "model": "claude"},
        ),
    }
    filters = [
        {
            "field": _pick(rng, "tag", "metadata", None),
            "key": _pick(rng, "env", " user ", "a'b", ""),
            "value": _pick(rng, "prod", "x\ny", 3),
            "operator": _pick(rng, "=", "=", "!="),
        }
        for _ in range(rng.randrange(4))
    ]
    last = epoch + rng.randrange(-30, 30) * HOUR // 4
    state = _pick(
        rng,
        None,
        {"version": 1, "lastFireTimeMs": last},
        {"version": 1, "lastFireTimeMs": last, "timing": "daily|09:00|0|UTC", "nextFireTimeMs": last + 5},
    )
    if state is not None and rng.random() < 0.5:
        # The schedule's own timing as the sync route records it, so most cases are not retimes.
        timing = issue_schedule.parse_timing(json.dumps(schedule))
        if timing is not None:
            state["timing"] = timing.fingerprint
    priorities = _pick(
        rng,
        None,
        json.dumps({"categories": {"correctness": True, "latency": False, " cost ": True}, "instructions": "be brief"}),
        "{",
        json.dumps({"categories": []}),
    )
    watermark = _pick(
        rng,
        None,
        json.dumps({"version": 1, "lastScannedTraceTimeMs": last - 2 * HOUR}),
        json.dumps({"version": 1, "lastScannedTraceTimeMs": last - 30 * 24 * HOUR}),
    )
    return {
        "schedule": json.dumps(schedule),
        "filters": json.dumps(filters),
        "state": json.dumps(state) if state else None,
        "priorities": priorities,
        "checkpoint": watermark,
        "now": last + rng.randrange(0, 10 * 24 * 60) * 60 * 1000,
        "poll": 60_000,
    }


def _ours(case: dict[str, Any]) -> dict[str, Any] | None:
    timing = issue_schedule.parse_timing(case["schedule"])
    if timing is None:
        return None
    state = issue_schedule.parse_state(case["state"])
    if state is not None and state.timing is not None and state.timing != timing.fingerprint:
        state = issue_schedule.reanchored(state, timing, case["now"] - case["poll"])
    elif state is not None and state.timing is None:
        state = issue_schedule.synced_state(timing, state, case["now"])
    due = issue_schedule.due_occurrence_ms(timing, issue_schedule.parse_paused(case["schedule"]), state, case["now"])
    tags = {
        issue_schedule.SCHEDULE_TAG: case["schedule"],
        issue_schedule_runs.FILTER_TAG: case["filters"],
        issue_schedule_runs.PRIORITIES_TAG: case["priorities"],
        issue_schedule_runs.CHECKPOINT_TAG: case["checkpoint"],
    }
    params = issue_schedule_runs.job_params(
        "1", {key: value for key, value in tags.items() if value is not None}, timing, due or case["now"]
    )
    return {
        "due": due,
        "claimed": issue_schedule.claimed(state, timing, due, case["now"]).to_json() if due is not None and state is not None else None,
        "params": {key: value for key, value in params.items() if key != "experiment_id"},
    }


def test_dispatch_decides_as_mlflow_318() -> None:
    rng = random.Random(42)
    cases = [_case(rng) for _ in range(400)]
    python = ensure(by_version("3.18.0")) / "bin" / "python"
    answered = subprocess.run([str(python), "-c", MLFLOW_318], input=json.dumps(cases), capture_output=True, text=True, check=True)
    expected = json.loads(answered.stdout)
    assert sum(1 for e in expected if e and e["due"]) > 40  # the grid reaches due occurrences, not only quiet ones
    for case, want in zip(cases, expected, strict=True):
        assert _ours(case) == want, case
