#!/usr/bin/env bash
# Build the sdist and the wheel (PEP 517, `python -m build`) into OUT (default dist/), and check them:
# - reproducible: every timestamp is the commit's (SOURCE_DATE_EPOCH), so one commit gives the same bytes;
# - what is built is the tracked files as they are in the checkout (`git stash create` makes a commit of
#   them without touching the checkout or the stash), never an untracked or ignored file lying around;
# - the sdist rebuilds to the same wheel, byte for byte (it carries everything the wheel needs);
# - twine check --strict: the metadata and README render as PyPI requires.
# Usage: PYTHON=<a python with build and twine> scripts/dist.sh [OUT]   (`make dist` runs it)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$(mkdir -p "${1:-$root/dist}" && cd "${1:-$root/dist}" && pwd)"
python="${PYTHON:-python3}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir "$work/again"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  src="$work/src"
  mkdir "$src"
  commit="$(git -C "$root" stash create)"
  git -C "$root" archive "${commit:-HEAD}" | tar -x -C "$src"
  export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct HEAD)}"
else
  # A copy without its history (the Compose image's build context holds only the files it needs): built
  # as it is, every timestamp SOURCE_DATE_EPOCH's, else 1980-01-01, the oldest a zip file can hold.
  src="$root"
  export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-315532800}"
fi

rm -f "$out"/airflow_leastaction-*
"$python" -m build --sdist --wheel --outdir "$out" "$src" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  exit 1
}
sdist=("$out"/airflow_leastaction-*.tar.gz)
wheel=("$out"/airflow_leastaction-*.whl)
"$python" -m build --wheel --outdir "$work/again" "${sdist[0]}" >"$work/build.log" 2>&1 || {
  cat "$work/build.log" >&2
  exit 1
}
cmp "${wheel[0]}" "$work/again/$(basename "${wheel[0]}")" || {
  echo "dist: the wheel rebuilt from ${sdist[0]##*/} differs from ${wheel[0]##*/}" >&2
  exit 1
}
"$python" -m twine check --strict "${sdist[0]}" "${wheel[0]}"
sha256sum "${sdist[0]}" "${wheel[0]}" | sed "s#$out/##"
