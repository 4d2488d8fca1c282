#!/usr/bin/env bash
# Bring the tree to what `make lint` checks: ruff's safe fixes (import order, pyupgrade, unused imports...),
# then ruff's formatter, then the findings a person has to fix, by rule. Review the diff before committing.
# Usage: scripts/lint-fix.sh  (RUFF=/path/to/ruff to use another ruff than the virtualenv's)
set -euo pipefail
cd "$(dirname "$0")/.."
RUFF="${RUFF:-${LEASTACTION_VENV:-.venv}/bin/ruff}"
[ -x "$RUFF" ] || RUFF="$(command -v ruff)" || { echo "ruff not found: make install, or set RUFF" >&2; exit 2; }

# Fixes first: a fix can leave code the formatter then lays out (sorted imports, rewritten annotations).
"$RUFF" check --fix --exit-zero --silent .
"$RUFF" format .
# A last pass: what the formatter moved may still be fixable; what remains is listed and fails the script.
"$RUFF" check --fix --output-format concise .
