"""Lambda invocations and bytes through Lambda when the stock client moves a model's artifacts.

``LambdaMeter`` wraps ``LocalRuntime.invoke`` (each call is exactly one Lambda invocation of the deployed
stack: the runtime builds the same API Gateway event and calls the same handler) and records the request
and response body sizes. ``measure_model_transfer()`` logs a pyfunc model carrying a ``size_mb`` weights
file with the real mlflow client, then loads it back by ``models:/<model_id>``, and reports both phases.

    python -m tools.artifact_bench [size_mb]
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "layers" / "shared" / "python", ROOT / "functions"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from serverless_mlflow.request import route_match  # noqa: E402

# Routes whose bodies *are* artifact bytes (everything else carries JSON: ids, presigned URLs, listings).
_CONTENT_OPERATIONS = {"upload_artifact", "download_artifact"}


@dataclass(frozen=True)
class Invocation:
    method: str
    path: str
    operation: str
    status: int
    request_bytes: int
    response_bytes: int


def _response_bytes(response: dict[str, Any]) -> int:
    body = response.get("body") or ""
    return len(base64.b64decode(body)) if response.get("isBase64Encoded") else len(body.encode("utf-8"))


@dataclass
class LambdaMeter:
    """Counts invocations of a local runtime; attach to an instance or wrap the class method."""

    invocations: list[Invocation] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def wrap(self, invoke: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
        def metered(*args: Any) -> dict[str, Any]:
            # (self?, method, raw_path, query, headers, body): the last five are the invocation.
            method, raw_path, _query, _headers, body = args[-5:]
            response = invoke(*args)
            matched = route_match.match(method, raw_path)
            record = Invocation(
                method=method,
                path=raw_path,
                operation=matched[0].operation if matched else "$default",
                status=int(response.get("statusCode", 200)),
                request_bytes=len(body),
                response_bytes=_response_bytes(response),
            )
            with self._lock:
                self.invocations.append(record)
            return response

        return metered

    def attach(self, runtime: Any) -> None:
        runtime.invoke = self.wrap(runtime.invoke)

    def reset(self) -> None:
        with self._lock:
            self.invocations = []

    def summary(self) -> dict[str, Any]:
        with self._lock:
            records = list(self.invocations)
        content = [r for r in records if r.operation in _CONTENT_OPERATIONS]
        return {
            "invocations": len(records),
            "by_operation": dict(sorted(Counter(r.operation for r in records).items())),
            "request_bytes": sum(r.request_bytes for r in records),
            "response_bytes": sum(r.response_bytes for r in records),
            "artifact_bytes_through_lambda": sum(r.request_bytes + r.response_bytes for r in content),
        }


@contextmanager
def _env(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _write_random(path: Path, size: int) -> None:
    with path.open("wb") as out:
        remaining = size
        while remaining:
            step = min(remaining, 8 * 1024 * 1024)
            out.write(os.urandom(step))
            remaining -= step


def _model_class() -> type:
    import mlflow.pyfunc

    class WeightsModel(mlflow.pyfunc.PythonModel):
        """A model whose only content is a large weights file (what the benchmark moves)."""

        def load_context(self, context: Any) -> None:
            self.size = os.path.getsize(context.artifacts["weights"])

        def predict(self, context: Any, model_input: list[int], params: dict[str, Any] | None = None) -> list[int]:
            return [self.size]

    return WeightsModel


def measure_model_transfer(size_mb: int = 100, runtime: Any = None, meter: LambdaMeter | None = None) -> dict[str, Any]:
    """Log then load a model carrying ``size_mb`` MB of weights; Lambda invocations and bytes per phase.

    Uses the client settings docs/artifacts.md recommends (MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE=0,
    so every file goes to S3 through presigned multipart URLs). Starts its own local runtime unless one is
    given (pass ``meter`` when the runtime is already metered).
    """
    own_runtime = runtime is None
    if own_runtime:
        from local.runtime import LocalRuntime

        runtime = LocalRuntime(port=0).start()
    if meter is None:
        meter = LambdaMeter()
        meter.attach(runtime)
    try:
        with _env(MLFLOW_MULTIPART_UPLOAD_MINIMUM_FILE_SIZE="0", MLFLOW_TRACKING_URI=runtime.url), tempfile.TemporaryDirectory() as tmp:
            import mlflow

            mlflow.set_tracking_uri(runtime.url)
            weights = Path(tmp) / "weights.bin"
            _write_random(weights, size_mb * 1024 * 1024)
            mlflow.set_experiment(f"artifact-bench-{int(time.time() * 1000)}")

            meter.reset()
            started = time.monotonic()
            with mlflow.start_run():
                info = mlflow.pyfunc.log_model(
                    name="model", python_model=_model_class()(), artifacts={"weights": str(weights)}, pip_requirements=[]
                )
            upload = {**meter.summary(), "seconds": round(time.monotonic() - started, 2)}

            meter.reset()
            started = time.monotonic()
            loaded = mlflow.pyfunc.load_model(f"models:/{info.model_id}")
            download = {**meter.summary(), "seconds": round(time.monotonic() - started, 2)}
            if loaded.predict([0])[0] != weights.stat().st_size:
                raise RuntimeError("the loaded model does not carry the uploaded weights")
        return {"model_mb": size_mb, "upload": upload, "download": download}
    finally:
        if own_runtime:
            runtime.stop()


def main() -> None:
    size = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    print(json.dumps(measure_model_transfer(size), indent=2))


if __name__ == "__main__":
    main()
