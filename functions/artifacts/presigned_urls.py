"""``artifacts/presigned-upload-url`` and ``presigned-download-url`` (SageMaker's plugin, and the 3.18 web UI).

MLflow mints these only for runs and logged models whose artifacts live in cloud storage the *server* signs for,
and refuses proxied (``mlflow-artifacts:``, ``http(s)``) locations with a 400. Every location this stack creates is
``mlflow-artifacts:`` (the client then uploads through the proxied multipart routes), so the answer is MLflow's
refusal. A location in other cloud storage gets a 400 as well: the artifacts function may sign only under the stack's
own prefix (least privilege), never in a bucket a user names.
"""

from __future__ import annotations

from urllib.parse import urlparse

from serverless_mlflow.core.errors import MlflowError, invalid
from serverless_mlflow.store import logged_models, runs
from serverless_mlflow.store.artifact_locations import safe_relative_path

MAX_EXPIRATION_SECONDS = 604800
PROXIED_SCHEMES = ("http", "https", "mlflow-artifacts")


def _refuse(direction: str, uri: str | None, subject: str) -> MlflowError:
    scheme = urlparse(uri or "").scheme
    if scheme in PROXIED_SCHEMES:
        if direction == "upload":
            return invalid(
                f"Presigned upload is not supported for proxied artifact storage (artifact URI scheme: {scheme}). "
                "This endpoint requires a direct cloud storage artifact URI."
            )
        return invalid(
            f"Presigned download is not supported for runs with proxied artifact storage (artifact URI scheme: {scheme}). "
            "This endpoint requires a run with a direct cloud storage artifact URI."
        )
    return invalid(
        f"Presigned {direction} URLs for {subject}'s artifact location {uri!r} are not issued by this server: it signs only "
        "its own 'mlflow-artifacts:' storage, which clients reach through the proxied artifact routes."
    )


def upload_url(run_id: str, model_id: str, path: str) -> MlflowError:
    """MLflow's checks in its order (exactly one owner, safe path, the owner exists), then the refusal."""
    if bool(run_id) == bool(model_id):
        raise invalid("Exactly one of run_id and model_id must be provided.")
    safe_relative_path(path)
    if run_id:
        return _refuse("upload", runs.get_run_item(run_id).get("artifact_uri"), f"run '{run_id}'")
    return _refuse("upload", logged_models.get_logged_model(model_id).get("artifact_location"), f"logged model '{model_id}'")


def download_url(run_id: str, path: str, expiration: int | None) -> MlflowError:
    safe_relative_path(path)
    if expiration is not None and not 1 <= expiration <= MAX_EXPIRATION_SECONDS:
        raise invalid(f"expiration must be between 1 and {MAX_EXPIRATION_SECONDS} seconds (got {expiration}).")
    return _refuse("download", runs.get_run_item(run_id).get("artifact_uri"), f"run '{run_id}'")
