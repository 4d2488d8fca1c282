"""Run every benchmark in this folder with its default arguments: ``make bench``."""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path


def main() -> int:
    failed = []
    for info in sorted(pkgutil.iter_modules([str(Path(__file__).parent)]), key=lambda m: m.name):
        if not info.name.startswith("bench_"):
            continue
        print(f"== {info.name}", flush=True)
        module = importlib.import_module(f"bench.{info.name}")
        if module.main([]) != 0:
            failed.append(info.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
