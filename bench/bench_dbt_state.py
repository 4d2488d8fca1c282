"""The state-aware dbt queue over a simulated day, four ways side by side in one run.

A generated dbt-duckdb project (40+ models in 4 layers, one CSV source per staging model; see
tests/helpers/dbt_day.py). Each simulated hour, 10% of the sources receive new data (a row in their file,
and their loader's completion in the catalog); then the pipelines due that hour request the models
downstream of their sources, and:

* naive: each request runs its own ``dbt build`` of its selection, one after another;
* dedup: the queue as it was, every claimed model built (``state_aware=False``), one drain per hour;
* state_aware: the queue reusing every model whose code and inputs have not changed, one drain per hour;
* minimum: the builds the day needs, counted from the manifest and the day's changes alone (a requested
  model whose inputs changed since its last build), and, coarser, the requested models downstream of a
  source that changed since they were last built.

Every strategy has its own copy of the project and warehouse, built once before the day (the queues through
a first drain). Each state-aware pass is then checked against the minimum: no model built whose inputs were
unchanged, none reused whose inputs had changed.

    .venv/bin/python -m bench.bench_dbt_state [--hours 24] [--pipelines 20] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

GOAL_WITHIN_MINIMUM = 0.05
GOAL_FEWER_THAN_DEDUP = 3.0


class Leg:
    """One strategy's copy of the project and warehouse, its queue and its tallies."""

    def __init__(self, name: str, project: Path, workdir: Path):
        from airflow_leastaction.catalog.engine import get_engine
        from airflow_leastaction.dbt.queue_store import QueueStore
        from airflow_leastaction.dbt.runner import DbtRunner

        self.name, self.project = name, workdir / name
        shutil.copytree(project, self.project, ignore=shutil.ignore_patterns("logs", "*.wal"))
        self.runner = DbtRunner(self.project)
        self.queue = None if name == "naive" else QueueStore(get_engine(f"sqlite:///{workdir}/{name}.db", migrate=True))
        self.tally = {"model_builds": 0, "dbt_commands": 0, "dbt_builds": 0, "reused": 0, "wall_s": 0.0}
        self.hours: list[dict] = []

    def add(self, began: float, built: int, commands: int, builds: int, reused: int = 0) -> None:
        self.tally["wall_s"] += time.perf_counter() - began
        for k, v in (("model_builds", built), ("dbt_commands", commands), ("dbt_builds", builds), ("reused", reused)):
            self.tally[k] += v
        self.hours.append({"model_builds": built, "dbt_commands": commands, "reused": reused})

    def results(self) -> dict:
        return {**self.tally, "wall_s": round(self.tally["wall_s"], 2), "hours": self.hours}


def run_day(workdir: Path, hours: int, pipelines: int, seed: int) -> dict:
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.dbt.runner import DbtRunner
    from airflow_leastaction.identity import TaskIdentity
    from tests.helpers import dbt_day

    project = dbt_day.write_project(workdir)
    with DbtRunner(project).session() as session:
        session.invoke(["build"]).raise_for_exit()  # the warehouse exists before the day
        manifest = session.manifest()
    parents, ids = manifest["parent_map"], dbt_day.source_ids(manifest)
    plan = dbt_day.plan_day(ids, hours=hours, pipelines=pipelines, seed=seed)
    legs = {name: Leg(name, project, workdir) for name in ("naive", "dedup", "state_aware")}
    catalog = CatalogStore(legs["state_aware"].queue.engine)
    for name in ("dedup", "state_aware"):
        dbt_day.before_the_day(
            legs[name].queue, legs[name].runner, catalog, manifest, state_aware=name == "state_aware"
        )
    row = 1
    for hour in range(hours):
        for s in plan.changes[hour]:
            for leg in legs.values():
                dbt_day.land(leg.project, s, hour, row)
            catalog.report_completion(TaskIdentity(*dbt_day.loader(s)), dbt_day.slot(hour))
            row += 1
        _naive_hour(legs["naive"], manifest, plan, hour)
        for name in ("dedup", "state_aware"):
            _queue_hour(legs[name], manifest, plan, hour)
        print(
            f"hour {hour:2d}: " + ", ".join(f"{n} {leg.tally['model_builds']}" for n, leg in legs.items()), flush=True
        )
    needed = dbt_day.minimum_builds(plan, parents, ids)
    wrong = dbt_day.wrong_decisions(dbt_day.day_passes(legs["state_aware"].queue), needed, dbt_day.hour_of)
    return {
        "project": {"models": sum(u.startswith("model.") for u in manifest["nodes"]), "sources": len(ids),
                    "layers": list(dbt_day.LAYERS)},
        "requests": sum(len(plan.due(h)) for h in range(hours)),
        "pipelines": [{"name": p.name, "sources": list(p.sources), "every_hours": p.every, "offset": p.offset}
                      for p in plan.pipelines],
        "changes": {str(h): s for h, s in plan.changes.items()},
        "strategies": {
            **{name: leg.results() for name, leg in legs.items()},
            "minimum": {
                "model_builds": len(needed),
                "downstream_of_changes": dbt_day.downstream_of_changes(plan, parents, ids),
            },
        },
        "wrong_decisions": {k: [list(x) for x in v] for k, v in wrong.items()},
    }  # fmt: skip


def _naive_hour(leg: Leg, manifest: dict, plan, hour: int) -> None:
    from tests.helpers import dbt_day

    began, built, ids = time.perf_counter(), 0, dbt_day.source_ids(manifest)
    due = plan.due(hour)
    for pipeline in due:
        models = dbt_day.downstream(manifest["parent_map"], [ids[s] for s in pipeline.sources])
        with leg.runner.session() as session:
            inv = session.build(sorted(m.fqn for m in dbt_day.planned(manifest, models)))
            inv.raise_for_exit()
            statuses = inv.node_results().statuses  # read before the session's target path goes
        built += sum(1 for u, s in statuses.items() if u.startswith("model.") and s == "success")
    leg.add(began, built, len(due), len(due))


def _queue_hour(leg: Leg, manifest: dict, plan, hour: int) -> None:
    from tests.helpers import dbt_day

    began = time.perf_counter()
    if not dbt_day.request_hour(leg.queue, manifest, plan, hour):
        leg.add(began, 0, 0, 0)
        return
    state_aware = leg.name == "state_aware"
    report = dbt_day.worker(leg.queue, leg.runner, state_aware=state_aware).drain()
    batches = report.batches
    leg.add(
        began,
        built=sum(len(b.built) for b in batches),
        commands=sum(len(b.invocations) for b in batches) + state_aware,  # the state-aware drain's dbt parse
        builds=sum(1 for b in batches if "build" in b.invocations),
        reused=sum(len(b.reused) for b in batches),
    )


def verdict(results: dict) -> dict:
    """The goals, from the strategies' counts: within 5% of the minimum, 3x fewer than dedup, no wrong pass."""
    s = results["strategies"]
    state, minimum, dedup = s["state_aware"]["model_builds"], s["minimum"]["model_builds"], s["dedup"]["model_builds"]
    return {
        "over_minimum": round(state / minimum - 1, 4) if minimum else None,
        "fewer_than_dedup": round(dedup / state, 2) if state else None,
        "within_minimum": minimum > 0 and state <= minimum * (1 + GOAL_WITHIN_MINIMUM),
        "fewer_than_dedup_goal": state > 0 and dedup >= GOAL_FEWER_THAN_DEDUP * state,
        "no_wrong_decision": not any(results["wrong_decisions"].values()),
    }


def main(argv: list[str] | None = None) -> int:
    from bench.common import environment, temporary_airflow_home, write_json

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hours", type=int, default=24)
    parser.add_argument("--pipelines", type=int, default=20)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", help="write inputs, environment and every count here")
    args = parser.parse_args(argv)
    temporary_airflow_home()
    env = environment(["sqlite"])
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="leastaction-bench-dbt-state-") as tmp:
        results = run_day(Path(tmp), args.hours, args.pipelines, args.seed)
    results["verdict"] = verdict(results)
    results["elapsed_s"] = round(time.perf_counter() - began, 1)
    print(json.dumps({k: results[k] for k in ("verdict", "wrong_decisions")}, indent=2))
    write_json(
        args.json,
        "bench_dbt_state",
        {"hours": args.hours, "pipelines": args.pipelines, "seed": args.seed, "share_of_sources_per_hour": 0.1},
        env,
        results,
    )
    failed = [k for k in ("within_minimum", "fewer_than_dedup_goal", "no_wrong_decision") if not results["verdict"][k]]
    if failed:
        print(f"goals not met: {', '.join(failed)}", file=sys.stderr)
    return 1 if not results["verdict"]["no_wrong_decision"] else 0


if __name__ == "__main__":
    sys.exit(main())
