"""MLflow's routes per client version against ours: the reference dump and the generated docs.

``python -m tools.route_coverage dump`` asks each supported mlflow (the venvs of ``tools.client_venvs``, plus the
project's own) for its server's routes (the Flask app's rules and, from 3.x, the FastAPI app's) and writes them to
``docs/data/mlflow-routes.json``, the committed reference. ``python -m tools.route_coverage`` (also run by
``tools.gen_docs``) regenerates, from that file and ``routes.ROUTES``, the route table of ``docs/compatibility.md``
and the README's list of what is not served, between their ``route-coverage`` markers, so neither can drift.
``python -m tools.route_coverage clients`` writes the pass counts of the last ``make test-clients`` into
``docs/compatibility.md`` (``client-results`` markers).

A *logical route* is a method and a path with its parameters unnamed: MLflow serves most REST routes under both
``/api/`` and ``/ajax-api/``, which count once; HEAD and OPTIONS are left out.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "docs" / "data" / "mlflow-routes.json"
COMPATIBILITY = ROOT / "docs" / "compatibility.md"
README = ROOT / "README.md"
BEGIN, END = "<!-- route-coverage:begin -->", "<!-- route-coverage:end -->"

# Run under each mlflow's interpreter: its server's routes as [method, path] pairs.
_DUMP = r"""
import json, os, sys
os.environ.setdefault("MLFLOW_TRACKING_URI", "sqlite:///:memory:")
os.environ.setdefault("MLFLOW_FLASK_SERVER_SECRET_KEY", "route-dump-only")
os.environ.setdefault("MLFLOW_AUTH_ADMIN_PASSWORD", "route-dump-only-password")
from mlflow.server import app as flask_app
routes = set()
for rule in flask_app.url_map.iter_rules():
    for method in rule.methods - {"HEAD", "OPTIONS"}:
        routes.add((method, rule.rule))
try:
    from mlflow.server.fastapi_app import app as fastapi_app
except ImportError:
    fastapi_app = None
def walk(items, prefix=""):
    for route in items:
        if hasattr(route, "original_router"):  # newer FastAPI keeps included routers whole
            yield from walk(route.original_router.routes, prefix + (route.include_context.prefix or ""))
        elif getattr(route, "methods", None):
            yield from ((m, prefix + route.path) for m in route.methods)
for method, path in walk(getattr(fastapi_app, "routes", [])):
    if method not in ("HEAD", "OPTIONS"):
        routes.add((method, path))
# The basic-auth app (mlflow server --app-name basic-auth) adds its users, permissions and roles routes.
before = {r.rule for r in flask_app.url_map.iter_rules()}
try:
    import flask_wtf  # noqa: F401
except ImportError:  # mlflow[auth]'s CSRF extension is not in a client venv; only the routes are wanted here
    import types
    class _CSRF:
        def __init__(self, *a, **k): pass
        def init_app(self, *a, **k): pass
        def exempt(self, view): return view
    stub, csrf = types.ModuleType("flask_wtf"), types.ModuleType("flask_wtf.csrf")
    csrf.CSRFProtect = stub.CSRFProtect = _CSRF
    csrf.generate_csrf = lambda *a, **k: ""
    sys.modules.update({"flask_wtf": stub, "flask_wtf.csrf": csrf})
try:
    from mlflow.server.auth import create_app
    create_app(flask_app)
except Exception as error:  # noqa: BLE001
    print(f"basic-auth routes not collected: {error!r}", file=sys.stderr)
for rule in flask_app.url_map.iter_rules():
    if rule.rule not in before:
        for method in rule.methods - {"HEAD", "OPTIONS"}:
            routes.add((method, rule.rule))
import mlflow
json.dump({"version": mlflow.__version__, "routes": sorted(routes)}, sys.stdout)
"""

# Routes of the web server itself rather than of MLflow's API (static files have their own served equivalents).
_IGNORED = re.compile(r"^/(static-files/|build/|favicon|docs|openapi|redoc)|^/$")


def normalize(method: str, path: str) -> tuple[str, str]:
    """(method, path) with parameters unnamed (``<x>``, ``<path:x>``, ``{x}``, ``{x+}``, ``{x:path}`` -> ``{}``)."""
    path = path.replace("/2.0mlflow/", "/2.0/mlflow/")  # a misspelt alias MLflow registers for search-datasets
    path = re.sub(r"<(?:\w+:)?\w+>", "{}", path)
    path = re.sub(r"\{\w+(?:\+|:path)?\}", "{}", path)
    if path.startswith("/ajax-api/"):
        path = "/api/" + path[len("/ajax-api/") :]
    return method, path


def logical(routes: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
    return {normalize(m, p) for m, p in routes if not _IGNORED.search(p)}


# Features whose greedy route hands every MLflow route below its prefix to the function, which routes them
# itself (the gateway runtime: tests/gateway_runtime compares each of them with mlflow server).
FUNCTION_ROUTED = frozenset({"gateway_runtime"})


def ours(theirs: Iterable[tuple[str, str]] = ()) -> set[tuple[str, str]]:
    """Our logical routes; with MLflow's, also those of theirs that a function-routed greedy route serves."""
    sys.path[:0] = [str(ROOT / "layers" / "shared" / "python")]
    from serverless_mlflow.request.routes import ROUTES

    served = logical((r.method, r.path) for r in ROUTES if r.feature not in FUNCTION_ROUTED)
    greedy = {(m, p[: -len("{}")]) for (m, p) in logical((r.method, r.path) for r in ROUTES if r.feature in FUNCTION_ROUTED)}
    return served | {(m, p) for m, p in logical(theirs) if any(m == gm and p.startswith(prefix) for gm, prefix in greedy)}


# --- why a route is not served: the first matching family names it ------------------------------------------------
PLANNED = "planned: #24/#27/#28"


@dataclass(frozen=True)
class Family:
    pattern: str
    name: str
    reason: str


FAMILIES: tuple[Family, ...] = (
    Family(r"/assistant/", "assistant", "needs a coding agent on the user's machine, next to the server process"),
    Family(
        r"/(unified-traces|get-online-trace)",
        "online trace views",
        "MLflow's open-source server declares them in its protos with no handler: it answers an empty 404 "
        "(`_not_implemented`), as Databricks-only routes",
    ),
    Family(
        r"/(issues|label-schemas|review-queues|traces/metrics|trace-metrics|traces/calculate|"
        r"demo/|prompt-optimization)",
        "GenAI online traces, issue detection and prompt optimization",
        PLANNED + " (issue detection and prompt optimization run as jobs on the job runner)",
    ),
    Family(
        r"/(workspaces|roles)|/permissions/(workspace|role)",
        "workspaces and roles",
        PLANNED + " (one workspace, `default`, is served; per-user grants cover MLflow's classic permission model)",
    ),
    Family(
        r"^/(api/3\.0/)?jobs|/jobs/",
        "jobs (MLflow's Flask get and cancel routes)",
        PLANNED + " (the jobs API is served on its FastAPI paths, `/ajax-api/3.0/jobs`)",
    ),
    Family(
        r"^/gateway/|/gateway/(budgets|guardrails|proxy|.*invocations)|/endpoints/.*invocations",
        "AI gateway runtime, budgets and guardrails",
        PLANNED + " (guardrails run scorers inside the gateway runtime)",
    ),
    Family(r"/mcp-servers", "MCP server registry (3.15+)", "not built yet: versioned MCP server records with tags and aliases"),
    Family(
        r"/scorers?/invoke|/evaluate|/genai/",
        "scorer and evaluate invocation",
        "runs judges and evaluations on the server (an execution path, see the execution issue)",
    ),
    Family(
        r"/signup|/users/create-ui|/users/.*ui",
        "basic-auth HTML forms",
        "MLflow's server-rendered forms; the API routes they post to are served",
    ),
    Family(r".", "other", "not built yet"),
)


def family_of(path: str) -> Family:
    return next(f for f in FAMILIES if re.search(f.pattern, path))


# --- generation -------------------------------------------------------------------------------------------------


def _load() -> dict[str, list[list[str]]]:
    return json.loads(DATA.read_text())


def _versions(data: dict[str, list[list[str]]]) -> list[str]:
    from packaging.version import Version

    return sorted(data, key=Version)


def coverage_table(data: dict[str, list[list[str]]], served: set[tuple[str, str]]) -> str:
    rows = [
        "| mlflow | MLflow's logical routes | served here | coverage | not served, of which planned (#24/#27/#28) |",
        "|---|---|---|---|---|",
    ]
    for version in _versions(data):
        theirs = logical(tuple(r) for r in data[version])
        hit = theirs & served
        missing = theirs - served
        planned = sum(1 for _, p in missing if family_of(p).reason.startswith(PLANNED))
        rows.append(f"| {version} | {len(theirs)} | {len(hit)} | {100 * len(hit) / len(theirs):.1f} % | {len(missing)}, {planned} |")
    return "\n".join(rows)


def missing_list(data: dict[str, list[list[str]]], served: set[tuple[str, str]]) -> str:
    newest = _versions(data)[-1]
    missing = sorted(logical(tuple(r) for r in data[newest]) - served, key=lambda r: (r[1], r[0]))
    by_family: dict[str, list[tuple[str, str]]] = {}
    for method, path in missing:
        by_family.setdefault(family_of(path).name, []).append((method, path))
    lines = [f"MLflow {newest}'s routes not served here (answered `ENDPOINT_NOT_FOUND`), by family, each with its reason:", ""]
    for family in FAMILIES:
        members = by_family.get(family.name)
        if not members:
            continue
        shown = ", ".join(f"`{m} {p}`" for m, p in members[:6]) + (f" and {len(members) - 6} more" if len(members) > 6 else "")
        lines.append(f"* **{family.name}** ({len(members)}): {family.reason}. {shown}")
    return "\n".join(lines)


def _replaced(text: str, body: str) -> str:
    start, end = text.index(BEGIN) + len(BEGIN), text.index(END)
    return text[:start] + "\n" + body + "\n" + text[end:]


def render() -> dict[Path, str]:
    """The two documents with their generated sections as they must read."""
    data = _load()
    served = ours(tuple(route) for routes in data.values() for route in routes)
    missing = missing_list(data, served)
    intro = "Generated by `python -m tools.route_coverage` from `docs/data/mlflow-routes.json`.\n\n"
    return {
        COMPATIBILITY: _replaced(COMPATIBILITY.read_text(), intro + coverage_table(data, served) + "\n\n" + missing),
        README: _replaced(README.read_text(), missing),
    }


def generate() -> None:
    for path, text in render().items():
        path.write_text(text)


def dump(pythons: list[str]) -> None:
    data = json.loads(DATA.read_text()) if DATA.exists() else {}
    for python in pythons:
        with tempfile.TemporaryDirectory() as scratch:  # the basic-auth app creates its sqlite store in the cwd
            out = subprocess.run(
                [os.path.abspath(python), "-c", _DUMP], capture_output=True, text=True, check=True, timeout=600, cwd=scratch
            )
        found = json.loads(out.stdout)
        data[found["version"]] = found["routes"]
    DATA.parent.mkdir(parents=True, exist_ok=True)
    DATA.write_text(json.dumps(data, indent=0, sort_keys=True) + "\n")


CLIENT_BEGIN, CLIENT_END = "<!-- client-results:begin -->", "<!-- client-results:end -->"


def write_client_results(results: Path = ROOT / "build" / "client-results") -> None:
    """docs/compatibility.md's client table from the last ``make test-clients`` (build/client-results/<version>.json)."""
    from packaging.version import Version

    found = [json.loads(p.read_text()) for p in results.glob("*.json")]
    rows = ["Measured by `make test-clients` (tests/clients/core under each client's own venv against the local runtime):", ""]
    rows += ["| mlflow client | passed | failed | skipped (feature not in that version) |", "|---|---|---|---|"]
    rows += [
        f"| {r['version']} | {r['passed']} | {r['failed']} | {r['skipped']} |" for r in sorted(found, key=lambda r: Version(r["version"]))
    ]
    text = COMPATIBILITY.read_text()
    start, end = text.index(CLIENT_BEGIN) + len(CLIENT_BEGIN), text.index(CLIENT_END)
    COMPATIBILITY.write_text(text[:start] + "\n" + "\n".join(rows) + "\n" + text[end:])


def main(argv: list[str]) -> None:
    if argv[:1] == ["clients"]:
        write_client_results()
        return
    if argv[:1] == ["dump"]:
        from tools.client_venvs import CLIENT_VERSIONS

        pythons = argv[1:] or [str(c.python) for c in CLIENT_VERSIONS if c.python.exists()]
        dump(pythons)
    generate()


if __name__ == "__main__":
    main(sys.argv[1:])
