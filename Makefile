# mlflow-serverless: every target sets itself up (venv, CDK CLI) on a fresh machine.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
STAMP := $(VENV)/.installed
# Node tools (package.json pins them): the CDK CLI and AWS's DynamoDB Local (jar + native libraries; Java runs it).
NODE_TOOLS := node_modules/.installed
CDK := node_modules/.bin/cdk
PORT ?= 5000
PYTEST_ARGS ?=

.PHONY: help venv serve test test-clients test-ui lint format synth deploy destroy bench docs verify reindex clean

help:
	@echo "make serve   - serve the MLflow API and web UI locally on http://127.0.0.1:$(PORT)"
	@echo "make test    - ruff + the whole test suite"
	@echo "make test-clients - the end-to-end core against every supported mlflow client (one venv each, build/clients)"
	@echo "make test-ui - the web UI in headless Chromium (screenshots in build/ui-screenshots)"
	@echo "make synth   - synthesize the AWS stack (offline, no Docker)"
	@echo "make deploy  - cdk deploy with the pinned CDK CLI"
	@echo "make bench   - DynamoDB requests/items per operation -> docs/performance.md"
	@echo "make docs    - regenerate docs/schema.md and docs/access-patterns.md"
	@echo "make verify  - check every FTS/RANK item against the source items (make reindex repairs)"

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

$(NODE_TOOLS): package.json
	command -v java >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq default-jre-headless; }
	npm install --no-audit --no-fund --silent
	touch $(NODE_TOOLS)

$(CDK): $(NODE_TOOLS)

# The browser tests drive Debian's Chromium (Playwright's pip package only brings the driver; no browser download).
CHROMIUM := /usr/bin/chromium
$(CHROMIUM):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium

serve: $(STAMP) $(NODE_TOOLS)
	PORT=$(PORT) $(PY) -m local

test: $(STAMP) $(NODE_TOOLS) $(CHROMIUM)
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n 2 --dist loadgroup $(PYTEST_ARGS)

# Every supported mlflow client (tools/client_venvs.py lists them) runs tests/clients/core in its own venv under
# build/clients/<version>, which the target creates on first use. mlflow 3.18.0's own dependencies mlflow-skinny and
# mlflow-tracing 3.18.0 are not on the package index yet: its venv gets mlflow 3.17.2 with its dependencies, then the
# 3.18.0 wheel with --no-deps over it. `make test` runs the 2.22 client only (the fast subset).
test-clients: $(STAMP) $(NODE_TOOLS)
	$(PY) -m tools.client_venvs
	CLIENT_VERSIONS=all $(PY) -m pytest tests/clients -p no:xdist $(PYTEST_ARGS)
	$(PY) -m tools.route_coverage clients

test-ui: $(STAMP) $(NODE_TOOLS) $(CHROMIUM)
	$(PY) -m pytest tests/browser -p no:xdist $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check .

format: $(STAMP)
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

synth: $(STAMP) $(CDK)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) synth --quiet

deploy: $(STAMP) $(CDK)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) deploy $(CDK_ARGS)

destroy: $(STAMP) $(CDK)
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(CDK) destroy $(CDK_ARGS)

bench: $(STAMP) $(NODE_TOOLS)
	$(PY) -m tools.bench

# Recompute every derived (FTS/RANK) item from the source items: `verify` reports, `reindex` repairs.
# Local: DYNAMODB_ENDPOINT_URL=<printed by make serve> TABLE_NAME=mlflow-serverless make verify
# Deployed: AWS credentials + TABLE_NAME=<TableName output> make verify
verify reindex: $(STAMP)
	$(PY) -m tools.admin $@

docs: $(STAMP)
	$(PY) -m tools.gen_docs

clean:
	rm -rf $(VENV) cdk.out node_modules .pytest_cache build
