"""K waiting interval gates over several triggerer processes on one PostgreSQL catalog: today's layout (gates
spread evenly whatever they wait on) against routed (one ``[leastaction] trigger_queues`` queue per process,
each gate where its parents hash), side by side in one run, released (a) by every parent completing in one
transaction and (b) by parents completing at a steady rate; then the estimate for a larger deployment
from the measured per-gate and per-parent costs. The gates are :mod:`bench.trigger_layouts`'; the runs
:mod:`bench.trigger_route_runs`'; the figures :mod:`bench.trigger_route_figures`'.

    .venv/bin/python -m bench.bench_trigger_routes [--k 100000] [--processes 4] [--json PATH]
"""

from __future__ import annotations

import argparse
import os
import sys

from bench.trigger_layouts import LAYOUTS


def main(argv=None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json
    from bench.trigger_layouts import generate, own_queue_share, own_team_share, place, watched
    from bench.trigger_release import POLL, WAIT_TICKS
    from bench.trigger_route_figures import layout_figures, structure_of
    from bench.trigger_route_runs import SCENARIOS, run_layout

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=100000, help="waiting gates in all")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--rate-per-min", type=float, default=1000.0, help="steady scenario: parents per minute")
    parser.add_argument("--window-s", type=float, default=60.0, help="steady scenario: seconds of completions")
    parser.add_argument("--estimate-gates", type=int, default=1_000_000)
    parser.add_argument("--estimate-triggerers", type=int, default=40)
    parser.add_argument("--pool-size", type=int, default=min(32, (os.cpu_count() or 1) + 4))
    parser.add_argument("--json", help="write inputs, environment, every raw sample and the derived figures here")
    parser.add_argument(
        "--derive",
        metavar="JSON",
        help="only derive the figures and the estimate again from the raw samples of this JSON, and rewrite it",
    )
    args = parser.parse_args(argv)
    if args.derive:
        return rederive(args.derive)
    temporary_airflow_home()
    env = environment(["postgres"])
    gates = generate(args.k)
    scenarios = args.scenarios.split(",")
    inputs = {
        "k": args.k,
        "processes": args.processes,
        "parents": len(gates.parents),
        "teams": gates.teams,
        "scenarios": scenarios,
        "rate_per_min": args.rate_per_min,
        "window_s": args.window_s,
        "poll_interval_s": POLL,
        "wait_ticks": WAIT_TICKS,
        "thread_pool_size": args.pool_size,
        "estimate_gates": args.estimate_gates,
        "estimate_triggerers": args.estimate_triggerers,
    }
    # The larger deployment's gates and where each layout puts them: counted first (a minute or two of CPU).
    structure = structure_of(generate(args.estimate_gates), args.estimate_triggerers)
    placements = {layout: place(gates, args.processes, layout) for layout in LAYOUTS}
    layouts = {layout: {"watched_parents": watched(gates, p, args.processes)} for layout, p in placements.items()}
    layouts["routed"]["all_parents_in_own_queue"] = own_queue_share(gates, args.processes, placements["routed"])
    layouts["team"]["all_parents_in_own_team"] = own_team_share(gates)
    print(f"{args.k:,} gates, {len(gates.parents):,} parents, {gates.teams} teams; {layouts}", flush=True)
    runs = []
    for scenario in scenarios:
        for layout in LAYOUTS:
            result = run_layout(
                gates, placements[layout], args.processes, scenario, args.pool_size, args.rate_per_min, args.window_s
            )
            result.update(layout=layout, scenario=scenario)
            runs.append(result)
            for n, fig in enumerate(layout_figures(result)):
                print(f"{scenario} {layout} process {n}: {fig}", flush=True)
    derived = derive(runs, inputs, structure)
    print(derived, flush=True)
    write_json(args.json, "bench_trigger_routes", inputs, env, runs, layouts=layouts, derived=derived)
    return 0


def rederive(path: str) -> int:
    """The derived section of a written JSON made again from its raw samples and inputs."""
    import json
    from pathlib import Path

    from bench.trigger_layouts import generate
    from bench.trigger_route_figures import structure_of

    doc = json.loads(Path(path).read_text())
    i = doc["inputs"]
    structure = doc.get("derived", {}).get("structure") or structure_of(
        generate(i["estimate_gates"]), i["estimate_triggerers"]
    )
    doc["derived"] = derive(doc["results"], i, structure)
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True, default=str) + "\n")
    return 0


def derive(runs: list[dict], inputs: dict, structure: dict) -> dict:
    """Routed against today per release kind, the measured unit costs, and the estimate built from them."""
    from bench.trigger_route_figures import costs, estimate, layout_figures, ratios

    scenarios = inputs["scenarios"]
    by = {(r["scenario"], r["layout"]): layout_figures(r) for r in runs}
    unit = costs({"runs": runs, "poll_interval_s": inputs["poll_interval_s"]})
    out = {"ratios": {}, "costs": unit, "structure": structure}
    if "one_transaction" in scenarios:
        out["estimate"] = estimate(unit, structure, inputs["poll_interval_s"], inputs["rate_per_min"])
    for scenario in scenarios:
        out["ratios"][scenario] = {
            layout: ratios(by[scenario, "today"], by[scenario, layout]) for layout in LAYOUTS if layout != "today"
        }
    return out


if __name__ == "__main__":
    sys.exit(main())
