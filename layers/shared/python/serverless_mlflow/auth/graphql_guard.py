"""Basic auth inside ``/graphql``: MLflow's ``GraphQLAuthorizationMiddleware`` (mlflow/server/auth/__init__.py).

MLflow authorizes a GraphQL request field by field, as graphene resolves it, so every id the executed
document names is judged wherever it is written: inline in the text, in variables, under an alias, in a
fragment, in any of several operations. Here the executor asks this guard before each root field with the
arguments it is about to resolve with (variables substituted), and hands it nested values to filter. A
denied root field answers null without an error, as MLflow's middleware returns None. Root fields this guard
does not know are denied to non-admins (fail closed: a resolver added later is never open by accident).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from serverless_mlflow.auth.checks import Identity, is_admin, permissions_on
from serverless_mlflow.auth.permissions import EXPERIMENT, READ_ACTION, REGISTERED_MODEL
from serverless_mlflow.auth.resources import Resource, model_kind, runs_of
from serverless_mlflow.request.graphql import input_of


class FieldGuard:
    def __init__(self, identity: Identity) -> None:
        self.identity = identity
        self._admin: bool | None = None
        self._model_kinds: dict[str, str | None] = {}

    @property
    def admin(self) -> bool:
        if self._admin is None:
            self._admin = is_admin(self.identity)
        return self._admin

    def root(self, field_name: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        if self.admin:
            return arguments
        judge = ROOT_FIELDS.get(field_name)
        return judge(self, arguments) if judge is not None else None

    def child(self, type_name: str, field_name: str, value: Any) -> Any:
        if (type_name, field_name) == ("MlflowRunExtension", "modelVersions") and value and not self.admin:
            return self._readable_versions(value)
        return value

    # --- judgements ----------------------------------------------------------------------------------

    def readable(self, resources: list[Resource]) -> list[bool]:
        return [permission.allows(READ_ACTION) for permission in permissions_on(self.identity, resources)] if resources else []

    def _readable_versions(self, versions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``run.modelVersions`` lists versions of any model registered from the run: keep the readable ones
        (a prompt's versions are judged by prompt grants, as MLflow's ``_rm_or_prompt_version_read_predicate``)."""
        names = [str(version.get("name", "")) for version in versions]
        for name in set(names) - set(self._model_kinds):
            self._model_kinds[name] = model_kind(name)
        allowed = self.readable([(self._model_kinds[name] or REGISTERED_MODEL, name) for name in names])
        return [version for version, ok in zip(versions, allowed, strict=True) if ok]


Judge = Callable[[FieldGuard, dict[str, Any]], "dict[str, Any] | None"]


def _get_experiment(guard: FieldGuard, arguments: dict[str, Any]) -> dict[str, Any] | None:
    experiment_id = input_of(arguments).get("experiment_id")
    if not experiment_id:
        return arguments  # no resource named: the resolver answers its own error
    return arguments if all(guard.readable([(EXPERIMENT, str(experiment_id))])) else None


def _runs_readable(guard: FieldGuard, run_ids: list[Any]) -> bool:
    """Every run must exist and be readable: an unknown run is denied, so null is no oracle for run ids."""
    located = runs_of(run_ids)
    return located is not None and all(guard.readable(located))


def _get_run(guard: FieldGuard, arguments: dict[str, Any]) -> dict[str, Any] | None:
    given = input_of(arguments)
    run_id = given.get("run_id") or given.get("run_uuid")
    if not run_id:
        return arguments
    return arguments if _runs_readable(guard, [run_id]) else None


def _metric_history(guard: FieldGuard, arguments: dict[str, Any]) -> dict[str, Any] | None:
    run_ids = input_of(arguments).get("run_ids") or []
    if not isinstance(run_ids, list):
        run_ids = [run_ids]
    return arguments if _runs_readable(guard, run_ids) else None


def _search_experiments(guard: FieldGuard, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """Searches of runs and of datasets: the named experiments narrowed to the readable ones (MLflow rewrites
    ``input.experiment_ids``); none readable answers null."""
    given = input_of(arguments)
    experiment_ids = given.get("experiment_ids") or []
    if not isinstance(experiment_ids, list):
        experiment_ids = [experiment_ids]
    if not experiment_ids:
        return arguments
    allowed = guard.readable([(EXPERIMENT, str(i)) for i in experiment_ids])
    readable = [i for i, ok in zip(experiment_ids, allowed, strict=True) if ok]
    if not readable:
        return None
    return {"input": {**given, "experiment_ids": readable}}


# Root fields of the executor's schema (functions/runs/graphql_api.ROOTS) and how each is judged.
ROOT_FIELDS: dict[str, Judge] = {
    "mlflowGetExperiment": _get_experiment,
    "mlflowGetRun": _get_run,
    "mlflowGetMetricHistoryBulkInterval": _metric_history,
    "mlflowSearchRuns": _search_experiments,
    "mlflowListArtifacts": _get_run,
    "mlflowSearchDatasets": _search_experiments,
}


def for_identity(identity: Identity | None) -> FieldGuard | None:
    """The guard of a basic-auth request (None when basic auth is off: nothing to judge)."""
    return FieldGuard(identity) if identity is not None else None
