#!/usr/bin/env bash
# Start (or find) the Redis server the Celery tests use as their broker: Debian's redis-server, on a
# loopback port, data in a temp dir, nothing persisted. Prints the broker URL on stdout.
# Usage: scripts/redis.sh [start|stop|url]   (LEASTACTION_REDIS_PORT, LEASTACTION_REDIS_DIR override)
set -euo pipefail
PORT="${LEASTACTION_REDIS_PORT:-56379}"
DIR="${LEASTACTION_REDIS_DIR:-/tmp/leastaction-redis-$PORT}"
URL="redis://127.0.0.1:$PORT/0"

install_server() {
  if ! command -v redis-server >/dev/null 2>&1; then
    echo "installing Debian's redis-server" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2 && apt-get install -y -qq redis-server >&2
  fi
}

running() { command -v redis-cli >/dev/null 2>&1 && [ "$(redis-cli -h 127.0.0.1 -p "$PORT" ping 2>/dev/null)" = PONG ]; }

start() {
  install_server
  running && { echo "$URL"; return; }
  mkdir -p "$DIR"
  # No snapshots, no append-only file: a broker for tests, thrown away with its directory.
  redis-server --bind 127.0.0.1 --port "$PORT" --dir "$DIR" --save "" --appendonly no \
    --daemonize yes --pidfile "$DIR/redis.pid" --logfile "$DIR/redis.log"
  for _ in $(seq 50); do running && { echo "$URL"; return; }; sleep 0.1; done
  echo "redis-server did not answer on port $PORT; see $DIR/redis.log" >&2
  exit 1
}

stop() {
  running && redis-cli -h 127.0.0.1 -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
}

case "${1:-start}" in
  start) start ;;
  stop) stop ;;
  url) echo "$URL" ;;
  *) echo "usage: $0 [start|stop|url]" >&2; exit 2 ;;
esac
