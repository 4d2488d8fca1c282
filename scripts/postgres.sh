#!/usr/bin/env bash
# Start (or find) the PostgreSQL server used by the tests: Debian's postgresql, on a loopback port, data
# in a temp dir owned by the postgres user. Prints the admin URL on stdout.
# LEASTACTION_PG_DURABILITY=fast (the tests' default: fsync, synchronous_commit and full_page_writes off)
# or default (all three on, PostgreSQL's defaults: the benchmarks' server, scripts/bench-postgres.sh).
# Usage: scripts/postgres.sh [start|stop|url]
set -euo pipefail
PORT="${LEASTACTION_PG_PORT:-55432}"
DIR="${LEASTACTION_PG_DIR:-/tmp/leastaction-pg-$PORT}"
case "${LEASTACTION_PG_DURABILITY:-fast}" in
  fast) DURABILITY="-c fsync=off -c synchronous_commit=off -c full_page_writes=off" ;;
  # Named explicitly although they are the defaults, so that a postgresql.conf edited by hand cannot make
  # published figures flatter than a production server's.
  default) DURABILITY="-c fsync=on -c synchronous_commit=on -c full_page_writes=on" ;;
  *) echo "LEASTACTION_PG_DURABILITY must be fast or default" >&2; exit 2 ;;
esac
URL="postgresql+psycopg2://postgres@127.0.0.1:$PORT/postgres"

find_bin() {
  local d
  for d in /usr/lib/postgresql/*/bin; do [ -x "$d/pg_ctl" ] && { echo "$d"; return; }; done
}

install_server() {
  if [ -z "$(find_bin)" ]; then
    echo "installing Debian's postgresql" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq postgresql >&2
  fi
}

running() { [ -n "$(find_bin)" ] && "$(find_bin)/pg_isready" -h 127.0.0.1 -p "$PORT" -q; }

start() {
  install_server
  running && { echo "$URL"; return; }
  local bin; bin="$(find_bin)"
  local as=(); [ "$(id -u)" = 0 ] && as=(runuser -u postgres --)
  if [ ! -f "$DIR/PG_VERSION" ]; then
    mkdir -p "$DIR"; [ "$(id -u)" = 0 ] && chown postgres:postgres "$DIR"
    "${as[@]}" "$bin/initdb" -D "$DIR" -A trust -U postgres >/dev/null
  fi
  "${as[@]}" "$bin/pg_ctl" -D "$DIR" -l "$DIR/server.log" -w \
    -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300 $DURABILITY" \
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
