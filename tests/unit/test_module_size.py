"""Modules stay under 400 lines (docs/contributing.md, house rules): a longer one holds two concepts."""

from __future__ import annotations

import importlib.util
from pathlib import Path

LIMIT = 400
ROOT = Path(importlib.util.find_spec("airflow_leastaction").origin).parent
#: Modules still over the limit, each to be split; an entry goes when its module is back under the limit.
OVER_FOR_NOW: set[str] = set()


def _lengths() -> dict[str, int]:
    return {
        str(path.relative_to(ROOT)): len(path.read_text(encoding="utf-8").splitlines())
        for path in ROOT.rglob("*.py")
        if "migrations" not in path.relative_to(ROOT).parts
    }


def test_no_module_is_over_the_limit():
    lengths = _lengths()
    over = {name: n for name, n in lengths.items() if n > LIMIT and name not in OVER_FOR_NOW}
    assert over == {}, f"modules over {LIMIT} lines: {over}"
    back = sorted(name for name in OVER_FOR_NOW if lengths.get(name, 0) <= LIMIT)
    assert back == [], f"back under {LIMIT} lines (or gone): take them out of OVER_FOR_NOW: {back}"
