#!/usr/bin/env bash
# Install the system packages the test suite drives for real: Debian's postgresql, redis-server (the
# Celery broker) and chromium. Idempotent: does nothing when all are present.
#
# Ubuntu ships chromium only as a snap: its apt package is a wrapper that installs the snap, which does
# not run without snapd (containers, CI images). There we leave the browser to the user: point
# LEASTACTION_CHROMIUM at a Chromium or Chrome binary (for example Playwright's:
# `.venv/bin/python -m playwright install chromium`); without one the browser tests are skipped.
set -euo pipefail
need=()
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
distro="$( . /etc/os-release 2>/dev/null && echo "${ID:-}" )"
if [ -n "${LEASTACTION_CHROMIUM:-}" ]; then
  :
elif [ "$distro" = ubuntu ]; then
  command -v chromium >/dev/null 2>&1 && [ "$(readlink -f "$(command -v chromium)")" != /usr/bin/snap ] || \
    echo "note: Ubuntu's chromium is a snap; set LEASTACTION_CHROMIUM to a Chromium binary for the browser tests" >&2
else
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${need[*]} (run as root, or: sudo apt-get install ${need[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}"
