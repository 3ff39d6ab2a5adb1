"""The pieces every section of the rule table builds on: the ``Rule`` record (check before, hooks around an
operation) and the permission needs several sections share (READ/UPDATE/DELETE on one kind of resource)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from serverless_mlflow.auth import after, resources
from serverless_mlflow.auth.checks import Check, Identity, need
from serverless_mlflow.auth.permissions import DELETE, READ_ACTION, UPDATE

if TYPE_CHECKING:
    from serverless_mlflow.http.api import Request

# Before the operation: may rewrite the request (search_runs narrows experiment_ids) or answer it.
Prepare = Callable[["Request", Identity], "Request | dict[str, Any]"]


@dataclass(frozen=True)
class Rule:
    check: Check
    after: after.After | None = None
    prepare: Prepare | None = None


READ_EXPERIMENT = need(resources.experiment, READ_ACTION)
UPDATE_EXPERIMENT = need(resources.experiment, UPDATE)
READ_RUN = need(resources.run, READ_ACTION)
UPDATE_RUN = need(resources.run, UPDATE)
READ_MODEL = need(resources.registered_model, READ_ACTION)
UPDATE_MODEL = need(resources.registered_model, UPDATE)
READ_VERSION = need(resources.model_version_parent, READ_ACTION)
UPDATE_VERSION = need(resources.model_version_parent, UPDATE)
DELETE_VERSION = need(resources.model_version_parent, DELETE)
READ_LOGGED_MODEL = need(resources.logged_model, READ_ACTION)
UPDATE_LOGGED_MODEL = need(resources.logged_model, UPDATE)
READ_TRACE = need(resources.trace, READ_ACTION)
UPDATE_TRACE = need(resources.trace, UPDATE)
READ_DATASET = need(resources.dataset_experiments, READ_ACTION)
UPDATE_DATASET = need(resources.dataset_experiments, UPDATE)
