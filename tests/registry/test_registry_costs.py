"""DynamoDB work per registry operation (``table.STATS``), measured on the domain functions the
handlers call, so the indexer and HTTP layers do not blur the figures. The bounds are the design:
they fail if an operation starts reading or writing more than planned."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import unique

pytestmark = pytest.mark.e2e


def _measure(fn: Any) -> dict[str, Any]:
    from serverless_mlflow.storage import table

    table.STATS.reset()
    fn()
    return table.STATS.snapshot()


def test_registry_operation_costs(server: str, record_property: Any) -> None:
    from registry import models, version_create, versions

    name = unique("cost")
    models.create_registered_model(name, {}, "")
    version_create.create_model_version({"name": name, "source": "s3://bucket/warmup"})

    create = _measure(lambda: version_create.create_model_version({"name": name, "source": "s3://bucket/model"}))
    alias = _measure(lambda: models.set_registered_model_alias(name, "champion", "2"))
    by_alias = _measure(lambda: versions.get_model_version_by_alias(name, "champion"))
    download = _measure(lambda: versions.get_model_version_download_uri(name, "2"))
    get_model = _measure(lambda: models.get_registered_model(name))
    for label, stats in [
        ("create_model_version", create),
        ("set_alias", alias),
        ("get_by_alias", by_alias),
        ("get_download_uri", download),
        ("get_registered_model", get_model),
    ]:
        record_property(label, stats)
        print(label, stats)

    # create: GetItem META + one TransactWriteItems (META increment + version put + its registry event).
    assert create["requests"] == {"GetItem": 1, "TransactWriteItems": 1}
    assert create["items_written"] == 3
    # set alias: one TransactWriteItems (2 condition checks + the alias put + its registry event).
    assert alias["requests"] == {"TransactWriteItems": 1} and alias["items_written"] == 2
    # get by alias: Query (aliases + META) + Query (version + its tags).
    assert by_alias["requests"] == {"Query": 2}
    assert download["requests"] == {"Query": 2}
    # get model: head Query + one stage-LSI Query per stage + the tags of each latest version.
    assert get_model["requests"]["Query"] <= 1 + 4 + 4
