# make demo: Airflow standalone with the example DAGs and the plugin (SQLite catalog, DuckDB for dbt)
# make test: the whole test suite (starts PostgreSQL; Chromium comes with the system packages, except on Ubuntu)
# Both start from a stock Debian/Ubuntu with make and python3: the system packages come first (as root
# they are installed; otherwise the one apt-get line to run is printed), then the virtualenv, from PyPI
# with the pins of constraints/airflow-<minor>.txt.
# make lint: ruff's formatter and linter, checking only (scripts/lint-fix.sh applies their fixes)
#
# Every goal runs against one Airflow minor: AIRFLOW (default the newest supported, in .venv); another
# supported minor gets a virtualenv of its own, .venv-airflow-<minor>, built from its constraints file:
#   make test AIRFLOW=3.1 PYTEST_ARGS="tests/unit tests/integration"
PYTHON ?= python3
#: The Airflow minors the package supports, oldest first: one constraints file each.
AIRFLOW_MINORS := 3.1 3.2 3.3
AIRFLOW ?= $(lastword $(AIRFLOW_MINORS))
ifeq ($(filter $(AIRFLOW),$(AIRFLOW_MINORS)),)
$(error AIRFLOW=$(AIRFLOW) is not a supported minor: $(AIRFLOW_MINORS))
endif
CONSTRAINTS := constraints/airflow-$(AIRFLOW).txt
VENV ?= $(if $(filter $(AIRFLOW),$(lastword $(AIRFLOW_MINORS))),.venv,.venv-airflow-$(AIRFLOW))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEMO_HOME := $(CURDIR)/.airflow-demo
DEMO_PORT ?= 8080

.PHONY: install system-deps constraints postgres lint test test-unit test-integration test-system test-minors soak dist wheel-test demo demo-run demo-check bench failover docs screenshots clean

# The system packages the goals on the command line need, asked for all at once before the virtualenv
# is made, so that a user without root gets one complete apt-get line.
SYSTEM_DEPS := venv
ifneq ($(filter test test-integration test-system test-minors soak bench failover postgres screenshots system-deps,$(MAKECMDGOALS)),)
SYSTEM_DEPS += postgres
endif
ifneq ($(filter test test-system failover system-deps,$(MAKECMDGOALS)),)
SYSTEM_DEPS += redis
endif
ifneq ($(filter test test-system screenshots system-deps,$(MAKECMDGOALS)),)
SYSTEM_DEPS += browser
endif

$(STAMP): pyproject.toml $(CONSTRAINTS) | system-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c $(CONSTRAINTS) -e ".[postgres,dbt,dev]"
	touch $(STAMP)

install: $(STAMP)

system-deps:
	PYTHON=$(PYTHON) LEASTACTION_VENV=$(VENV) scripts/system-deps.sh $(SYSTEM_DEPS)

# Pin every package of the virtualenv into constraints/airflow-<its minor>.txt: run it once `make test`
# has passed on new versions (the pins are what the suite passed with, not what pip would pick today).
constraints:
	scripts/constraints.sh $(VENV)

postgres: system-deps
	scripts/postgres.sh start

# Checks only, so CI fails on an unformatted file instead of rewriting it; the settings are pyproject's.
lint: install
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .

# The tiers (docs/contributing.md): unit needs no server; integration and system start PostgreSQL.
# WORKERS test processes (pytest-xdist); a module's tests share one (--dist loadfile), so a deployment
# is started once. Most of a deployment test's time is waiting on its processes, so there are more
# workers than cores. WORKERS=0 runs in this process (for a debugger).
WORKERS ?= 4
PYTEST := $(BIN)/python -m pytest -q -p no:cacheprovider
XDIST = $(if $(filter 0,$(WORKERS)),,-n $(WORKERS) --dist loadfile)
# The wheel's own tests (tests/system/release) are make wheel-test's.
NOT_RELEASE := --ignore=tests/system/release
test: install postgres
	LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) $(PYTEST) $(XDIST) --durations=40 $(NOT_RELEASE) $(PYTEST_ARGS)

test-unit: install
	$(PYTEST) $(XDIST) tests/unit $(PYTEST_ARGS)

test-integration: install postgres
	LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) $(PYTEST) $(XDIST) tests/integration $(PYTEST_ARGS)

test-system: install postgres
	LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) $(PYTEST) $(XDIST) tests/system $(NOT_RELEASE) $(PYTEST_ARGS)

# What users install: the sdist and the wheel, built once from the checkout's tracked files into DIST
# (scripts/dist.sh: the commit's timestamps, so one commit gives the same bytes; the sdist must rebuild to
# the same wheel; twine check --strict). The Compose image's build stage runs the same script.
DIST ?= dist
dist: install
	PYTHON=$(BIN)/python scripts/dist.sh $(DIST)

# The wheel of make dist installed into a fresh virtualenv per supported minor, outside the checkout, with
# that minor's constraints, and checked there (tests/system/release/test_wheel.py); make test leaves it to
# this goal, so it is built and installed once.
wheel-test: dist
	LEASTACTION_DIST=$(abspath $(DIST)) $(PYTEST) --durations=20 tests/system/release $(PYTEST_ARGS)

# The unit and integration tiers on every supported minor but the newest (CI runs make test on the newest
# first), one after the other, each in its own virtualenv built from its constraints file (.venv-airflow-<minor>);
# every minor runs even if one fails, and the goal fails naming them. Workers as for make test (WORKERS).
# The crash-point tests (marker crash_points) run with make test only: they kill the product's own writes
# at their step boundaries, which no Airflow minor changes, and they are the tiers' longest. So do the tests
# that run no Airflow code (marker no_airflow: the dbt queue and worker on real dbt, the catalog model):
# every minor's virtualenv would run the same code on the same libraries.
OLDER_MINORS := $(filter-out $(lastword $(AIRFLOW_MINORS)),$(AIRFLOW_MINORS))
test-minors: postgres
	failed=""; for minor in $(OLDER_MINORS); do \
	  echo "== Airflow $$minor: tests/unit tests/integration"; \
	  $(MAKE) --no-print-directory install AIRFLOW=$$minor VENV=.venv-airflow-$$minor \
	  && LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) .venv-airflow-$$minor/bin/python -m pytest -q \
	    -p no:cacheprovider $(XDIST) --durations=10 -m "not crash_points and not no_airflow" tests/unit tests/integration $(PYTEST_ARGS) \
	  || failed="$$failed $$minor"; \
	done; \
	if [ -n "$$failed" ]; then echo "failed on Airflow$$failed"; exit 1; fi

# The model-based test of the catalog (tests/integration/model/) for a long time: SOAK_SECONDS in all, half on
# SQLite and half on PostgreSQL, in rounds of fresh examples; prints how many ran. A counterexample fails it
# with the shrunk steps (docs/contributing.md says how to keep it as a regression test).
SOAK_SECONDS ?= 1800
soak: install postgres
	LEASTACTION_SOAK_SECONDS=$(SOAK_SECONDS) LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) $(PYTEST) -s \
	  -o timeout=$$(( $(SOAK_SECONDS) + 1200 )) tests/integration/model/test_catalog_model.py -k test_soak $(PYTEST_ARGS)

demo: install
	DEMO_HOME=$(DEMO_HOME) DEMO_PORT=$(DEMO_PORT) scripts/demo.sh

# The demo, non-interactively in a fresh home: exits 0 when every example run is green.
demo-check: install
	DEMO_HOME=$$(mktemp -d) DEMO_PORT=$(DEMO_PORT) scripts/demo.sh --check

# Every benchmark with the arguments of bench/run_all.py, on a PostgreSQL of its own at default durability
# (scripts/bench-postgres.sh); writes bench/results/*.json and regenerates the tables of docs/performance.md.
bench: install postgres
	LEASTACTION_BENCH_PG_URL=$$(scripts/bench-postgres.sh start) $(BIN)/python -m bench.run_all

# Triggerer failover at production scale: the CeleryExecutor deployment of tests/system/test_celery.py with
# FAILOVER_GATES sensors waiting across two triggerers, one of them killed (-9); durations in FAILOVER_REPORT.
FAILOVER_GATES ?= 300
FAILOVER_REPORT ?= $(CURDIR)/.bench/failover.json
failover: install postgres
	LEASTACTION_TEST_PG_URL=$$(scripts/postgres.sh url) LEASTACTION_FAILOVER_GATES=$(FAILOVER_GATES) \
	LEASTACTION_FAILOVER_REPORT=$(FAILOVER_REPORT) $(BIN)/python -m pytest -q -p no:cacheprovider \
	  -o timeout=3600 tests/system/test_celery.py -k TestTriggererFailover $(PYTEST_ARGS)
	cat $(FAILOVER_REPORT)

# Refresh the UI screenshots of docs/ui.md from the demo's data (the suite itself writes them to a temporary directory).
screenshots: install
	LEASTACTION_SCREENSHOTS_DIR=$(CURDIR)/docs/images $(BIN)/python -m pytest -q -p no:cacheprovider tests/system/www/test_ui_demo_pages.py

docs: install
	$(BIN)/mkdocs build --strict

clean:
	rm -rf $(VENV) .venv .venv-airflow-* $(DEMO_HOME) site .pytest_cache dist
