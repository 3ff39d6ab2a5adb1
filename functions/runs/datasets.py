"""The UI's ``experiments/search-datasets``: the datasets logged in some experiments (run filter picker)."""

from __future__ import annotations

from typing import Any

from serverless_mlflow.core.errors import invalid
from serverless_mlflow.core.validation.experiments import parse_experiment_ids
from serverless_mlflow.storage import table
from serverless_mlflow.storage.schema import ENTITY

DATASET = ENTITY["dataset"]
MAX_EXPERIMENT_IDS = 20
MAX_SUMMARIES = 1000


def search_datasets(experiment_ids: list[str]) -> dict[str, Any]:
    """MLflow's ``search_datasets_impl``: one summary per (experiment, name, digest, context), one Query per
    experiment on its ``D#`` items, which collect the contexts of their inputs (``inputs._record_context``)."""
    if not experiment_ids:
        raise invalid("SearchDatasets request must specify at least one experiment_id.")
    if len(experiment_ids) > MAX_EXPERIMENT_IDS:
        raise invalid(
            f"SearchDatasets request cannot specify more than {MAX_EXPERIMENT_IDS} experiment_ids. Received {len(experiment_ids)} experiment_ids."
        )
    # The SQL store's check: every id must parse as an integer (the search answers 400 otherwise).
    parse_experiment_ids(experiment_ids)
    summaries: list[dict[str, Any]] = []
    for experiment_id in dict.fromkeys(str(e) for e in experiment_ids):
        for item in table.query(**DATASET.query("with_parts", experiment_id=experiment_id)):
            if item.get("entity_type") != DATASET.name:
                continue
            summary = {"experiment_id": experiment_id, "name": item["name"], "digest": item["digest"]}
            contexts = sorted(item.get("contexts") or ())
            summaries.extend({**summary, "context": context} for context in contexts)
            if item.get("uncontexted") or not contexts:
                summaries.append(summary)
    summaries = summaries[:MAX_SUMMARIES]
    return {"dataset_summaries": summaries} if summaries else {}
