"""MLflow's tracking schema migrated once per test process, copied wherever a test starts a fresh reference store.

A fresh sqlite file makes MLflow's SqlAlchemyStore (and every ``mlflow server`` on it) run all its alembic
migrations: 1.4 s on a quiet 2-core box, 3-14 s under load, per store. A copy of a file already at the head
revision takes milliseconds, and MLflow then does on it exactly what it does after migrating a new file: it
verifies the revision and creates the default experiment (the template has no rows, only the schema), so the
reference behaves as on a file of its own. (The basic-auth app's user database is not templated: its migrations
take about 0.6 s of a server start, less than the child process that would migrate a template.)

Templates come from this interpreter's mlflow; a server run by another interpreter (a client venv's mlflow,
another schema) must migrate its own file, so callers pass ``python`` and get no copy for another one.
"""

from __future__ import annotations

import atexit
import shutil
import sys
import tempfile
from functools import cache
from pathlib import Path


@cache
def _directory() -> Path:
    directory = Path(tempfile.mkdtemp(prefix="mlflow-sqlite-templates-"))
    atexit.register(shutil.rmtree, directory, True)
    return directory


@cache
def _tracking_template() -> Path:
    import sqlalchemy
    from mlflow.store.db.utils import _initialize_tables

    path = _directory() / "mlflow.db"
    engine = sqlalchemy.create_engine(f"sqlite:///{path}")
    _initialize_tables(engine)  # what SqlAlchemyStore runs on an empty database, nothing more
    engine.dispose()
    return path


def migrated_sqlite(path: str | Path, python: str = sys.executable) -> str:
    """A sqlite URI for ``path``, holding a copy of the migrated tracking + registry schema (when ``python``, the
    interpreter whose mlflow will open it, is this one; else left for that mlflow to create)."""
    path = Path(path)
    if python == sys.executable and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_tracking_template(), path)
    return f"sqlite:///{path}"
