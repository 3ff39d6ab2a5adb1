"""Regroup the shared layer's top level into packages by concern (issue #43): moves only, re-runnable.

    python -m tools.regroup_layer            # move, rewrite every importer, write the packages' docstrings
    python -m tools.regroup_layer --dry-run  # say what would move, change nothing

``MOVES`` is the whole plan: each top-level module or package of ``serverless_mlflow/`` and the package it moves
into. The script ``git mv``s what has not moved yet, rewrites every reference to a moved module in the repository's
tracked text files (``from serverless_mlflow.x import``, ``import serverless_mlflow.x``, ``from serverless_mlflow
import x``, dotted strings for importlib and monkeypatch, ``serverless_mlflow/x.py`` paths), writes each package's
docstring from ``PACKAGES`` (for a package that stands already, only its ``May import:`` line), then sorts and
formats the touched Python files with ruff. On a regrouped tree it changes nothing. It fails, naming the module,
when the top level holds something ``MOVES`` does not place: add it to the table and run again.
``python -m tools.regroup_check REV`` proves afterwards that only module paths changed.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYER_NAME = "serverless_mlflow"
LAYER = ROOT / "layers" / "shared" / "python" / LAYER_NAME

# Each top-level module or package of serverless_mlflow/ -> the package it moves into (its name stays).
MOVES: dict[str, str] = {
    # core: the ground floor
    "errors": "core",
    "validation": "core",
    "clock": "core",
    "parallel": "core",
    "deferred": "core",
    "checked_http": "core",
    "public_url": "core",
    # request: what a request may say and how it is read
    "routes": "request",
    "route_match": "request",
    "pages": "request",
    "protos": "request",
    "otlp": "request",
    "graphql": "request",
    # storage: the table and the bucket
    "table": "storage",
    "schema": "storage",
    "keys": "storage",
    "layout": "storage",
    "dynamo_limits": "storage",
    "item_size": "storage",
    "stats": "storage",
    "s3": "storage",
    "kms_secrets": "storage",
    "issue_links": "storage",
    # store: entities, as every feature reads and writes them
    "run_metrics": "store",
    "metric_packs": "store",
    "logging_order": "store",
    "run_writes": "store",
    "names": "store",
    "artifact_locations": "store",
    "artifact_listing": "store",
    "assessments": "store",
    "span_content": "store",
    "scorer_refs": "store",
    "scorer_payload": "store",
    "job_kinds": "store",
    # an experiment's issue-detection schedule (its tag, fire times, run tags): what store.experiments keeps
    "issue_schedule": "store",
    "issue_schedule_runs": "store",
    "registry_events": "store",
    "settings": "store",
    # index: what the stream indexer derives, and its readers
    "derived": "index",
    "fts": "index",
    "trace_text": "index",
    "rank_items": "index",
    "ranks": "index",
    "param_ranks": "index",
    "pair_ranks": "index",
    "rank_filters": "index",
    "metric_marks": "index",
    "run_summaries": "index",
    "trace_aggregates": "index",
    "trace_aggregate_writes": "index",
    "trace_metrics": "index",
    # jobs: work handed out of a request
    "job_queue": "jobs",
    "invoke_jobs": "jobs",
    "online_scoring": "jobs",
    "issue_detection_dispatch": "jobs",
    "webhook_http": "jobs",
    # http: the edge every feature Lambda stands behind
    "api": "http",
    "resolver": "http",
    "observability": "http",
    "http_api": "http",
    "server_info": "http",
    "static_files": "http",
    "siblings": "http",
    "bootstrap": "http",
}

# The top level after the regroup, lowest first: what each package holds (a package the regroup makes gets it as its
# docstring; one that stood before keeps its docstring, plus an "Also holds" sentence where given) and the packages
# it may import (its docstring's "May import:" line, which tests/foundation/test_layer_packages.py holds it to).
PACKAGES: dict[str, tuple[str, tuple[str, ...]]] = {
    "core": (
        "The ground floor every package stands on: MLflow's error contract (``errors``) and input validation with its "
        "rules and messages (``validation``), the one wall clock, parallel I/O, imports deferred to first use, and "
        "outbound HTTP to a URL a user named (``public_url`` checks it as MLflow does, ``checked_http`` checks the "
        "peer it connected to).",
        (),
    ),
    "request": (
        "Also holds what else a request may say and how it is read: the route table and its matching (``routes``, "
        "``route_match``), page tokens and paged answers (``pages``), MLflow's protobuf messages (``protos``), OTLP "
        "trace exports (``otlp``) and the web UI's GraphQL documents (``graphql``).",
        ("core",),
    ),
    "storage": (
        "The table and the bucket: table access (``table``, the only code that talks to DynamoDB), the key schema "
        "declared as data (``schema``), key encodings (``keys``), the table's layout version, DynamoDB's limits "
        "(``dynamo_limits``, ``item_size``), request counters (``stats``), S3 (``s3``), values sealed with the "
        "stack's KMS key (``kms_secrets``), and the ``issue_trace`` items a trace implies (``issue_links``, shared "
        "by the issues store, the trace search and the indexer).",
        ("core",),
    ),
    "search": ("", ("core", "request", "storage")),
    "store": (
        "Also holds a run's metric items (``run_metrics``, ``metric_packs``) and logging order, run writes shared by "
        "the features that create runs, random names, artifact locations and listings, assessments and span "
        "content, registered scorers (``scorer_refs``, ``scorer_payload``), the job kinds, registry events and "
        "their outbox, and the server-wide settings.",
        ("core", "request", "storage", "search"),
    ),
    "llm_gateway": ("", ("core", "request", "storage")),
    "index": (
        "What the stream indexer derives from source items, and the readers that share its shapes: ``derived`` "
        "(source item -> derived items), name search (``fts``, ``trace_text``), RANK items and their walks "
        "(``rank_items``, ``ranks``, ``param_ranks``, ``pair_ranks``, ``rank_filters``), the metrics-changed marks "
        "(``metric_marks``), run summaries, trace aggregates (``trace_aggregates`` derives, "
        "``trace_aggregate_writes`` writes) and trace metrics (``trace_metrics``: rollups and their query).",
        ("core", "storage", "search", "store"),
    ),
    "auth": ("", ("core", "request", "storage", "store", "llm_gateway")),
    "jobs": (
        "Work handed out of a request: the jobs queue (``job_queue``: one SQS message per attempt) and what checks "
        "and hands work to it (``invoke_jobs``: the UI's invoke routes; ``online_scoring``: the monitor's minute "
        "dispatcher; ``issue_detection_dispatch``: the scheduled issue detection's) and webhook deliveries (``webhook_http``: "
        "a webhook request sent as MLflow sends it).",
        ("core", "request", "storage", "store", "auth"),
    ),
    "http": (
        "The edge every feature Lambda stands behind: ``api`` (``build_app``: a feature's operations wired into "
        "the resolver with MLflow's wire conventions, auth around each), ``resolver``, ``observability`` (logs, "
        "traces, metrics), what API Gateway holds (``http_api``), server info, the web UI's static files, calls "
        "to sibling functions (``siblings``), and the items a new table needs before its first request "
        "(``bootstrap``, run at deploy and by the local runtime).",
        ("core", "request", "storage", "store", "auth"),
    ),
}

MAY_IMPORT = "May import:"
ALSO_HOLDS = "Also holds"  # opens the table's sentence in the docstring of a package that stood before
THIS_TOOL = {"tools/regroup_layer.py", "tools/regroup_check.py"}


class RegroupError(SystemExit):
    pass


def new_name(old: str) -> str:
    """``x`` -> ``package.x`` for a mapped top-level name."""
    return f"{MOVES[old]}.{old}"


def _check_table() -> None:
    unknown = sorted(set(MOVES.values()) - set(PACKAGES))
    clash = sorted(set(MOVES) & set(PACKAGES))
    if unknown or clash:
        raise RegroupError(f"regroup table: packages without a docstring entry {unknown}; names both moved and packages {clash}")
    for package, (_, allowed) in PACKAGES.items():
        if missing := sorted(set(allowed) - set(PACKAGES)):
            raise RegroupError(f"regroup table: {package} may import unknown packages {missing}")


def _entry(path: Path) -> str | None:
    """The top-level name a file or folder of the layer stands for (None: not a module)."""
    if path.is_dir():
        return path.name if (path / "__init__.py").is_file() else None
    return path.stem if path.suffix == ".py" and path.name != "__init__.py" else None


def plan() -> list[tuple[Path, Path]]:
    """(from, to) of every move still to do; fails loudly on what the table does not place."""
    _check_table()
    todo: list[tuple[Path, Path]] = []
    unplaced = []
    for path in sorted(LAYER.iterdir()):
        name = _entry(path)
        if name is None:
            continue
        if name in PACKAGES:
            continue
        if name not in MOVES:
            unplaced.append(name)
            continue
        target = LAYER / MOVES[name] / path.name
        if target.exists():
            raise RegroupError(f"regroup: {LAYER_NAME}.{name} stands both at {path} and at {target}")
        todo.append((path, target))
    if unplaced:
        names = ", ".join(f"{LAYER_NAME}.{n}" for n in unplaced)
        raise RegroupError(f"regroup: the move table (MOVES in tools/regroup_layer.py) does not place: {names}")
    for old, package in MOVES.items():
        here = [LAYER / package / f"{old}.py", LAYER / package / old / "__init__.py"]
        there = [LAYER / f"{old}.py", LAYER / old / "__init__.py"]
        if not any(p.exists() for p in here + there):
            raise RegroupError(f"regroup: {LAYER_NAME}.{old} is in the move table but in neither place")
    return todo


# --- rewriting references -------------------------------------------------------------------------------------------

_DOTTED = re.compile(rf"(?<![\w.]){LAYER_NAME}\.(\w+)\b")
_PATH = re.compile(rf"(?<![\w.]){LAYER_NAME}/(\w+)(?=\.py\b|/|\b)")
_JOINED = re.compile(rf"""(["']{LAYER_NAME}["']\s*/\s*)(["'])(\w+)((?:\.py)?\2)""")


def rewrite_text(text: str) -> str:
    """Dotted names, ``serverless_mlflow/x`` paths and ``"serverless_mlflow" / "x.py"`` joins of moved modules."""
    text = _DOTTED.sub(lambda m: f"{LAYER_NAME}.{new_name(m[1])}" if m[1] in MOVES else m[0], text)
    text = _PATH.sub(lambda m: f"{LAYER_NAME}/{new_name(m[1]).replace('.', '/')}" if m[1] in MOVES else m[0], text)

    def joined(m: re.Match[str]) -> str:
        if m[3] not in MOVES:
            return m[0]
        q = m[2]
        return f"{m[1]}{q}{MOVES[m[3]]}{q} / {q}{m[3]}{m[4]}"

    return _JOINED.sub(joined, text)


def _split_from_layer(node: ast.ImportFrom, indent: str) -> list[str] | None:
    """``from serverless_mlflow import a, b`` as one statement per package, None when nothing named moves."""
    if not any(alias.name in MOVES for alias in node.names):
        return None
    groups: dict[str, list[str]] = {}
    for alias in node.names:
        module = f"{LAYER_NAME}.{MOVES[alias.name]}" if alias.name in MOVES else LAYER_NAME
        groups.setdefault(module, []).append(alias.name + (f" as {alias.asname}" if alias.asname else ""))
    return [f"{indent}from {module} import {', '.join(names)}" for module, names in groups.items()]


def rewrite_python(text: str, where: str) -> str:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return rewrite_text(text)
    lines = text.splitlines(keepends=True)
    edits: list[tuple[int, int, list[str], str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.level or node.module != LAYER_NAME:
            continue
        indent = lines[node.lineno - 1][: node.col_offset]
        if lines[node.lineno - 1][: node.col_offset].strip():
            raise RegroupError(f"regroup: {where}:{node.lineno}: an import that does not start its line")
        new = _split_from_layer(node, indent)
        if new is not None:
            tail = lines[node.end_lineno - 1][node.end_col_offset :]
            edits.append((node.lineno - 1, node.end_lineno, new, tail))
    for start, end, new, tail in sorted(edits, reverse=True):
        comment = tail.strip()  # a noqa comment (E402) holds for each of the statements the import becomes
        lines[start:end] = [f"{line}  {comment}\n" if comment else f"{line}\n" for line in new]
    return rewrite_text("".join(lines))


def _relative_imports_of_moved_modules() -> None:
    for name in MOVES:
        path = LAYER / f"{name}.py"
        if path.is_file() and any(isinstance(n, ast.ImportFrom) and n.level for n in ast.walk(ast.parse(path.read_text()))):
            raise RegroupError(f"regroup: {LAYER_NAME}.{name} imports relatively: write it absolute, then run again")


def tracked_files() -> list[Path]:
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout.decode()
    return [ROOT / p for p in out.split("\0") if p and p not in THIS_TOOL and (ROOT / p).is_file()]


def rewrite_references() -> list[Path]:
    changed = []
    for path in tracked_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        if LAYER_NAME not in text:
            continue
        new = rewrite_python(text, str(path.relative_to(ROOT))) if path.suffix == ".py" else rewrite_text(text)
        if new != text:
            path.write_text(new)
            changed.append(path)
    return changed


# --- package docstrings ---------------------------------------------------------------------------------------------


def _may_import_line(package: str) -> str:
    allowed = PACKAGES[package][1]
    return f"{MAY_IMPORT} {', '.join(allowed)}." if allowed else f"{MAY_IMPORT} nothing of the layer."


def _wrap(text: str, width: int = 116) -> str:
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "\n".join([*lines, line])


def write_docstrings() -> list[Path]:
    changed = []
    for package, (holds, _) in PACKAGES.items():
        init = LAYER / package / "__init__.py"
        if not init.is_file():
            if not holds:
                raise RegroupError(f"regroup: {LAYER_NAME}.{package} does not stand and the table gives no docstring for it")
            init.parent.mkdir(exist_ok=True)
            init.write_text("")
        text = init.read_text()
        if holds and not holds.startswith(ALSO_HOLDS):  # a package the regroup makes: its docstring is the table's
            new = f'"""{_wrap(holds)}\n\n{_may_import_line(package)}\n"""\n'
        else:
            if ast.get_docstring(ast.parse(text), clean=False) is None or not text.startswith('"""'):
                raise RegroupError(f"regroup: {init} does not open with a docstring to add '{MAY_IMPORT}' to")
            end = text.index('"""', 3)
            body = text[3:end].rstrip().split("\n")
            managed = [i for i, line in enumerate(body) if line.startswith((ALSO_HOLDS, MAY_IMPORT))]
            kept = "\n".join(body[: managed[0]] if managed else body).rstrip()
            also = f"\n\n{_wrap(holds)}" if holds else ""
            new = f'"""{kept}{also}\n\n{_may_import_line(package)}\n"""{text[end + 3 :]}'
        if new != text:
            init.write_text(new)
            changed.append(init)
    return changed


# --- running it -----------------------------------------------------------------------------------------------------


def _git(*args: str) -> None:
    subprocess.run(["git", *args], cwd=ROOT, check=True)


def _drop_leftovers(source: Path) -> None:
    """A moved package's folder that only bytecode caches keep: Python would import it as an empty namespace."""
    if source.is_dir() and not any(p.is_file() and "__pycache__" not in p.parts for p in source.rglob("*")):
        shutil.rmtree(source)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="say what would move, change nothing")
    args = parser.parse_args(argv)
    todo = plan()
    if args.dry_run:
        for source, target in todo:
            print(f"git mv {source.relative_to(ROOT)} {target.relative_to(ROOT)}")
        return 0
    _relative_imports_of_moved_modules()
    for package in PACKAGES:
        (LAYER / package).mkdir(exist_ok=True)
    written = write_docstrings()
    if written:
        _git("add", *(str(p) for p in written))
    for source, target in todo:
        _git("mv", str(source.relative_to(ROOT)), str(target.relative_to(ROOT)))
        _drop_leftovers(source)
    changed = [p for p in rewrite_references() + written if p.suffix == ".py"]
    if changed:
        paths = [str(p.relative_to(ROOT)) for p in changed]
        ruff = str(ROOT / ".venv" / "bin" / "ruff") if (ROOT / ".venv" / "bin" / "ruff").exists() else "ruff"
        subprocess.run([ruff, "check", "--fix", "--select", "I", "--quiet", *paths], cwd=ROOT, check=False)
        subprocess.run([ruff, "format", "--quiet", *paths], cwd=ROOT, check=True)
    print(f"regroup: {len(todo)} moved, {len(changed)} Python files and their references rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
