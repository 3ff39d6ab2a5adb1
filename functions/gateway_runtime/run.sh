#!/bin/bash
# The streaming function's handler. With AWS_LAMBDA_EXEC_WRAPPER=/opt/bootstrap, the Lambda Web Adapter layer's
# bootstrap execs "$LAMBDA_TASK_ROOT/$_HANDLER" (this script) instead of the Python runtime; the adapter
# (an extension) then relays function URL requests to the server started here, on AWS_LWA_PORT.
# The code asset's root (this package's parent), the shared layer and the runtime's own modules (boto3).
cd "${LAMBDA_TASK_ROOT:-$(dirname "$0")/..}" || exit 1
PYTHONPATH="${PYTHONPATH:+${PYTHONPATH}:}${PWD}:/opt/python:${LAMBDA_RUNTIME_DIR:-/var/runtime}" \
    exec python -m gateway_runtime.stream_server
