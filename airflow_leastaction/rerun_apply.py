"""Carrying out a re-run plan through Airflow 3's backfill API, wave by wave, parents first.

Each DAG of the plan gets backfills of exactly its affected runs (``reprocess_behavior="completed"``, its
affected slots cut into ranges that hold no other run of its schedule), with the DAG's own
``max_active_runs``; one backfill of a DAG at a time, as Airflow allows. A wave starts once every backfill
of the wave before it has completed. Before anything starts, the API is called once (reachable, login
accepted) and every DAG of the plan is looked up: a deployment that cannot take the plan starts none of it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable
from dataclasses import dataclass

from airflow_leastaction.airflow_api import AirflowApi
from airflow_leastaction.exceptions import PlanError
from airflow_leastaction.intervals.slots import slots_in
from airflow_leastaction.rerun_plan import RerunPlan, backfill_ranges
from airflow_leastaction.run_conditions.waves import Node, waves

#: Seconds between two looks at a running backfill.
BACKFILL_POLL = 5.0


@dataclass(frozen=True)
class DagRerun:
    """The runs of one DAG a plan re-runs: its affected slots as backfill ranges."""

    dag_id: str
    ranges: tuple[tuple[dt.datetime, dt.datetime], ...]
    max_active_runs: int


def dag_waves(plan: RerunPlan) -> list[list[str]]:
    """The plan's Airflow DAGs in waves: a DAG re-runs after every DAG it consumed from. Two DAGs that
    consume from each other (a task of each upstream of the other) cannot be backfilled whole, in order."""
    upstream: dict[str, set[str]] = {}
    for pk in plan.runs:
        t = plan.tasks[pk]
        if t.external:
            continue
        ups = {plan.tasks[u].dag_id for u in plan.upstream.get(pk, ()) if not plan.tasks[u].external}
        upstream.setdefault(t.dag_id, set()).update(ups - {t.dag_id})
    try:
        return waves({d: Node(d, tuple(sorted(u))) for d, u in upstream.items()})
    except Exception as exc:  # a cycle between DAGs
        raise PlanError(f"the plan's DAGs cannot be backfilled one after another: {exc}") from None


def dag_reruns(plan: RerunPlan, api: AirflowApi) -> list[list[DagRerun]]:
    """What to backfill, wave by wave, with each DAG's ``max_active_runs`` (read first: an unknown DAG
    fails here, before anything starts)."""
    out = []
    for wave in dag_waves(plan):
        out.append([])
        for dag_id in wave:
            pks = [pk for pk in plan.runs if plan.tasks[pk].dag_id == dag_id and not plan.tasks[pk].external]
            slots = sorted({s for pk in pks for s in plan.runs[pk]})
            scheduled = next((plan.tasks[pk] for pk in pks if plan.tasks[pk].cron), None)
            schedule = (
                slots_in(scheduled.cron, slots[0], slots[-1] + dt.timedelta(seconds=1), timezone=scheduled.timezone)
                if scheduled
                else []
            )
            details = api.dag(dag_id)
            ranges = tuple(backfill_ranges(slots, schedule))
            out[-1].append(DagRerun(dag_id, ranges, int(details.get("max_active_runs") or 1)))
    return out


def apply_plan(plan: RerunPlan, api: AirflowApi, say: Callable[[str], None], poll: float = BACKFILL_POLL) -> list[dict]:
    """Start the plan's backfills wave by wave and wait for each; returns the backfills made."""
    api.version()  # reachable, login accepted: else nothing starts
    todo = dag_reruns(plan, api)
    made = []
    for n, wave in enumerate(todo, 1):
        say(f"wave {n}: backfilling {', '.join(d.dag_id for d in wave)}")
        pending = {d.dag_id: list(d.ranges) for d in wave}
        limits = {d.dag_id: d.max_active_runs for d in wave}
        running: dict[str, dict] = {}
        while pending or running:
            for dag_id in [d for d in pending if d not in running]:
                start, end = pending[dag_id].pop(0)
                if not pending[dag_id]:
                    del pending[dag_id]
                backfill = api.backfill(dag_id, start, end, limits[dag_id])
                say(f"  {dag_id}: backfill {backfill.get('id')} of {start.isoformat()} .. {end.isoformat()}")
                running[dag_id] = backfill
                made.append(backfill)
            time.sleep(poll)
            for dag_id, backfill in list(running.items()):
                if api.backfill_state(backfill["id"]).get("completed_at"):
                    del running[dag_id]
    return made
