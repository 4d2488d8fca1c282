"""Carrying out a re-run plan through Airflow 3's backfill API, wave by wave, parents first.

The waves are over the plan's Airflow DAGs and its tasks not in a DAG (outside tasks, dbt models, assets):
a step re-runs after every step it consumed from, so a DAG downstream of an outside task or a dbt model
waits for its new revision. Nothing that is not an Airflow DAG is sent to Airflow. Each DAG of a
wave gets backfills of exactly its affected runs (``reprocess_behavior="completed"``, its affected slots cut
into ranges that hold no other run of its schedule), with the DAG's own ``max_active_runs``; one backfill of
a DAG at a time, as Airflow allows. For an outside task or a dbt model of a wave the command that re-runs it is printed
(its owner's report, a forced build through the model queue), and the wave is done once the catalog holds
a new revision of each of its slots; an asset is listed (its producer is a task of the plan). A wave starts once the
one before it is done, and a backfill that finished with failed runs stops the plan there. Before
anything starts, the API is called once (reachable, login accepted) and every DAG of the plan is looked
up: a deployment that cannot take the plan starts none of it.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from airflow_leastaction.airflow_seam.api import AirflowApi
from airflow_leastaction.exceptions import DependencyCycleError, PlanApplyError
from airflow_leastaction.intervals.interval_slots import slots_in
from airflow_leastaction.reruns.plan import WHERE, PlannedTask, RerunPlan, backfill_ranges
from airflow_leastaction.run_conditions.waves import Node, waves

#: Seconds between two looks at a running backfill or at an outside task's revisions.
BACKFILL_POLL = 5.0

#: The revision each slot of an outside task is published at (absent: not completed).
Revisions = Callable[[PlannedTask], Mapping[dt.datetime, int]]


@dataclass(frozen=True)
class DagRerun:
    """The runs of one DAG a plan re-runs: its affected slots as backfill ranges."""

    dag_id: str
    ranges: tuple[tuple[dt.datetime, dt.datetime], ...]
    max_active_runs: int


def _step(plan: RerunPlan, pk: int) -> str | None:
    """The step of the plan that re-runs task ``pk``: its DAG, or itself outside Airflow (the root
    outside Airflow is re-reported by its owner before the plan is applied: no step)."""
    t = plan.tasks[pk]
    if not t.external:
        return t.dag_id
    return None if pk == plan.root.pk else _not_in_a_dag(t)


def _not_in_a_dag(t: PlannedTask) -> str:
    return f"{WHERE[t.kind]}: {t.identity}"


def apply_waves(plan: RerunPlan) -> list[list[str]]:
    """The plan's steps in waves (a DAG id, or ``outside Airflow: <task>``): a step re-runs after every
    step it consumed from, through tasks outside Airflow too. Two DAGs that consume from each other (a task
    of each upstream of the other) cannot be backfilled whole, in order."""
    upstream: dict[str, set[str]] = {}
    for pk in plan.runs:
        step = _step(plan, pk)
        if step is None:
            continue
        ups = {_step(plan, u) for u in plan.upstream.get(pk, ())} - {None, step}
        upstream.setdefault(step, set()).update(ups)
    try:
        return waves({d: Node(d, tuple(sorted(u))) for d, u in upstream.items()})
    except DependencyCycleError as exc:
        raise PlanApplyError(f"the plan's DAGs cannot be backfilled one after another: {exc}") from None


def dag_rerun(plan: RerunPlan, dag_id: str, api: AirflowApi) -> DagRerun:
    """What to backfill of one DAG, with its ``max_active_runs`` (read first: an unknown DAG fails here)."""
    pks = [pk for pk in plan.runs if plan.tasks[pk].dag_id == dag_id and not plan.tasks[pk].external]
    slots = sorted({s for pk in pks for s in plan.runs[pk]})
    scheduled = next((plan.tasks[pk] for pk in pks if plan.tasks[pk].cron), None)
    schedule = (
        slots_in(scheduled.cron, slots[0], slots[-1] + dt.timedelta(seconds=1), timezone=scheduled.timezone)
        if scheduled
        else []
    )
    details = api.dag(dag_id)
    return DagRerun(dag_id, tuple(backfill_ranges(slots, schedule)), int(details.get("max_active_runs") or 1))


def apply_plan(
    plan: RerunPlan, api: AirflowApi, say: Callable[[str], None], revisions: Revisions, poll: float = BACKFILL_POLL
) -> list[dict]:
    """Carry the plan out wave by wave and wait for each; returns the backfills made.

    :param revisions: the catalog's revisions of an outside task's slots (read once before anything
        starts, then while a wave waits for the task's owner).
    """
    order = apply_waves(plan)  # a plan that cannot run in order starts nothing, reachable API or not
    api.version()  # reachable, login accepted: else nothing starts
    outside = {_not_in_a_dag(t): t for t in plan.tasks.values() if t.external}
    todo = [[dag_rerun(plan, s, api) if s not in outside else outside[s] for s in wave] for wave in order]
    before = {t.pk: dict(revisions(t)) for wave in todo for t in wave if isinstance(t, PlannedTask)}
    made = []
    for n, wave in enumerate(todo, 1):
        reruns = [d for d in wave if isinstance(d, DagRerun)]
        # An asset's events come from its producer, a task of the plan: listed, nothing to wait for.
        owners = [t for t in wave if isinstance(t, PlannedTask) and t.kind != "asset"]
        work = ([f"backfilling {', '.join(d.dag_id for d in reruns)}"] if reruns else []) + [
            f"waiting for {t.identity}" for t in owners
        ]
        say(f"wave {n}: {'; '.join(work) or 'listed only'}")
        for t in owners:
            say(f"  {t.identity} ({WHERE[t.kind]}): re-run each slot, then the plan goes on once it is published:")
            for slot in plan.runs[t.pk]:
                say(f"  {t.rerun_command(slot)}")
        wave_made = _backfill_wave(reruns, api, say, poll)
        made += wave_made
        _stop_on_failed_runs(n, len(todo), wave_made, api)
        _wait_for_owners(plan, owners, before, revisions, say, poll)
    return made


def _backfill_wave(reruns: list[DagRerun], api: AirflowApi, say: Callable[[str], None], poll: float) -> list[dict]:
    """Start each DAG's backfills, one at a time per DAG, and wait until all of them completed."""
    pending = {d.dag_id: list(d.ranges) for d in reruns}
    limits = {d.dag_id: d.max_active_runs for d in reruns}
    running: dict[str, dict] = {}
    made = []
    while pending or running:
        for dag_id in [d for d in pending if d not in running]:
            start, end = pending[dag_id].pop(0)
            if not pending[dag_id]:
                del pending[dag_id]
            backfill = api.backfill(dag_id, start, end, limits[dag_id])
            say(f"  {dag_id}: backfill {backfill.get('id')} of {start.isoformat()} .. {end.isoformat()}")
            running[dag_id] = backfill
            made.append({**backfill, "dag_id": dag_id, "from": start, "to": end})
        time.sleep(poll)
        for dag_id, backfill in list(running.items()):
            if api.backfill_state(backfill["id"]).get("completed_at"):
                del running[dag_id]
    return made


def _wait_for_owners(plan, owners: list[PlannedTask], before: dict, revisions: Revisions, say, poll: float) -> None:
    """Until every slot of the wave's outside tasks is published at a revision newer than before the plan."""
    waiting = list(owners)
    while waiting:
        for t in list(waiting):
            now, then = revisions(t), before[t.pk]
            if all(s in now and now[s] > then.get(s, 0) for s in plan.runs[t.pk]):
                say(f"  {t.identity}: every slot published again")
                waiting.remove(t)
        if waiting:
            time.sleep(poll)


def _stop_on_failed_runs(n: int, total: int, made: list[dict], api: AirflowApi) -> None:
    """A wave whose backfills finished with failed runs: the next waves would re-run on what failed."""
    failed = [(b["dag_id"], run) for b in made for run in api.failed_runs(b["dag_id"], b["from"], b["to"])]
    if failed:
        shown = ", ".join(f"{dag_id} {run}" for dag_id, run in failed)
        later = f"; waves {n + 1} to {total} were not started" if n < total else ""
        raise PlanApplyError(f"wave {n} finished with failed runs ({shown}): the plan stops here{later}")
