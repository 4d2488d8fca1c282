#!/usr/bin/env bash
# Install the system packages `make` needs, before it creates the virtualenv: on a stock Debian or
# Ubuntu with only make and python3, the first `make test` or `make demo` must not fail halfway.
# Usage: scripts/system-deps.sh [venv] [postgres] [redis] [browser]   (no argument: all four)
#   venv      python3-venv, so that $PYTHON (default python3) can create a virtualenv with pip in it
#             (checked only while $LEASTACTION_VENV, default .venv, does not exist yet)
#   postgres  Debian's postgresql, which the test suite and the benchmarks start on a loopback port
#   redis     Debian's redis-server, the Celery broker of the production-topology tests
#   browser   chromium, which drives the UI tests
# Every dependency of the package installs as a binary wheel from PyPI (no compiler, no headers).
# Idempotent: does nothing when everything is present. As root it installs what is missing with apt;
# otherwise it prints the one apt-get line to run and fails, before anything else happens.
#
# Ubuntu ships chromium only as a snap: its apt package is a wrapper that installs the snap, which does
# not run without snapd (containers, CI images). There we leave the browser to the user: point
# LEASTACTION_CHROMIUM at a Chromium or Chrome binary (for example Playwright's:
# `.venv/bin/python -m playwright install chromium`); without one the browser tests are skipped.
set -euo pipefail
[ $# -gt 0 ] || set -- venv postgres redis browser
PYTHON="${PYTHON:-python3}"
VENV="${LEASTACTION_VENV:-.venv}"

# Debian's python3 creates no virtualenv without python3-venv ("ensurepip is not available"): that
# package holds ensurepip and the pip wheel it installs, which this asks for.
venv_works() { "$PYTHON" -c "import ensurepip, venv; ensurepip.version()" >/dev/null 2>&1; }

# python3-venv serves the distribution's python3; another version (make PYTHON=python3.11 on a release
# whose python3 is newer) has its own pythonX.Y-venv.
venv_package() {
  local version='import sys; print("%d.%d" % sys.version_info[:2])' mine
  mine="$("$PYTHON" -c "$version" 2>/dev/null)" || mine=""
  if [ -n "$mine" ] && [ "$mine" != "$(/usr/bin/python3 -c "$version" 2>/dev/null)" ]; then
    echo "python$mine-venv"
  else
    echo python3-venv
  fi
}

need=()
for want in "$@"; do
  case "$want" in
    venv)
      [ -x "$VENV/bin/python" ] || venv_works || need+=("$(venv_package)") ;;
    postgres)
      ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql) ;;
    redis)
      command -v redis-server >/dev/null 2>&1 || need+=(redis-server) ;;
    browser)
      distro="$( . /etc/os-release 2>/dev/null && echo "${ID:-}" )"
      if [ -n "${LEASTACTION_CHROMIUM:-}" ]; then
        :
      elif [ "$distro" = ubuntu ]; then
        command -v chromium >/dev/null 2>&1 && [ "$(readlink -f "$(command -v chromium)")" != /usr/bin/snap ] || \
          echo "note: Ubuntu's chromium is a snap; set LEASTACTION_CHROMIUM to a Chromium binary for the browser tests" >&2
      else
        command -v chromium >/dev/null 2>&1 || need+=(chromium)
      fi ;;
    *) echo "usage: $0 [venv] [postgres] [redis] [browser]" >&2; exit 2 ;;
  esac
done
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "missing system packages: ${need[*]}; install them as root, then run make again:" >&2
  echo "sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq "${need[@]}"
