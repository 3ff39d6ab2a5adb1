"""Import cycles inside the shared layer (``serverless_mlflow``) and inside each feature package (``functions/<feature>``).

``python -m tools.import_cycles`` prints every cycle (strongly connected group of modules), first those of imports that
run when a module loads, then those that only close through an import inside a function (deferred: no load-order
problem, but still modules that lean on each other), then cycles between the layer's top-level packages (any import
counts: between two packages imports go one way). ``typing.TYPE_CHECKING`` imports are not followed. Importing a
submodule also initializes its parent packages; that implicit edge is not counted (a package's ``__init__`` may
gather its own submodules).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER = ROOT / "layers" / "shared" / "python"
FUNCTIONS = ROOT / "functions"


@dataclass(frozen=True)
class Edge:
    target: str
    deferred: bool  # inside a function body


def modules_under(base: Path, package: str) -> dict[str, Path]:
    """Dotted module name -> file, for ``package`` found under ``base``."""
    out: dict[str, Path] = {}
    for path in sorted((base / Path(*package.split("."))).rglob("*.py")):
        parts = path.relative_to(base).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import with whether it is deferred (in a function); TYPE_CHECKING blocks skipped."""

    def walk(node: ast.AST, deferred: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for other in child.orelse:
                    yield from walk(other, deferred)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child, deferred
            yield from walk(child, deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    yield from walk(tree, False)


def edges_of(name: str, path: Path, known: dict[str, Path]) -> set[Edge]:
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    out: set[Edge] = set()
    for node, deferred in _imports(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, *([base] if base else [])])
            # ``from pkg import sub`` names a submodule when one exists, else something pkg itself defines.
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names]
        out.update(Edge(target, deferred) for target in targets if target in known and target != name)
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each sorted, in name order."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def package_cycles(base: Path, package: str) -> tuple[list[list[str]], list[list[str]]]:
    """(cycles of load-time imports, cycles that need a deferred import too) inside ``package``."""
    known = modules_under(base, package)
    edges = {name: edges_of(name, path, known) for name, path in known.items()}
    eager = {name: {e.target for e in out if not e.deferred} for name, out in edges.items()}
    every = {name: {e.target for e in out} for name, out in edges.items()}
    at_load = cycles(eager)
    return at_load, [group for group in cycles(every) if group not in at_load]


def top_level_cycles(base: Path, package: str) -> list[list[str]]:
    """Cycles between the top-level entries of ``package`` (each subpackage taken whole, each module alone), through
    any import, deferred or not: the imports between two entries must go one way."""
    known = modules_under(base, package)
    depth = package.count(".") + 2

    def entry(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        targets = {entry(edge.target) for edge in edges_of(name, path, known)}
        graph.setdefault(entry(name), set()).update(targets - {entry(name), package})
    return cycles(graph)


def packages() -> list[tuple[Path, str]]:
    features = sorted(p.name for p in FUNCTIONS.iterdir() if (p / "__init__.py").is_file() or (p / "handler.py").is_file())
    return [(LAYER, "serverless_mlflow"), *((FUNCTIONS, feature) for feature in features)]


def main() -> int:
    status = 0
    for base, package in packages():
        at_load, deferred = package_cycles(base, package)
        for group in at_load:
            status = 1
            print(f"{package}: load-time cycle: {' <-> '.join(group)}")
        for group in deferred:
            print(f"{package}: cycle through a deferred import: {' <-> '.join(group)}")
    for group in top_level_cycles(LAYER, "serverless_mlflow"):
        status = 1
        print(f"serverless_mlflow: cycle between packages: {' <-> '.join(group)}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
