# make demo: Airflow standalone with the example DAGs and the plugin (SQLite catalog, DuckDB for dbt)
# make test: the whole test suite (starts PostgreSQL, installs Chromium when missing)
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_HOME := $(CURDIR)/.airflow-demo
DEMO_PORT ?= 8080

.PHONY: install system-deps postgres test test-fast demo demo-run demo-check bench docs screenshots clean

$(STAMP): pyproject.toml constraints/tested.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints/tested.txt -e ".[postgres,dbt,dev]"
	# The editable install leaves build metadata in the checkout; run from here, Python would then see
	# the distribution twice and Airflow would load the plugin twice.
	rm -rf airflow_leastaction.egg-info
	touch $(STAMP)

install: $(STAMP)

system-deps:
	scripts/system-deps.sh

postgres: system-deps
	scripts/postgres.sh start

test: install system-deps postgres
	LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) $(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow and not browser" $(PYTEST_ARGS)

demo: install
	DEMO_HOME=$(DEMO_HOME) DEMO_PORT=$(DEMO_PORT) scripts/demo.sh

# The demo, non-interactively in a fresh home: exits 0 when every example run is green.
demo-check: install
	DEMO_HOME=$$(mktemp -d) DEMO_PORT=$(DEMO_PORT) scripts/demo.sh --check

bench: install postgres
	$(BIN)/python -m bench.run_all

# Refresh the UI screenshots of docs/ui.md (the suite itself writes them to a temporary directory).
screenshots: install system-deps
	LEASTACTION_SCREENSHOTS_DIR=$(CURDIR)/docs/images $(BIN)/python -m pytest -q -p no:cacheprovider tests/www/test_browser.py

docs: install
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) $(DEMO_HOME) site .pytest_cache
