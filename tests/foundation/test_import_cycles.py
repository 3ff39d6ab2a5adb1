"""No module of the shared layer or of a feature package imports itself back while it loads (tools/import_cycles.py)."""

from __future__ import annotations

from pathlib import Path

from tools import import_cycles

# Closes only through an import inside a function: request.workspace.resolve looks the header's workspace up in
# the store on first use, so that the request layer does not load the store at cold start.
KNOWN_DEFERRED = [["serverless_mlflow.request.workspace", "serverless_mlflow.store.jobs", "serverless_mlflow.store.workspaces"]]


def test_no_package_has_a_load_time_import_cycle() -> None:
    found = {package: import_cycles.package_cycles(base, package) for base, package in import_cycles.packages()}
    assert len(found) > 10  # the layer and every feature were read
    assert {package: at_load for package, (at_load, _) in found.items() if at_load} == {}
    deferred = [group for _, groups in found.values() for group in groups]
    assert deferred == KNOWN_DEFERRED, "a new cycle through a deferred import: break it, or explain it here"


def test_the_checker_finds_a_cycle(tmp_path: Path) -> None:
    # Guards the test above: a two-module circle written the way features import each other is reported.
    package = tmp_path / "feature"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import c\nfrom .a import x\n")
    (package / "c.py").write_text("def f():\n    from . import b\n")
    at_load, deferred = import_cycles.package_cycles(tmp_path, "feature")
    assert at_load == [["feature.a", "feature.b"]]
    assert deferred == []  # b -> c is only for type checking
