#!/usr/bin/env bash
# Airflow standalone with the example DAGs and the LeastAction plugin, on the embedded defaults:
# SQLite for Airflow and for the catalog, DuckDB for dbt. Called by `make demo` after `make install`.
#
# Usage: scripts/demo.sh            start, run the examples, print URL and login; Ctrl-C stops everything
#        scripts/demo.sh --check    start, wait until every example run finished, check their states
#                                   over the REST API, stop; exit 0 only when all are green
#
# Environment: DEMO_HOME (AIRFLOW_HOME; default .airflow-demo), DEMO_PORT (API server; default 8080),
# DEMO_FROM / DEMO_TO (the backfill window, ISO dates; default Monday to Wednesday of last complete week),
# DEMO_RUNS (slots backfilled per DAG, the last ones of the window; default 3),
# DEMO_TIMEOUT (seconds --check waits for the runs; default 900).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/.venv/bin"
MODE="${1:-run}"
case "$MODE" in run|--check) ;; *) echo "usage: $0 [--check]" >&2; exit 2 ;; esac
[ -x "$BIN/airflow" ] || { echo "no $BIN/airflow: run 'make install' first" >&2; exit 1; }

DEMO_HOME="${DEMO_HOME:-$ROOT/.airflow-demo}"
DEMO_PORT="${DEMO_PORT:-8080}"
DEMO_TIMEOUT="${DEMO_TIMEOUT:-900}"
DEMO_RUNS="${DEMO_RUNS:-3}"
mkdir -p "$DEMO_HOME"
DEMO_HOME="$(cd "$DEMO_HOME" && pwd)"
LOG="$DEMO_HOME/standalone.log"

# The demo is self-contained: settings inherited from the caller's Airflow must not leak in.
for var in $(compgen -e); do
  case "$var" in AIRFLOW__*|AIRFLOW_CONN_*) unset "$var" ;; esac
done
printf '{"admin": "admin"}\n' > "$DEMO_HOME/passwords.json"
JWT_FILE="$DEMO_HOME/jwt_secret"
[ -s "$JWT_FILE" ] || "$BIN/python" -c 'import secrets; print(secrets.token_hex(32))' > "$JWT_FILE"

export AIRFLOW_HOME="$DEMO_HOME"
export AIRFLOW__CORE__DAGS_FOLDER="$ROOT/dags_examples"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=admin:admin
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE="$DEMO_HOME/passwords.json"
export AIRFLOW__CORE__EXECUTION_API_SERVER_URL="http://localhost:$DEMO_PORT/execution/"
export AIRFLOW__API__PORT="$DEMO_PORT"
export AIRFLOW__API__HOST=localhost
export AIRFLOW__API_AUTH__JWT_SECRET="$(cat "$JWT_FILE")"
# Airflow's default SQLite file, with a longer lock wait than pysqlite's 5 s: on a busy laptop the
# scheduler, triggerer and API server otherwise give up on each other's writes. Fewer parallel tasks too.
export AIRFLOW__DATABASE__SQL_ALCHEMY_CONN="sqlite:///$DEMO_HOME/airflow.db?timeout=60"
export AIRFLOW__CORE__PARALLELISM=8
# Airflow 3.3's scheduler can fail a task whose trigger fired before the executor reported the deferral's
# exit (likely when the machine is busy); one quick retry keeps the demo green.
export AIRFLOW__CORE__DEFAULT_TASK_RETRIES=1
export AIRFLOW__CORE__DEFAULT_TASK_RETRY_DELAY=3
# Runs come from the backfill window below, not from the scheduler's clock: Monday to Wednesday of the
# previous calendar week unless DEMO_FROM / DEMO_TO fix it, so the runs are the same all week.
export AIRFLOW__SCHEDULER__USE_JOB_SCHEDULE=False
export AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=10
export AIRFLOW__LEASTACTION__POLL_INTERVAL=2
# The API the provider calls to re-run a degraded run once its late feed lands (dags_examples/country_report.py).
export AIRFLOW_CONN_LEASTACTION_AIRFLOW_API_DEFAULT="{\"conn_type\": \"http\", \"host\": \"http://localhost:$DEMO_PORT\", \"login\": \"admin\", \"password\": \"admin\"}"
# The dbt worker's runs end once the queue is empty, so the demo's runs settle (in production a drain
# waits up to an hour for work a freshness tier holds back).
export FIELD_OPS_DRAIN_MAX_WAIT_MINUTES="${FIELD_OPS_DRAIN_MAX_WAIT_MINUTES:-0}"
# The dbt example lands rows in its CSV sources: give it a copy, so the clone stays as it was.
if [ ! -d "$DEMO_HOME/dbt_project" ]; then
  mkdir -p "$DEMO_HOME/dbt_project"
  cp -R "$ROOT/dags_examples/dbt_project/." "$DEMO_HOME/dbt_project/"
  rm -rf "$DEMO_HOME/dbt_project/target" "$DEMO_HOME/dbt_project/logs"
fi
export FIELD_OPS_DBT_PROJECT_DIR="$DEMO_HOME/dbt_project"
export FIELD_OPS_DATA_DIR="$DEMO_HOME/dbt_project/data"
export FIELD_OPS_DUCKDB_PATH="$DEMO_HOME/leastaction/field_ops.duckdb"
# The queue builds tables, not views: the project is deployed once (one `dbt build`), as a release would.
if [ ! -f "$FIELD_OPS_DUCKDB_PATH" ]; then
  mkdir -p "$(dirname "$FIELD_OPS_DUCKDB_PATH")"
  echo "demo: deploying the example dbt project (dbt build)"
  (cd "$FIELD_OPS_DBT_PROJECT_DIR" && "$BIN/dbt" build --quiet --project-dir . --profiles-dir .) \
    || { echo "demo: dbt could not deploy the example project" >&2; exit 1; }
fi
export PATH="$BIN:$PATH"

if [ -z "${DEMO_FROM:-}" ]; then
  DEMO_FROM="$("$BIN/python" -c 'import datetime as d; t=d.date.today(); print(t - d.timedelta(days=t.weekday() + 7))')"
fi
DEMO_TO="${DEMO_TO:-$("$BIN/python" -c "import datetime as d; print(d.date.fromisoformat('$DEMO_FROM') + d.timedelta(days=2))")}"

echo "demo: AIRFLOW_HOME=$DEMO_HOME, DAGs from dags_examples/, backfill window $DEMO_FROM .. $DEMO_TO"
airflow-leastaction db upgrade

PGID=""
DRIVER=""
stop() {
  trap - INT TERM EXIT
  [ -z "$DRIVER" ] || kill "$DRIVER" 2>/dev/null || true
  [ -n "$PGID" ] || return 0
  echo "demo: stopping Airflow"
  kill -TERM -- "-$PGID" 2>/dev/null || true
  for _ in $(seq 1 30); do kill -0 -- "-$PGID" 2>/dev/null || { PGID=""; return 0; }; sleep 1; done
  kill -KILL -- "-$PGID" 2>/dev/null || true
  PGID=""
}
trap 'stop; exit 130' INT TERM
trap stop EXIT

# Its own session, so one signal to the group stops scheduler, triggerer, API server and task processes.
setsid airflow standalone > "$LOG" 2>&1 < /dev/null &
PGID=$!
echo "demo: airflow standalone starting (log: $LOG)"

driver() {
  # In the background and waited for, so that Ctrl-C or a TERM reaches the trap at once.
  "$BIN/python" "$ROOT/scripts/demo_driver.py" "$1" --url "http://localhost:$DEMO_PORT" \
    --dags-folder "$ROOT/dags_examples" --from-date "$DEMO_FROM" --to-date "$DEMO_TO" --timeout "$DEMO_TIMEOUT" \
    --runs-per-dag "$DEMO_RUNS" &
  DRIVER=$!
  local status=0
  wait "$DRIVER" || status=$?
  DRIVER=""
  return "$status"
}

if ! driver start; then
  echo "demo: start failed; last lines of $LOG:" >&2
  tail -n 40 "$LOG" >&2
  exit 1
fi

if [ "$MODE" = "--check" ]; then
  status=0
  driver check || status=$?
  [ "$status" = 0 ] || tail -n 40 "$LOG" >&2
  exit "$status"
fi

cat <<EOF

  Airflow:        http://localhost:$DEMO_PORT   (login: admin / admin)
  LeastAction:    http://localhost:$DEMO_PORT/plugin/leastaction-decisions  (also under Plugins → LeastAction)
  Airflow log:    $LOG

  Press Ctrl-C to stop.

EOF
driver settle || echo "demo: some runs did not finish; see the UI and $LOG" >&2
wait "$PGID"
