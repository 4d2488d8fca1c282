"""K waiting ParentIntervalTriggers in one event loop: shared polling vs per-trigger polling.

For K = 100, 1,000 and 10,000 triggers with 3 parents each, on a real SQLite file and a real PostgreSQL
database, measures catalog queries per poll tick, CPU per tick, memory per waiting trigger and the
release latency after the parents complete, with the collector in its steady state (the full pass the
triggers' arrival made due runs, timed, before the idle samples). The baseline is what one deferrable
sensor per task does on its own, as Airflow's ``WorkflowTrigger`` polls per trigger: one snapshot of its
own parents per tick (2 statements) in a worker thread of the event loop's pool.

    .venv/bin/python -m bench.bench_triggers [--ks 100,1000,10000] [--backends sqlite,postgres] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.trigger_release import POLL, WAIT_TICKS, derived
from bench.trigger_runs import run_one, run_processes


def main(argv=None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="100,1000,10000")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--baseline-max-k", type=int, default=10000)
    parser.add_argument(
        "--pool-size",
        type=int,
        default=min(32, (os.cpu_count() or 1) + 4),
        help="worker threads of the event loop (default: Python's default executor size)",
    )
    parser.add_argument(
        "--processes-k",
        type=int,
        default=0,
        help="also run this many waiting triggers spread over --processes triggerer processes (0: not run)",
    )
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--json", help="write inputs, environment and every raw sample here")
    args = parser.parse_args(argv)
    temporary_airflow_home()
    backends = args.backends.split(",")
    env = environment(backends)
    inputs = {
        "ks": [int(x) for x in args.ks.split(",")],
        "backends": backends,
        "poll_interval_s": POLL,
        "wait_ticks": WAIT_TICKS,
        "parents_per_trigger": 3,
        "baseline_max_k": args.baseline_max_k,
        "thread_pool_size": args.pool_size,
        "processes_k": args.processes_k,
        "processes": args.processes,
    }
    rows = []
    for backend in backends:
        for k in inputs["ks"]:
            shared = run_one("shared", backend, k, args.pool_size)
            base = run_one("baseline", backend, k, args.pool_size) if k <= args.baseline_max_k else None
            rows.append({"backend": backend, "k": k, "shared": shared, "baseline": base})
            print(format_row(backend, k, derived(shared), base and derived(base)), flush=True)
    spread = []
    for backend in backends if args.processes_k else ():
        runs = run_processes(backend, args.processes_k, args.processes, args.pool_size)
        spread.append({"backend": backend, "k": args.processes_k, "processes": runs})
        for n, run in enumerate(runs):
            print(format_row(backend, f"{args.processes_k:,} (process {n})", derived(run), None), flush=True)
    write_json(args.json, "bench_triggers", inputs, env, rows, spread=spread)
    return 0


def format_row(backend, k, shared, base) -> str:
    def cell(key, fmt):
        s = format(shared[key], fmt)
        if base is None:
            return s
        ratio = base[key] / shared[key] if shared[key] else float("inf")
        return f"{s} / {format(base[key], fmt)} ({ratio:.1f}x)"

    k = k if isinstance(k, str) else f"{k:,}"
    return (
        f"| {backend} | {k} | {cell('statements_per_tick', '.1f')} | {cell('cpu_ms_per_tick', '.1f')} | "
        f"{cell('kib_per_trigger', '.1f')} | {cell('release_median_s', '.2f')} | "
        f"{cell('release_p99_s', '.2f')} | full GC {shared['full_gc_s']:.2f} s in release, "
        f"{shared['full_gc_waiting_s'] or 0:.2f} s per pass while waiting |"
    )


if __name__ == "__main__":
    sys.exit(main())
