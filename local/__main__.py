"""``python -m local``: serve the MLflow API and web UI on http://127.0.0.1:5000 (``PORT`` overrides)."""

from __future__ import annotations

import logging
import os
import signal
import threading

from local.engine import SERVER_JAVA_OPTS
from local.runtime import LocalRuntime


def main() -> None:
    logging.basicConfig(level=os.environ.get("LOG_LEVEL", "WARNING"))
    # A server runs long enough for the JIT's warm-up to pay (see local/engine.py).
    os.environ.setdefault("DYNAMODB_LOCAL_JAVA_OPTS", SERVER_JAVA_OPTS)
    runtime = LocalRuntime().start()
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


if __name__ == "__main__":
    main()
