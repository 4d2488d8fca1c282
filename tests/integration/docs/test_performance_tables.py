"""The tables of docs/performance.md and docs/upgrading.md are generated from the benchmarks' JSON, and only
those tables."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import ROOT

ENV = {
    "started_at": "2026-12-01T01:00:00+00:00",
    "cpu_count": 2,
    "load_average_at_start": [1.25, 1.0, 0.5],
    "sqlite": "3.40.1",
    "postgres": {
        "server_version": "15.18 (Debian)",
        "fsync": "on",
        "synchronous_commit": "on",
        "full_page_writes": "on",
    },
}


def retention_doc() -> dict:
    def run(backend, prune_s, before, during):
        return {
            "backend": backend,
            "rows": 100,
            "writers": 2,
            "batch_size": 50,
            "seed_s": 0.1,
            "prune_s": prune_s,
            "pruned": {"la_consumption": 20, "la_gate_decision": 100},
            "transactions": {},
            "write_latency_before_s": before,
            "write_latency_during_s": during,
        }

    return {
        "benchmark": "bench_retention",
        "command": "python -m bench.bench_retention --rows 100 --json x",
        "environment": ENV,
        "inputs": {"rows": 100, "writers": 2, "write_interval_s": 0.05, "batch_size": 50},
        "results": [
            run("sqlite", 2.0, [0.001, 0.003, 0.002], [0.010, 0.030]),
            run("postgres", 0.5, [0.004], [0.006, 0.008, 0.020]),
        ],
    }


DOC = """# Title

Prose a person wrote, kept as is.

<!-- generated:bench_retention -->
a stale table
<!-- /generated -->

More prose.
"""


def report(doc: Path, results: Path, *args: str) -> subprocess.CompletedProcess:
    """``python -m bench.report`` as a maintainer runs it, on a document and results of the test's own."""
    argv = [sys.executable, "-m", "bench.report", "--doc", str(doc), "--results", str(results), *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_report_is_deterministic_and_rewrites_only_generated_regions(tmp_path):
    (tmp_path / "bench_retention.json").write_text(json.dumps(retention_doc()))
    doc = tmp_path / "performance.md"
    doc.write_text(DOC)
    assert report(doc, tmp_path, "--check").returncode == 1  # the stale table differs from the JSON
    assert report(doc, tmp_path).returncode == 0
    first = doc.read_text()
    assert report(doc, tmp_path).returncode == 0
    assert doc.read_text() == first  # regenerating a generated document changes nothing
    assert report(doc, tmp_path, "--check").returncode == 0
    assert "a stale table" not in first
    before, _, rest = first.partition("<!-- generated:bench_retention -->\n")
    body, _, after = rest.partition("<!-- /generated -->")
    assert before == "# Title\n\nProse a person wrote, kept as is.\n\n"
    assert after == "\n\nMore prose.\n"
    # rows/s = (100 + 20) / prune time; write latencies as median / max in ms, with the sample count.
    assert "| SQLite | 100 | 20 | 2.0 s | 60 | 2.0 / 3.0 (n=3) | 20.0 / 30.0 (n=2) |" in body
    assert "| PostgreSQL | 100 | 20 | 0.5 s | 240 | 4.0 / 4.0 (n=1) | 8.0 / 20.0 (n=3) |" in body
    assert "fsync=on, synchronous_commit=on, full_page_writes=on" in body
    assert "(`python -m bench.bench_retention --rows 100`)" in body  # the command, not the JSON path


def test_region_without_results_names_the_region_and_the_file(tmp_path):
    doc = tmp_path / "performance.md"
    doc.write_text(DOC)
    done = report(doc, tmp_path)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("error: ")
    assert "bench_retention" in done.stderr and "bench_retention.json does not exist" in done.stderr
    assert doc.read_text() == DOC


@pytest.mark.parametrize("page", ["performance.md", "upgrading.md"])
def test_committed_results_regenerate_the_published_document_unchanged(tmp_path, page):
    doc = tmp_path / page
    doc.write_text((ROOT / "docs" / page).read_text())
    assert "<!-- generated:" in doc.read_text()
    done = report(doc, ROOT / "bench" / "results", "--check")
    assert done.returncode == 0, done.stderr
