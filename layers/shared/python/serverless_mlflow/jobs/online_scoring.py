"""Online scoring's dispatcher (MLflow's ``run_online_scoring_scheduler``), run by the monitor's minute tick.

Every active configuration (a positive sample rate; the ``active`` listing) is grouped by experiment; each
experiment gets one ``run_online_trace_scorer`` job with its scorers' latest versions (MLflow's params). The job
worker runs MLflow's own processors (``job_worker/kinds/online.py``): they read the traces since the experiment's
checkpoint (MLflow's ``mlflow.latestOnlineScoringTraceCheckpoint`` tag), sample them per scorer at its rate and
filter, judge and log the assessments, and move the checkpoint. MLflow submits a second job for session-level
scorers, sorted out by deserializing each scorer; this side does not import mlflow, so the one job runs the session
processor too when any of its scorers is session-level.

MLflow's jobs are exclusive per experiment (its job's ``exclusive=["experiment_id"]``): a pass while the previous
job still runs would judge the same traces twice. Here the experiment's ``online_scoring_job`` item names its latest
jobs; a pass submits new ones only when those are finished, claiming the item with a condition on the jobs it
replaces, so two overlapping passes cannot both submit.

Only scorers judging with a gateway model run (MLflow's ``get_active_online_scorers`` filter). Under basic auth
the jobs run as the user who turned the configuration on (its ``created_by``); one without is skipped.
"""

from __future__ import annotations

import json
import logging
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from serverless_mlflow import auth
from serverless_mlflow.core import clock
from serverless_mlflow.jobs import job_queue
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY
from serverless_mlflow.store import job_kinds, scorer_refs
from serverless_mlflow.store import jobs as job_store

log = logging.getLogger(__name__)

ONLINE_CONFIG = ENTITY["online_scoring_config"]
ONLINE_JOB = ENTITY["online_scoring_job"]
SCORER = ENTITY["scorer"]
SCORER_REF = ENTITY["scorer_ref"]
JOB_NAMES = (job_kinds.RUN_ONLINE_TRACE_SCORER,)
# A job stuck PENDING or RUNNING longer than this (a lost message, a worker that died past its retries) no
# longer holds its experiment back: twice the worker's 15-minute limit.
STALE_JOB_MS = 30 * 60 * 1000


def _active_configs() -> Iterator[dict[str, Any]]:
    yield from table.iter_query(**ONLINE_CONFIG.query("active"))


def _latest_version(experiment_id: str, scorer_id: str) -> dict[str, Any] | None:
    ref = table.get(SCORER_REF.key(scorer_id=scorer_id))
    if ref is None or str(ref["experiment_id"]) != experiment_id:
        return None
    items = table.query(**SCORER.query("with_versions", experiment_id=experiment_id, name=ref["name"]))
    versions = [item for item in items if item.get("entity_type") == "scorer_version" and item.get("scorer_id") == scorer_id]
    return max(versions, key=lambda item: int(item["version"])) if versions else None


def online_scorer(config: dict[str, Any]) -> dict[str, Any] | None:
    """MLflow's ``OnlineScorer`` (as ``asdict`` gives it) for an active configuration, or None when its scorer is gone
    or does not judge with a gateway model."""
    experiment_id = str(config["experiment_id"])
    version = _latest_version(experiment_id, config["scorer_id"])
    if version is None:
        return None
    if not scorer_refs.is_gateway_model(scorer_refs.model_of(json.loads(version["serialized_scorer"]))):
        return None
    online_config = {
        "online_scoring_config_id": config["online_scoring_config_id"],
        "scorer_id": config["scorer_id"],
        "sample_rate": float(config["sample_rate"]),
        "experiment_id": experiment_id,
        "filter_string": config.get("filter_string"),
    }
    return {
        "name": version["name"],
        "serialized_scorer": version["serialized_scorer"],
        "online_config": online_config,
        "scorer_version": int(version["version"]),
    }


def _busy(claim: dict[str, Any] | None, now_ms: int) -> bool:
    """The experiment's previous jobs are still pending or running (and not stale)."""
    if claim is None or now_ms - int(claim.get("claimed_at") or 0) > STALE_JOB_MS:
        return False
    for job_id in json.loads(claim["job_id"]):
        item = table.get(job_store.JOB.key(job_id=job_id))
        if item is not None and item["status"] not in job_store.FINALIZED:
            return True
    return False


def _claim(experiment_id: str, workspace: str, previous: dict[str, Any] | None, job_ids: list[str], now_ms: int) -> bool:
    attributes = {"experiment_id": experiment_id, "job_id": json.dumps(job_ids), "workspace": workspace, "claimed_at": now_ms}
    item = ONLINE_JOB.item(attributes, experiment_id=experiment_id)
    if previous is None:
        condition, values = "attribute_not_exists(pk)", None
    else:
        condition, values = "job_id = :previous", {":previous": previous["job_id"]}
    try:
        table.put(item, condition=condition, values=values)
    except table.ConditionFailed:
        return False  # another pass claimed the experiment first
    return True


def dispatch_experiment(experiment_id: str, workspace: str, configs: list[dict[str, Any]], now_ms: int) -> list[str]:
    """Submit the experiment's online scoring jobs unless its previous ones still run; the job ids submitted."""
    claim = table.get(ONLINE_JOB.key(experiment_id=experiment_id))
    if _busy(claim, now_ms):
        return []
    creators = {config.get("created_by") for config in configs}
    creator = sorted(c for c in creators if c)[0] if any(creators) else None
    if creator is None and auth.basic_enabled():
        log.warning("online scoring of experiment %s skipped: its configurations name no user to run as", experiment_id)
        return []
    scorers = [scorer for scorer in map(online_scorer, configs) if scorer is not None]
    if not scorers:
        return []
    job_ids = [job_store.new_job_id() for _ in JOB_NAMES]
    if not _claim(experiment_id, workspace, claim, job_ids, now_ms):
        return []
    params = {"experiment_id": experiment_id, "online_scorers": scorers}
    for job_name, job_id in zip(JOB_NAMES, job_ids, strict=True):
        job_queue.create_and_submit(job_name, params, None, creator, job_id=job_id, workspace=workspace)
    return job_ids


def run_scheduler(now_ms: int | None = None) -> list[str]:
    """One pass over every active configuration (every workspace); the job ids submitted. One experiment's failure
    never stops the pass, as in MLflow's scheduler."""
    now_ms = clock.now_millis() if now_ms is None else now_ms
    by_experiment: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for config in _active_configs():
        by_experiment[(config.get("workspace") or job_store.DEFAULT_WORKSPACE, str(config["experiment_id"]))].append(config)
    submitted: list[str] = []
    for (workspace, experiment_id), configs in by_experiment.items():
        try:
            submitted += dispatch_experiment(experiment_id, workspace, configs, now_ms)
        except Exception:
            log.exception("online scoring of experiment %s could not be dispatched", experiment_id)
    return submitted
