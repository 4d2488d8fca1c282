#!/usr/bin/env bash
# Start (or find) the PostgreSQL server the benchmarks use: a server of its own, apart from the test
# server (scripts/postgres.sh, which runs without fsync for speed), at PostgreSQL's default durability:
# fsync, synchronous_commit and full_page_writes all on. Prints the admin URL on stdout.
# Usage: scripts/bench-postgres.sh [start|stop|url]
set -euo pipefail
PORT="${LEASTACTION_BENCH_PG_PORT:-55433}"
DIR="${LEASTACTION_BENCH_PG_DIR:-/tmp/leastaction-bench-pg-$PORT}"
URL="postgresql+psycopg2://postgres@127.0.0.1:$PORT/postgres"

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && { echo "$d"; return; }; done
}

running() { [ -n "$(find_bin)" ] && "$(find_bin)/pg_isready" -h 127.0.0.1 -p "$PORT" -q; }

start() {
  local bin; bin="$(find_bin)"
  [ -n "$bin" ] || { echo "PostgreSQL is not installed: run scripts/postgres.sh start once" >&2; exit 1; }
  running && { echo "$URL"; return; }
  local as=(); [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  if [ ! -f "$DIR/PG_VERSION" ]; then
    mkdir -p "$DIR"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
    "${as[@]}" "$bin/initdb" -D "$DIR" -A trust -U postgres >/dev/null
  fi
  # The durability settings are named explicitly (they are the defaults), so that a postgresql.conf
  # edited by hand cannot make the published figures flatter than a production server.
  "${as[@]}" "$bin/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=on -c synchronous_commit=on -c full_page_writes=on" \
    start >/dev/null
  echo "$URL"
}

stop() {
  local bin; bin="$(find_bin)"; [ -n "$bin" ] || return 0
  local as=(); [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  [ -f "$DIR/postmaster.pid" ] && "${as[@]}" "$bin/pg_ctl" -D "$DIR" -m fast -w stop >/dev/null || true
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  url) echo "$URL" ;;
  *) echo "usage: $0 [start|stop|url]" >&2; exit 2 ;;
esac
