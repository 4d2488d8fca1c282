"""Generate the tables of docs/performance.md from the benchmarks' JSON results (bench/results/*.json).

A generated region of the document sits between ``<!-- generated:NAME -->`` and ``<!-- /generated -->``;
NAME is a benchmark (the JSON file ``bench/results/NAME.json``), optionally ``NAME:PART``. Only those
regions are rewritten; the prose around them stays as written.

    .venv/bin/python -m bench.report [--check] [--doc docs/performance.md] [--results bench/results]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from bench.tables import RENDERERS, ReportError

ROOT = Path(__file__).resolve().parent.parent
REGION = re.compile(r"(<!-- generated:(?P<name>[\w:]+) -->\n)(?P<body>.*?)(<!-- /generated -->)", re.S)


def _command(command: str) -> str:
    """The benchmark's command line without the JSON path (which names a file of the machine it ran on)."""
    words = command.split()
    if "--json" in words:
        i = words.index("--json")
        del words[i : i + 2]
    return " ".join(words)


def provenance(doc: dict, file: str | None = None) -> str:
    """Where the numbers come from (``file``: the JSON's name, default the benchmark's): the run's date,
    machine and backend settings, from its JSON."""
    env = doc["environment"]
    load = env["load_average_at_start"][0]
    parts = [
        f"Generated from `bench/results/{file or doc['benchmark'] + '.json'}` (`{_command(doc['command'])}`): "
        f"run {env['started_at']}, "
        f"{env['cpu_count']} CPUs, load average {load:.1f} at start"
    ]
    if "sqlite" in env:
        parts.append(f"SQLite {env['sqlite']}")
    if "postgres" in env:
        pg = env["postgres"]
        parts.append(
            f"PostgreSQL {pg['server_version'].split()[0]} with fsync={pg['fsync']}, "
            f"synchronous_commit={pg['synchronous_commit']}, full_page_writes={pg['full_page_writes']}"
        )
    return "; ".join(parts) + "."


def render_region(name: str, results: Path) -> str:
    bench, _, part = name.partition(":")
    if bench not in RENDERERS:
        raise ReportError(f"generated region {name!r}: no benchmark {bench!r} (known: {', '.join(sorted(RENDERERS))})")
    path = results / f"{bench}.json"
    if not path.exists():
        raise ReportError(f"generated region {name!r}: {path} does not exist (run the benchmark with --json)")
    doc = json.loads(path.read_text())
    lines = [provenance(doc, path.name), "", *RENDERERS[bench](doc, part or None)]
    return "\n".join(lines) + "\n"


def render_document(text: str, results: Path) -> str:
    """``text`` with every generated region rewritten from ``results``; everything else unchanged."""
    return REGION.sub(lambda m: m.group(1) + "\n" + render_region(m.group("name"), results) + "\n" + m.group(4), text)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--doc", default=str(ROOT / "docs" / "performance.md"))
    parser.add_argument("--results", default=str(ROOT / "bench" / "results"))
    parser.add_argument("--check", action="store_true", help="exit 1 if the document is not what the JSON gives")
    args = parser.parse_args(argv)
    doc = Path(args.doc)
    try:
        old = doc.read_text()
        new = render_document(old, Path(args.results))
    except (OSError, ReportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.check:
        if new != old:
            print(f"{doc} differs from what {args.results} generates: run python -m bench.report", file=sys.stderr)
            return 1
        return 0
    if new != old:
        doc.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
