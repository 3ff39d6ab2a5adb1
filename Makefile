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

.PHONY: help venv serve test test-ui lint format synth deploy destroy bench docs verify reindex migrate clean

help:
	@echo "make serve   - serve the MLflow API and web UI locally on http://127.0.0.1:$(PORT)"
	@echo "make test    - ruff + the whole test suite"
	@echo "make test-ui - the web UI in headless Chromium (screenshots in build/ui-screenshots)"
	@echo "make synth   - synthesize the AWS stack (offline, no Docker)"
	@echo "make deploy  - cdk deploy with the pinned CDK CLI"
	@echo "make bench   - DynamoDB requests/items per operation -> docs/performance.md"
	@echo "make docs    - regenerate docs/schema.md and docs/access-patterns.md"
	@echo "make verify  - check every FTS/RANK item against the source items (make reindex repairs)"
	@echo "make migrate - move a live table to the current layout (online, resumable; deploy the code first)"

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

# Move a table written by an older release to this layout while clients keep logging (docs/migration.md).
# Same environment as verify; MIGRATE_ARGS="--max-items 100000" runs it in slices (run again to continue).
migrate: $(STAMP)
	$(PY) -m tools.migrate $(MIGRATE_ARGS)

docs: $(STAMP)
	$(PY) -m tools.gen_docs

clean:
	rm -rf $(VENV) cdk.out node_modules .pytest_cache build
