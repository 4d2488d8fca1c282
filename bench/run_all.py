"""Run every benchmark with the documented arguments, write bench/results/*.json, regenerate the tables
of docs/performance.md and docs/upgrading.md: ``make bench``. ``--only NAME[,NAME]`` runs some of them
(the others' JSON stays).

The argument lists below are the one place that says how the published figures were produced.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"

#: Benchmark module -> its arguments, in the order they run (one at a time: they share the machine).
BENCHMARKS: dict[str, list[str]] = {
    "bench_triggers": [
        "--ks",
        "100,1000,10000",
        "--backends",
        "sqlite,postgres",
        "--processes-k",
        "100000",
        "--processes",
        "4",
    ],
    # 100,000 gates over 4 triggerers: spread whatever they wait on, routed by parents' queues, by team.
    "bench_trigger_routes": ["--k", "100000", "--processes", "4"],
    # Run-condition gates waiting on their runs in one triggerer: one question per DAG per tick, or one per gate.
    "bench_run_states": ["--ks", "1000,10000", "--runs", "100", "--modes", "reads,shared,per_gate"],
    "bench_retention": [
        "--rows",
        "1000000",
        "--writers",
        "2",
        "--write-interval",
        "0.05",
        "--backends",
        "sqlite,postgres",
    ],
    "bench_dbt_queue": ["--parts", "enqueue,builds,replay", "--requests", "1500", "--k", "4"],
    "bench_dbt_state": ["--hours", "4", "--pipelines", "10"],
    "bench_gate": ["--parts", "engine,writes,latency", "--runs", "7", "--attempts", "200"],
    # Expected times: the backtest on a generated history (with the same-kind-of-day what-if) and the speed.
    "bench_expectations": ["--parts", "backtest,speed", "--what-if"],
    "bench_ui": ["--backend", "sqlite", "--backend", "postgres", "--repeat", "15"],
    # The catalog migrations on bench_ui's catalog, for docs/upgrading.md.
    "bench_migrations": ["--backend", "sqlite", "--backend", "postgres"],
    # The pages before the gate verdicts, with them as first built, and now: each on its own copy of one catalog.
    "compare_ui": [
        "--version",
        "pre-verdicts=e4ae7fe",
        "--version",
        "verdicts=93570a3",
        "--version",
        "current=.",
        "--backend",
        "sqlite",
        "--backend",
        "postgres",
        "--repeat",
        "15",
    ],
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated benchmark names (default: all)")
    args = parser.parse_args(argv)
    names = args.only.split(",") if args.only else list(BENCHMARKS)
    unknown = [n for n in names if n not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(unknown)} (known: {', '.join(BENCHMARKS)})")
    failed = []
    for name in names:
        print(f"== {name}", flush=True)
        cmd = [sys.executable, "-m", f"bench.{name}", *BENCHMARKS[name], "--json", str(RESULTS / f"{name}.json")]
        if subprocess.run(cmd, cwd=ROOT).returncode != 0:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    from bench.report import main as report

    return report([]) or report(["--doc", str(ROOT / "docs" / "upgrading.md")])


if __name__ == "__main__":
    sys.exit(main())
