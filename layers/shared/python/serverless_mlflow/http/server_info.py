"""What ``/api/3.0/mlflow/server-info`` and ``/version`` advertise."""

from __future__ import annotations

import os
from typing import Any

from serverless_mlflow.request import workspace as request_workspace

# The MLflow REST API level this server implements (``/version``); the client only reads it to decide
# whether OTLP span upload exists (>= 3.4: spans go to /v1/traces, served by the traces feature).
MLFLOW_API_VERSION = "3.17.2"


def artifacts_presigned() -> bool:
    return os.environ.get("ARTIFACTS_PRESIGNED", "true").lower() == "true"


GATEWAY_DISABLED = "The AI Gateway feature is disabled. Set MLFLOW_ENABLE_AI_GATEWAY=true to enable it."


def gateway_enabled() -> bool:
    """MLflow's ``MLFLOW_ENABLE_AI_GATEWAY`` (default on), read with MLflow's boolean rule (``true``/``1``). Off, the
    gateway's routes answer ``GATEWAY_DISABLED`` and server-info says so, so the UI hides its Judges tab, Playground
    and AI Gateway page."""
    return os.environ.get("MLFLOW_ENABLE_AI_GATEWAY", "true").strip().lower() in ("true", "1")


# What MLflow names a store with every tracking feature (its SqlAlchemyStore). The 3.18 UI shows the Issues tab (and
# the Overview's issue counts) only for "SqlStore", and MLflow's own client reads the field for telemetry only;
# this store serves everything those need (issues, detection jobs), so it answers as a SQL store would.
STORE_TYPE = "SqlStore"


def server_info() -> dict[str, Any]:
    from serverless_mlflow.store import trace_archival_config  # the settings' validation: this route only

    presigned = artifacts_presigned()
    return {
        "store_type": STORE_TYPE,
        "workspaces_enabled": request_workspace.enabled(),
        "trace_archival_enabled": trace_archival_config.enabled(),
        "multipart_uploads_enabled": presigned,
        "multipart_downloads_enabled": presigned,
        "artifacts_presigned_only": presigned,
        "artifact_serving_enabled": True,
        "presigned_upload_run_id_supported": True,
        "presigned_upload_model_id_supported": True,
        # MLflow 3.18: whether a saved issue-detection schedule runs here. It does: the monitor (EventBridge
        # Scheduler; ``make serve``'s timer) dispatches it and the job worker runs it.
        "features_enabled": {"gateway": gateway_enabled(), "scheduled_issue_detection": True},
    }
