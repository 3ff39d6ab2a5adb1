"""``POST /ajax-api/3.0/mlflow/issues/schedule/state`` (MLflow 3.18): after the UI saves an issue-detection schedule
(experiment tags, through the generic tag route), bring the dispatch-state tag in line with it and answer when the
schedule next fires. Nothing is dispatched: a save says when a run should happen, not that one should happen now.
"""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core import clock
from serverless_mlflow.store import experiments, issue_schedule


def sync_schedule_state(experiment_id: str) -> dict[str, Any]:
    """MLflow's ``_sync_issue_detection_schedule_state_handler``: one strongly consistent read of the experiment's
    tags, at most one tag write (the state), ``next_fire_time_ms`` null when no schedule is stored."""
    tags = {tag["key"]: tag["value"] for tag in experiments.get_experiment(experiment_id).get("tags", [])}
    timing = issue_schedule.parse_timing(tags.get(issue_schedule.SCHEDULE_TAG))
    if timing is None:
        return {"next_fire_time_ms": None}
    state = issue_schedule.parse_state(tags.get(issue_schedule.STATE_TAG))
    updated = issue_schedule.synced_state(timing, state, clock.now_millis())
    if updated is not state:
        experiments.put_tag(experiment_id, issue_schedule.STATE_TAG, updated.to_json())
    return {"next_fire_time_ms": updated.next_fire_time_ms}
