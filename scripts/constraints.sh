#!/usr/bin/env bash
# Write constraints/airflow-<minor>.txt: every package of the virtualenv the test suite passed in, pinned;
# <minor> is the Airflow release line installed there (3.3 for apache-airflow 3.3.2).
# Usage: scripts/constraints.sh VENV   (`make constraints [AIRFLOW=<minor>]` runs it on that minor's venv)
#
# The file is used with `pip install -c`, so it must stay a valid constraints file for anyone: no
# editable or direct-URL lines (a path on this machine means nothing elsewhere), and not this package
# itself (it is what gets installed with the constraints).
#
# A pin whose release needs a newer patch level of Python 3.11 than the oldest one (Debian 12 ships
# 3.11.2) carries that Requires-Python as a marker: on the older patch level pip then picks a release
# of that package that installs, instead of failing the whole install.
set -euo pipefail
venv="${1:?usage: $0 VENV}"
[ -x "$venv/bin/python" ] || { echo "no virtualenv at $venv: run make test first" >&2; exit 1; }
minor="$("$venv/bin/python" -c 'from importlib.metadata import version; print(".".join(version("apache-airflow").split(".")[:2]))')"
name="airflow-$minor.txt"
out="$(cd "$(dirname "$0")/.." && pwd)/constraints/$name"
"$venv/bin/python" -m pip freeze --exclude-editable --isolated | "$venv/bin/python" -c '
import platform, re, sys
from importlib.metadata import distribution
from packaging.specifiers import SpecifierSet

pins, bad = [], []
for line in sys.stdin.read().splitlines():
    match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([^ @;]+)", line)
    if not match:
        bad.append(line)
        continue
    name = match.group(1)
    if re.sub(r"[-_.]+", "-", name.lower()) == "airflow-leastaction":
        continue
    needs = distribution(name).metadata.get("Requires-Python") or ""
    spec = SpecifierSet(needs)
    if needs and not spec.contains("3.11.0"):
        line += " ; " + " and ".join(f"python_full_version {s.operator} \"{s.version}\"" for s in spec)
    pins.append(line)
if bad:
    sys.exit("not a plain name==version pin, so not reproducible elsewhere (install it from an index):\n"
             + "\n".join(bad))
print(f"# Every package of the environment the test suite passed in: Python {platform.python_version()},"
      f" {platform.system()} {platform.machine()}.")
minor = sys.argv[1].removeprefix("airflow-").removesuffix(".txt")
print(f"# Regenerate with `make constraints AIRFLOW={minor}` once `make test AIRFLOW={minor}` has passed on new")
print(f"# versions; install with pip install -c constraints/{sys.argv[1]} \".[postgres,dbt]\"")
print("\n".join(pins))
' "$name" >"$out.new"
mv "$out.new" "$out"
echo "wrote $out ($(grep -vc '^#' "$out") pins)"
