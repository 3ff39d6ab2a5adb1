"""Prefix reads are sent as key ranges (DynamoDB Local walks the whole partition for ``begins_with``): the
range must return exactly the items whose sort key starts with the prefix, in either direction and in
pages of any size, on DynamoDB Local."""

from __future__ import annotations

import pytest

from tests.conftest import unique

TOP = "\U0010ffff"
SORT_KEYS = [
    "A",
    "A!",
    "A#",
    "A#a",
    "A#b#1",
    "A#b#2",
    "A#\ud7ff",
    "A#\ue000",
    "A#" + TOP,
    "A#" + TOP + "z",
    "A$",
    "A$#",
    "B",
    "\ud7ff",
    "\ue000",
    TOP,
    TOP + TOP,
    TOP + TOP + "x",
]
PREFIXES = ["A", "A#", "A#b#", "A#" + TOP, "A$", "\ud7ff", TOP, TOP + TOP, "Z"]


def test_prefix_successor() -> None:
    from serverless_mlflow.storage.table import prefix_successor

    assert prefix_successor("R#abc#") == "R#abc$"
    assert prefix_successor("x" + TOP) == "y"
    assert prefix_successor("\ud7ff") == "\ue000"
    assert prefix_successor(TOP + TOP) is None


@pytest.mark.parametrize("prefix", PREFIXES)
@pytest.mark.parametrize("forward", [True, False])
def test_a_prefix_read_returns_exactly_the_prefixed_keys(server: str, prefix: str, forward: bool) -> None:
    from serverless_mlflow.storage import table

    pk = unique("PREFIX#")
    table.batch_write([{"pk": pk, "sk": sk} for sk in SORT_KEYS])
    expected = sorted((sk for sk in SORT_KEYS if sk.startswith(prefix)), key=lambda s: s.encode(), reverse=not forward)
    assert [item["sk"] for item in table.query(pk, prefix, forward=forward)] == expected
    for size in (1, 2, 3):
        pages = [[item["sk"] for item in page] for page, _ in table.query_pages(pk, prefix, forward=forward, page_size=size)]
        assert [sk for page in pages for sk in page] == expected
        limited = [item["sk"] for item in table.query(pk, prefix, forward=forward, limit=size)]
        assert limited == expected[:size]
