"""The shared layer's top level: a few packages, one per concern, that import one another one way (issue #43).

Each package's docstring says what it holds and, on its ``May import:`` line, which packages of the layer it may
import; the code is held to that line, so a new arrow between packages is a decision written down, not a drift.
"""

from __future__ import annotations

import ast
import re

from tools import import_cycles

LAYER = import_cycles.LAYER / "serverless_mlflow"
MAX_ENTRIES = 12


def _entries() -> list[str]:
    return sorted(p.name for p in LAYER.iterdir() if p.name != "__pycache__" and (p.suffix == ".py" or (p / "__init__.py").is_file()))


def _packages() -> list[str]:
    return [name for name in _entries() if (LAYER / name / "__init__.py").is_file()]


def _may_import(package: str) -> set[str]:
    docstring = ast.get_docstring(ast.parse((LAYER / package / "__init__.py").read_text())) or ""
    lines = [line for line in docstring.splitlines() if line.startswith("May import:")]
    assert len(lines) == 1, f"serverless_mlflow.{package}: its docstring names the packages it may import on one 'May import:' line"
    return set(re.findall(r"\w+", lines[0].removeprefix("May import:"))) - {"nothing", "of", "the", "layer"}


def _imported_packages() -> dict[str, set[str]]:
    """Package -> the layer's packages its modules import (any import: at load or inside a function)."""
    known = import_cycles.modules_under(import_cycles.LAYER, "serverless_mlflow")
    out: dict[str, set[str]] = {}
    for name, path in known.items():
        parts = name.split(".")
        if len(parts) < 2:
            continue
        for edge in import_cycles.edges_of(name, path, known):
            target = edge.target.split(".")
            if len(target) > 1 and target[1] != parts[1]:
                out.setdefault(parts[1], set()).add(target[1])
    return out


def test_the_top_level_holds_at_most_twelve_entries() -> None:
    entries = _entries()
    assert len(entries) <= MAX_ENTRIES, f"the layer's top level holds {len(entries)} entries: {entries}"
    assert [name for name in entries if name.endswith(".py")] == ["__init__.py"], "every module stands in a package"


def test_each_package_imports_only_what_its_docstring_allows() -> None:
    packages = _packages()
    allowed = {package: _may_import(package) for package in packages}
    assert all(names <= set(packages) for names in allowed.values()), allowed
    found = _imported_packages()
    beyond = {package: sorted(found.get(package, set()) - allowed[package]) for package in packages}
    assert {package: names for package, names in beyond.items() if names} == {}


def test_the_declared_imports_go_one_way() -> None:
    # The docstrings themselves form no circle: an order exists in which each package imports only earlier ones.
    graph = {package: _may_import(package) for package in _packages()}
    assert import_cycles.cycles(graph) == []
    assert all(package not in names for package, names in graph.items())
