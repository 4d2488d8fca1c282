#!/usr/bin/env bash
# Start (or find) the PostgreSQL server the benchmarks use: a server of its own, apart from the test
# server (which runs without fsync for speed), at PostgreSQL's default durability: fsync,
# synchronous_commit and full_page_writes all on. Prints the admin URL on stdout.
# Usage: scripts/bench-postgres.sh [start|stop|url]
set -euo pipefail
export LEASTACTION_PG_PORT="${LEASTACTION_BENCH_PG_PORT:-55433}"
export LEASTACTION_PG_DIR="${LEASTACTION_BENCH_PG_DIR:-/tmp/leastaction-bench-pg-$LEASTACTION_PG_PORT}"
export LEASTACTION_PG_DURABILITY=default
exec "$(dirname "$0")/postgres.sh" "$@"
