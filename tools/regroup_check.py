"""Proof that the layer's regroup (``tools/regroup_layer.py``) moved code and changed nothing else.

    python -m tools.regroup_check REV     # REV: the commit the regroup started from (before the script ran)

Every Python file tracked at REV is found again (at its new path when ``MOVES`` moves it) and compared:

- each top-level definition (function, class, assignment) of a moved module is byte-identical, or identical once
  the module paths in it are written the new way, or identical but for the lines of imports inside it (split by
  package and re-sorted), or so once ruff format has laid the rewritten text out;
- every file, moved or not, is the same text once module paths are written the new way (dotted names, paths,
  ``"serverless_mlflow" / "x.py"`` joins) and ruff format has laid it out, import lines aside; and its imports,
  read as the set of names each block binds, are the same (so importers changed only where they name a moved
  module);
- the only new Python files are the new packages' ``__init__.py``, holding a docstring and nothing else; a package
  that stood before may have a new docstring (the table's sentences), its code the same.

It prints the counts and exits 1 naming each file or definition that differs.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys

from tools.regroup_layer import LAYER, LAYER_NAME, MOVES, PACKAGES, ROOT, rewrite_text

LAYER_REL = LAYER.relative_to(ROOT).as_posix()
_STATEMENT_LISTS = ("body", "orelse", "finalbody")


def moved_path(path: str) -> str:
    """A file's path after the regroup (unchanged when it is not under a moved module)."""
    prefix = f"{LAYER_REL}/"
    if not path.startswith(prefix):
        return path
    rest = path[len(prefix) :]
    head, _, tail = rest.partition("/")
    name = head[:-3] if head.endswith(".py") and not tail else head
    if name not in MOVES:
        return path
    return f"{prefix}{MOVES[name]}/{rest}"


def _bound(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str, str]]:
    """(module, name, as) of each name the import binds, module paths written the new way."""
    if isinstance(node, ast.Import):
        return [(rewrite_text(a.name), "", a.asname or "") for a in node.names]
    module = "." * node.level + rewrite_text(node.module or "")
    out = []
    for alias in node.names:
        here = f"{LAYER_NAME}.{MOVES[alias.name]}" if module == LAYER_NAME and alias.name in MOVES else module
        out.append((here, alias.name, alias.asname or ""))
    return out


class _Canon(ast.NodeTransformer):
    """Module paths in strings written the new way; each run of imports one sorted set of bound names."""

    def visit_Constant(self, node: ast.Constant) -> ast.AST:
        if isinstance(node.value, str):
            return ast.copy_location(ast.Constant(rewrite_text(node.value)), node)
        return node

    def generic_visit(self, node: ast.AST) -> ast.AST:
        super().generic_visit(node)
        for field in _STATEMENT_LISTS:
            statements = getattr(node, field, None)
            if isinstance(statements, list) and statements and isinstance(statements[0], ast.stmt):
                setattr(node, field, self._merge_imports(statements))
        return node

    @staticmethod
    def _merge_imports(statements: list[ast.stmt]) -> list[ast.stmt]:
        out: list[ast.stmt] = []
        run: list[tuple[str, str, str]] = []
        for statement in [*statements, None]:
            if isinstance(statement, (ast.Import, ast.ImportFrom)):
                run.extend(_bound(statement))
                continue
            if run:
                out.append(ast.Expr(ast.Constant(repr(sorted(run)))))
                run = []
            if statement is not None:
                out.append(statement)
        return out


def canonical(node: ast.AST) -> str:
    return ast.dump(_Canon().visit(node), include_attributes=False)


def _definitions(tree: ast.Module, text: str) -> dict[str, tuple[ast.stmt, str]]:
    """Top-level functions, classes and assignments by name, with their source (decorators included)."""
    lines = text.splitlines(keepends=True)
    out: dict[str, tuple[ast.stmt, str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [ast.unparse(target) for target in node.targets]
        elif isinstance(node, ast.AnnAssign):
            names = [ast.unparse(node.target)]
        else:
            continue
        start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        source = "".join(lines[start - 1 : node.end_lineno])
        for name in names:
            if name in out:
                name = f"{name}@{node.lineno}"
            out[name] = (node, source)
    return out


def _without_imports(text: str) -> str:
    """The text with the lines of every import statement, and blank lines, left out (ruff re-sorts import blocks)."""
    skip: set[int] = set()
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            skip.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return "".join(line for n, line in enumerate(text.splitlines(keepends=True), 1) if n not in skip and line.strip())


def _formatted(text: str, path: str) -> str:
    """``text`` as ruff format lays it out (the regroup formats what it rewrote: a longer path may wrap a line)."""
    ruff = ROOT / ".venv" / "bin" / "ruff"
    command = [str(ruff) if ruff.exists() else "ruff", "format", "--stdin-filename", path, "-"]
    return subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True, input=text).stdout


def _code(tree: ast.Module) -> list[ast.stmt]:
    """A module's statements without its docstring."""
    return tree.body[1:] if ast.get_docstring(tree, clean=False) is not None else tree.body


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def _blobs(rev: str) -> dict[str, str]:
    """The text of every Python file tracked at ``rev``, read in one ``git cat-file --batch``."""
    rows = [line.split(None, 3) for line in _git("ls-tree", "-r", rev).splitlines()]
    paths = {path: sha for _, kind, sha, path in rows if kind == "blob" and path.endswith(".py")}
    wanted = "\n".join(sorted(set(paths.values())))
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=ROOT, check=True, capture_output=True, input=wanted.encode()).stdout
    texts: dict[str, str] = {}
    at = 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        sha, _, size = out[at:header_end].decode().split()
        texts[sha] = out[header_end + 1 : header_end + 1 + int(size)].decode()
        at = header_end + 1 + int(size) + 1
    return {path: texts[sha] for path, sha in paths.items()}


def check(rev: str) -> int:
    failures: list[str] = []
    counts = {"identical": 0, "paths rewritten": 0, "imports inside regrouped": 0, "laid out anew by ruff": 0}
    blobs = _blobs(rev)
    old_files = sorted(blobs)
    expected_new = {moved_path(p) for p in old_files}
    moved_files = 0
    package_inits = {f"{LAYER_REL}/{package}/__init__.py" for package in PACKAGES}
    for old in old_files:
        new = moved_path(old)
        target = ROOT / new
        if not target.is_file():
            failures.append(f"{old}: not found at {new}")
            continue
        old_text, new_text = blobs[old], target.read_text()
        try:
            old_tree, new_tree = ast.parse(old_text), ast.parse(new_text)
        except SyntaxError as error:
            failures.append(f"{old}: does not parse ({error})")
            continue
        if new != old:
            moved_files += 1
            old_defs, new_defs = _definitions(old_tree, old_text), _definitions(new_tree, new_text)
            if set(old_defs) != set(new_defs):
                failures.append(f"{new}: definitions differ: {sorted(set(old_defs) ^ set(new_defs))}")
            for name in sorted(set(old_defs) & set(new_defs)):
                old_source, new_source = old_defs[name][1], new_defs[name][1]
                if old_source == new_source:
                    counts["identical"] += 1
                elif rewrite_text(old_source) == new_source:
                    counts["paths rewritten"] += 1
                elif _without_imports(rewrite_text(old_source)) == _without_imports(new_source):
                    counts["imports inside regrouped"] += 1
                elif _without_imports(_formatted(rewrite_text(old_source), new)) == _without_imports(new_source):
                    counts["laid out anew by ruff"] += 1
                else:
                    failures.append(f"{new}: {name} is not the same definition")
        package_init = new in package_inits
        if package_init:  # its docstring gained the table's sentences: compare the code under it
            old_tree.body, new_tree.body = _code(old_tree), _code(new_tree)
        if package_init:
            if canonical(old_tree) != canonical(new_tree):
                failures.append(f"{new}: its code differs from {rev}:{old}")
        elif _without_imports(rewrite_text(old_text)) != _without_imports(new_text):
            if _without_imports(_formatted(rewrite_text(old_text), new)) != _without_imports(new_text):
                failures.append(f"{new}: differs from {rev}:{old} beyond module paths and import lines")
            elif canonical(ast.parse(rewrite_text(old_text))) != canonical(new_tree):
                failures.append(f"{new}: its imports bind other names than at {rev}:{old}")
    tracked_now = {p for p in _git("ls-files").splitlines() if p.endswith(".py")}
    allowed_new = {f"{LAYER_REL}/{package}/__init__.py" for package in PACKAGES}
    for path in sorted(tracked_now - expected_new):
        if path not in allowed_new:
            failures.append(f"{path}: a new Python file")
            continue
        tree = ast.parse((ROOT / path).read_text())
        if len(tree.body) != 1 or ast.get_docstring(tree) is None:
            failures.append(f"{path}: a new package's __init__.py holds more than its docstring")
    print(f"regroup check against {rev}: {len(old_files)} Python files compared, {moved_files} of them moved")
    print("definitions of the moved modules: " + ", ".join(f"{n} {what}" for what, n in counts.items()))
    for failure in failures:
        print(f"FAIL {failure}")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev", help="the commit the regroup started from")
    return check(parser.parse_args(argv).rev)


if __name__ == "__main__":
    sys.exit(main())
