"""No module of the shared layer or of a feature package imports itself back, and the layer's packages import one
another one way only (tools/import_cycles.py)."""

from __future__ import annotations

from pathlib import Path

from tools import import_cycles


def test_no_package_has_a_load_time_import_cycle() -> None:
    found = {package: import_cycles.package_cycles(base, package) for base, package in import_cycles.packages()}
    assert len(found) > 10  # the layer and every feature were read
    assert {package: at_load for package, (at_load, _) in found.items() if at_load} == {}
    deferred = [group for _, groups in found.values() for group in groups]
    assert deferred == [], "a cycle through a deferred import: break it"


def test_imports_between_the_layers_packages_go_one_way() -> None:
    # A package may lean on those below it, never back: the first line of an import that closes a circle fails.
    assert import_cycles.top_level_cycles(import_cycles.LAYER, "serverless_mlflow") == []


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


def test_the_checker_finds_a_cycle_between_packages(tmp_path: Path) -> None:
    # Guards the package test: two packages that lean on each other, one of them only inside a function, are one
    # circle; a module's import of its own package's sibling is not.
    for folder in ("layer", "layer/low", "layer/high"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "layer/low/a.py").write_text("from layer.low import b\n\n\ndef f():\n    from layer.high import c\n")
    (tmp_path / "layer/low/b.py").write_text("")
    (tmp_path / "layer/high/c.py").write_text("from layer.low import a\n")
    (tmp_path / "layer/alone.py").write_text("from layer.high import c\n")
    assert import_cycles.top_level_cycles(tmp_path, "layer") == [["layer.high", "layer.low"]]
    (tmp_path / "layer/low/a.py").write_text("from layer.low import b\n")
    assert import_cycles.top_level_cycles(tmp_path, "layer") == []
