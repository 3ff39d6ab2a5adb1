"""``POST /ajax-api/3.0/mlflow/issues/schedule/state`` (MLflow 3.18's schedule dialog, after it saves the schedule tags).

The stock client and the stock server it compares with are 3.17.2, which has no such route; the expected answers and
state tags below were produced by MLflow 3.18.0's own ``mlflow.genai.discovery.schedule`` functions, as its handler
calls them, for the same tags and the same (frozen) clock. ``tests/clients/core`` runs the same sync against 3.18's
functions live under the 3.18 client (``make test-clients``). The tags are written as the UI writes them: through
the generic experiment-tag route.
"""

from __future__ import annotations

import json

import pytest
import requests

from serverless_mlflow.core import clock
from tests.conftest import unique

pytestmark = pytest.mark.e2e

ROUTE = "/ajax-api/3.0/mlflow/issues/schedule/state"
SCHEDULE, STATE = "mlflow.issueDetection.schedule", "mlflow.issueDetection.scheduleState"
# 2026-03-07 20:00, 21:00, 22:00, 23:00 UTC: the Saturday before New York's clocks go forward.
N1, N2, N3, N4 = 1772913600000, 1772917200000, 1772920800000, 1772924400000
DAILY = {"version": 1, "cadence": "daily", "timezone": "America/New_York", "paused": False, "fireTime": "16:30", "weekday": 0}
# Sunday 02:30 in New York does not exist on 2026-03-08: zoneinfo moves it to 03:30 EDT.
WEEKLY = {"version": 1, "cadence": "weekly", "timezone": "America/New_York", "paused": True, "fireTime": "2:30", "weekday": 6}
# Every field MLflow falls back on: an unknown zone (UTC), an unreadable start time (09:00), a bool weekday (Monday);
# ``"version": true`` is version 1 to MLflow's ``!=``.
HOURLY = {"version": True, "cadence": "hourly", "timezone": "Not/AZone", "fireTime": "0045", "weekday": True}
# A state written before timings were recorded.
LEGACY = {"version": 1, "lastFireTimeMs": 1772900000000, "lastRunId": "r1", "lastDispatchedAtMs": 1772900001000, "nextFireTimeMs": 5}


def _sync(server: str, experiment_id: str, monkeypatch: pytest.MonkeyPatch, now: int) -> requests.Response:
    monkeypatch.setattr(clock, "now_millis", lambda: now)
    return requests.post(f"{server}{ROUTE}", json={"experiment_id": experiment_id}, timeout=30)


def test_schedule_state_is_synced_as_mlflow_318_does(server: str, client, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment_id = client.create_experiment(unique("schedule"))

    def state() -> str | None:
        return client.get_experiment(experiment_id).tags.get(STATE)

    def answer(now: int) -> object:
        response = _sync(server, experiment_id, monkeypatch, now)
        assert response.status_code == 200, response.text
        return response.json()["next_fire_time_ms"]

    # No schedule stored: no next run, nothing written.
    assert answer(N1) is None and state() is None

    # First save: the first occurrence is claimed at the save, so it runs at the next 16:30 in New York, not now.
    client.set_experiment_tag(experiment_id, SCHEDULE, json.dumps(DAILY))
    claimed = '{"version": 1, "lastFireTimeMs": 1772913600000, "timing": "daily|16:30|0|America/New_York", "nextFireTimeMs": 1772919000000}'
    assert (answer(N1), state()) == (1772919000000, claimed)
    # Saved again with the same timing: the state is left as it is (time passing is not an edit).
    assert (answer(N2), state()) == (1772919000000, claimed)

    # The timing edited: re-anchored at this save, across the DST gap.
    client.set_experiment_tag(experiment_id, SCHEDULE, json.dumps(WEEKLY))
    reanchored = (
        '{"version": 1, "lastFireTimeMs": 1772920800000, "timing": "weekly|02:30|6|America/New_York", "nextFireTimeMs": 1772955000000}'
    )
    assert (answer(N3), state()) == (1772955000000, reanchored)

    # A state without a recorded timing adopts it and keeps its anchor and audit fields.
    client.set_experiment_tag(experiment_id, SCHEDULE, json.dumps(HOURLY))
    client.set_experiment_tag(experiment_id, STATE, json.dumps(LEGACY))
    adopted = (
        '{"version": 1, "lastFireTimeMs": 1772900000000, "lastDispatchedAtMs": 1772900001000, "lastRunId": "r1", '
        '"timing": "hourly|09:00|0|UTC", "nextFireTimeMs": 1772902800000}'
    )
    assert (answer(N4), state()) == (1772902800000, adopted)

    # A schedule this server does not recognize is no schedule: no next run, the state untouched.
    for unknown in (json.dumps({"version": 2, "cadence": "daily"}), json.dumps({"version": 1, "cadence": "monthly"}), "{"):
        client.set_experiment_tag(experiment_id, SCHEDULE, unknown)
        assert (answer(N4), state()) == (None, adopted)


def test_schedule_state_refuses_bad_requests_as_mlflow_does(server: str, client, monkeypatch: pytest.MonkeyPatch) -> None:
    experiment_id = client.create_experiment(unique("schedule-bad"))
    client.set_experiment_tag(experiment_id, SCHEDULE, json.dumps(DAILY))
    url = f"{server}{ROUTE}"

    def refusal(response: requests.Response) -> tuple[int, str]:
        return response.status_code, response.json()["error_code"]

    assert refusal(requests.post(url, json={}, timeout=30)) == (400, "INVALID_PARAMETER_VALUE")
    assert refusal(requests.post(url, json={"experiment_id": 7}, timeout=30)) == (400, "INVALID_PARAMETER_VALUE")
    assert refusal(requests.post(url, data="experiment_id=1", timeout=30)) == (400, "INVALID_PARAMETER_VALUE")
    assert refusal(requests.post(url, json={"experiment_id": "987654321"}, timeout=30)) == (404, "RESOURCE_DOES_NOT_EXIST")
    # MLflow answers this route under /ajax-api only.
    assert (
        requests.post(f"{server}/api/3.0/mlflow/issues/schedule/state", json={"experiment_id": experiment_id}, timeout=30).status_code
        == 404
    )
    # A deleted experiment's state is not written (SqlAlchemyStore.set_experiment_tag refuses a deleted experiment).
    client.delete_experiment(experiment_id)
    assert refusal(_sync(server, experiment_id, monkeypatch, N1)) == (400, "INVALID_PARAMETER_VALUE")
    assert client.get_experiment(experiment_id).tags.get(STATE) is None
