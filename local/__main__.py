"""``python -m local``: serve the MLflow API and web UI on http://127.0.0.1:5000 (``PORT`` overrides).

``python -m local --built`` (or ``LOCAL_ASSETS=built``): the same, running the layer and functions built for this
machine from the lock files (local/built.py) instead of the source tree.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time

from local import built

# Before anything imports the layer or a function: their built copies must be the ones imported.
if "--built" in sys.argv[1:]:
    os.environ[built.ENVIRONMENT] = "built"
BUILT = built.activate() if built.enabled() else None

from local.engine import SERVER_JAVA_OPTS  # noqa: E402
from local.runtime import LocalRuntime  # noqa: E402


def main() -> None:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "WARNING"))
    _access_log_to_stdout()
    # A server runs long enough for the JIT's warm-up to pay (see local/engine.py).
    os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTS", SERVER_JAVA_OPTS)
    started = time.monotonic()
    print("starting: DynamoDB Local (Java), moto S3, the table and the API functions (usually 5-15 s) ...", flush=True)
    runtime = LocalRuntime().start()
    if BUILT is not None:
        _report_built(runtime, BUILT)
    print(f"ready in {time.monotonic() - started:.1f} s", flush=True)
    print(f"mlflow-serverless listening on {runtime.url} (indexer: {runtime.indexer_mode}); web UI: {runtime.url}/", flush=True)
    print(
        f"DynamoDB: {os.environ['DYNAMODB_ENDPOINT_URL']} table {runtime.table_name}; S3: {os.environ['S3_ENDPOINT_URL']} bucket {runtime.bucket_name}",
        flush=True,
    )
    if runtime.authorization == "basic":
        print(f"basic auth on; admin user: {os.environ.get('MLFLOW_AUTH_ADMIN_USERNAME') or 'admin'}", flush=True)
        if runtime.generated_admin_password:
            # Shown once, on the terminal only (never logged): set MLFLOW_AUTH_ADMIN_PASSWORD to choose it.
            print(f"generated admin password: {runtime.generated_admin_password}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    runtime.stop()


def _report_built(runtime: LocalRuntime, paths: built.BuiltPaths) -> None:
    """Every function loaded now (a cold start each), then proof that none of our modules came from the source tree."""
    for feature in built.features():
        runtime.handler_for(feature)
    outside = built.check_loaded(paths)
    if outside:
        runtime.stop()
        raise SystemExit("LOCAL_ASSETS=built, but these modules were loaded from elsewhere: " + ", ".join(outside))
    print(
        f"built assets: {len(paths.functions) + 1} functions and the layer from {paths.layer.parents[1]}; all loaded from them", flush=True
    )


def _access_log_to_stdout() -> None:
    """One line per request on stdout, in ``mlflow server``'s format plus the time taken (``ACCESS_LOG=false``: none)."""
    if os.environ.get("ACCESS_LOG", "true").lower() in ("0", "false", "no", "off"):
        return
    handler = logging.StreamHandler(sys.stdout)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s:     %(message)s", datefmt="%Y/%m/%d %H:%M:%S"))
    access = logging.getLogger("serverless_mlflow.local.access")
    access.addHandler(handler)
    access.setLevel(logging.INFO)
    access.propagate = False


if __name__ == "__main__":
    main()
