"""Expected times and early deadline warnings, replayed on a generated history; and the pass's speed.

* backtest: a seeded history (``tests/helpers/expected_times.py``: outside loads and hourly feeds, DAGs of chains
  and fans, weekday patterns, late loads and failed tasks run again). Each morning of the last
  ``--replay-days`` slot days is replayed (``tests/helpers/expectation_replay.py``): for every daily task, 1 hour and
  15 minutes before its actual completion, ``expect()`` on the Nodes the catalog held then; and, every
  ``--step-s`` seconds and on every record change, whether its expected p90 was past its deadline while it
  was not complete (the first such instant is the warning). Side by side in the same run: the median past
  the deadline, the chance of missing at 30, 50 and 70% (the gate's rule at 50%), and Airflow's
  ``DeadlineAlert``, which calls back at the deadline itself; for deadlines set ``--margins`` minutes over
  the 4-week p90 (the first is the published one), all in one replay. ``--what-if``
  replays it again with each node's history limited to runs of its own kind of day (Monday, weekday,
  weekend), a rule the estimate does not have.
* speed: ``expect()`` on the 10,000 waiting slots of a generated catalog of ``--speed-tasks`` tasks, and
  ``expectations_for`` on a real SQLite catalog holding the same history, cold (history cache emptied)
  and cached.

    .venv/bin/python -m bench.bench_expectations [--parts backtest,speed] [--what-if] [--json PATH]
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sys
import time

from tests.helpers.expectation_replay import (
    AHEAD_MIN,
    WARNING_COLUMNS,
    Morning,
    deadline_offsets,
    horizon_errors,
    nearest_rank,
    warning_summary,
    warnings_for,
)
from tests.helpers.expected_times import MINUTE, generate

HORIZONS = (60, 15)  # minutes before the actual completion
GOAL_WARNED_AHEAD, GOAL_FALSE = 0.8, 0.1
GOAL_PASS_S = 0.2
#: The chance of missing at one half, at any instant before the deadline; and the rule a gate warns by.
CHANCE_LEAD, GATE_LEAD = "chance50_lead_min", "gate_lead_min"


def backtest(args, *, same_kind_of_day: bool) -> dict:
    history = generate(args.seed, args.days, **_shape(args))
    first = args.days - args.replay_days
    margins = [int(m) for m in args.margins.split(",")]
    sets = {str(m): deadline_offsets(history, first, margin=m * MINUTE) for m in margins}
    errors: dict[str, list] = {str(h): [] for h in HORIZONS}
    warned: dict[str, list[list]] = {name: [] for name in sets}
    for day in range(first, args.days):
        morning = Morning(history, day, same_kind_of_day=same_kind_of_day)
        for row in horizon_errors(morning, tuple(h * MINUTE for h in HORIZONS)):
            err = round(row["error_min"], 3) if "error_min" in row else None
            errors[str(int(row["horizon_min"]))].append([err, row.get("within_p90"), row["status"]])
        for name, rows in warnings_for(morning, sets, step=dt.timedelta(seconds=args.step_s)).items():
            warned[name].extend([_rounded(row[c]) for c in WARNING_COLUMNS] for row in rows)
        print(f"day {day}: {sum(r[5] for r in warned[str(margins[0])])} missed deadlines so far", flush=True)
    replayed = [r for runs in history.runs.values() for r in runs if first <= _slot_day(r, history) < args.days]
    return {
        "world": {
            "tasks": len(history.tasks),
            "daily_tasks": len(history.daily_tasks()),
            "dags": len({t.dag for t in history.tasks.values() if t.dag}),
            "outside_loads": sum(1 for t in history.tasks.values() if t.dag is None and not t.hourly),
            "hourly_feeds": sum(1 for t in history.tasks.values() if t.hourly),
            "slot_records": sum(len(r) for r in history.runs.values()),
            "incidents_replayed": {k: sum(1 for r in replayed if r.incident == k) for k in ("late", "rerun")},
        },
        "errors": errors,
        "warning_columns": list(WARNING_COLUMNS),
        "warnings": warned[str(margins[0])],
        "margin_sweep": {name: rows for name, rows in warned.items() if name != str(margins[0])},
    }


def bound(args) -> dict:
    """The best any warning rule could do on the same mornings and deadlines: the generator's own chance of
    missing (:mod:`bench.expectation_oracle`) read 30 minutes before each deadline. Warning at that instant
    on a threshold is the Bayes rule for "warned 30 minutes ahead" against false warnings: a rule that
    warns earlier knows less, one that warns later is not ahead."""
    from bench.expectation_oracle import Oracle

    history = generate(args.seed, args.days, **_shape(args))
    first = args.days - args.replay_days
    margin = int(args.margins.split(",")[0])
    deadlines = deadline_offsets(history, first, margin=margin * MINUTE)
    rows = []
    for day in range(first, args.days):
        morning = Morning(history, day)
        oracle = Oracle(morning, samples=args.bound_samples, seed=args.seed * 1000 + day)
        asked: dict = {}
        for key in morning.targets:
            m = morning.members[key]
            due = m.run.slot + deadlines[m.task]
            at = due - AHEAD_MIN * MINUTE
            if m.run.finished_at <= at:
                rows.append([m.task, day, False, None])  # done by then: nothing to warn of
            else:
                asked.setdefault(at, {})[key] = due
        for at, dues in sorted(asked.items()):
            for key, chance in oracle.chances(at, dues).items():
                m = morning.members[key]
                rows.append([m.task, day, m.run.finished_at > dues[key], round(chance, 4)])
        print(f"bound, day {day}", flush=True)
    return {"samples": args.bound_samples, "rows": rows}


def _shape(args) -> dict:
    return {"dags": args.dags, "tasks_per_dag": args.tasks_per_dag, "outside": args.outside, "feeds": args.feeds}


def _slot_day(run, history) -> int:
    return (run.slot - history.runs[run.task][0].slot).days


def _rounded(value):
    return round(value, 3) if isinstance(value, float) else value


def speed(args) -> dict:
    from bench.common import fresh_database
    from bench.expectation_catalog import time_pure, time_reads, waiting_instant
    from tests.helpers.expectation_catalog import write_catalog

    dags = (args.speed_tasks - 10) // args.tasks_per_dag
    outside = args.speed_tasks - dags * args.tasks_per_dag
    shape = {"dags": dags, "tasks_per_dag": args.tasks_per_dag, "outside": outside, "feeds": 0}
    history = generate(args.seed, args.speed_days, **shape)
    day = args.speed_days - 1
    now = waiting_instant(history, day)
    load = list(os.getloadavg())
    pure, found = time_pure(Morning(history, day), now, args.repeats)
    url, drop = fresh_database("sqlite")
    try:
        began = time.perf_counter()
        records = write_catalog(url, history, now)
        load_s = time.perf_counter() - began
        reads = time_reads(url, history, day, now, args.read_repeats, found)
    finally:
        drop()
    return {"tasks": len(history.tasks), "history_days": args.speed_days, "load_average_at_start": load, "pure": pure,
            "catalog": {"slot_records": records, "load_s": round(load_s, 1), **reads}}  # fmt: skip


def verdict(results: dict) -> dict:
    out = {}
    if "backtest" in results:
        for rule, lead in (("p90", "lead_min"), ("chance", CHANCE_LEAD), ("gate", GATE_LEAD)):
            w = warning_summary(results["backtest"]["warnings"], lead)
            ahead = w["warned_ahead"] / w["missed"] if w["missed"] else None
            false = w["false"] / w["warnings"] if w["warnings"] else None
            out[f"{rule}_warned_ahead_share"], out[f"{rule}_false_share"] = ahead, false
            out[f"{rule}_warnings_goal"] = (
                bool(w["missed"]) and ahead >= GOAL_WARNED_AHEAD and (false or 0) <= GOAL_FALSE
            )
    if "speed" in results:
        out["pass_median_s"] = nearest_rank(results["speed"]["pure"]["seconds"], 0.5)
        out["pass_goal"] = out["pass_median_s"] < GOAL_PASS_S
    return out


def main(argv: list[str] | None = None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", default="backtest,speed")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--days", type=int, default=60)
    parser.add_argument("--replay-days", type=int, default=30)
    parser.add_argument("--dags", type=int, default=10)
    parser.add_argument("--tasks-per-dag", type=int, default=18)
    parser.add_argument("--outside", type=int, default=14)
    parser.add_argument("--feeds", type=int, default=6)
    parser.add_argument("--step-s", type=int, default=60)
    parser.add_argument(
        "--margins",
        default="15,30,60",
        help="minutes over the 4-week p90 a deadline is set at; the first is the published one",
    )
    parser.add_argument("--what-if", action="store_true", help="replay again with same-kind-of-day history")
    parser.add_argument("--bound", action="store_true", help="the best any rule could do (the generator's chance)")
    parser.add_argument("--bound-samples", type=int, default=1000)
    parser.add_argument("--speed-tasks", type=int, default=10_000)
    parser.add_argument("--speed-days", type=int, default=35)
    parser.add_argument("--repeats", type=int, default=50)
    parser.add_argument("--read-repeats", type=int, default=20)
    parser.add_argument("--json", help="write inputs, environment and every sample here")
    args = parser.parse_args(argv)
    parts = args.parts.split(",")
    if unknown := set(parts) - {"backtest", "speed"}:
        parser.error(f"unknown part {', '.join(sorted(unknown))} (known: backtest, speed)")
    if not 0 < args.replay_days < args.days - 28:
        parser.error("--replay-days must leave at least 4 weeks of history before the replay (for the deadlines)")
    temporary_airflow_home()
    env = environment(["sqlite"])
    results: dict = {}
    if "speed" in parts:  # first, while the load average in the header line is the machine's
        results["speed"] = speed(args)
    if "backtest" in parts:
        results["backtest"] = backtest(args, same_kind_of_day=False)
        if args.what_if:
            results["what_if_same_kind_of_day"] = backtest(args, same_kind_of_day=True)
        if args.bound:
            results["bound"] = bound(args)
    results["verdict"] = verdict(results)
    print(results["verdict"])
    inputs = {k: v for k, v in vars(args).items() if k not in ("json", "parts")}
    write_json(args.json, "bench_expectations", {**inputs, "parts": parts, "horizons_min": list(HORIZONS),
               "goals": {"warned_ahead": GOAL_WARNED_AHEAD, "ahead_min": AHEAD_MIN, "false": GOAL_FALSE,
                         "pass_s": GOAL_PASS_S}}, env, results)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
