"""``airflow-leastaction plan``: what re-running some slots of a task touches, before anything runs.

Lists every catalog task that consumed those slots, transitively, the runs of theirs that become stale,
the waves they can re-run in (parents first), how many task runs that is, and, for tasks outside
Airflow, the command their owner runs. ``--apply`` starts the waves through Airflow's backfill API.

Exit status: 0 when planned (and applied); 2 for bad input (an identity not in the catalog, a slot that
is not ISO-8601 with an offset, an empty range); 1 when the plan cannot be applied (Airflow's API out of
reach or refusing: nothing is started then).
"""

from __future__ import annotations

import datetime as dt
import json
import sys

from airflow_leastaction.catalog.plan_reads import PlanReads
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import PlanError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.rerun_plan import RerunPlan, plan_rerun


def register(sub) -> None:
    p = sub.add_parser("plan", help="plan a re-run of a task's slots: its stale consumers, in waves")
    p.add_argument("--task", required=True, help="catalog identity: project/name (then @account, [partition])")
    p.add_argument("--from", dest="start", required=True, help="first slot, ISO-8601 with offset")
    p.add_argument("--to", dest="end", required=True, help="last slot, ISO-8601 with offset")
    p.add_argument("--json", action="store_true", help="the plan as one JSON object")
    p.add_argument("--apply", action="store_true", help="start the waves through Airflow's backfill API")
    p.add_argument("--api-conn-id", default=None, help="the Airflow API connection (--apply)")
    p.set_defaults(func=_plan)


def slot_argument(value: str, what: str) -> dt.datetime:
    try:
        slot = dt.datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise PlanError(f"{what} {value!r} is not an ISO-8601 instant") from None
    if slot.tzinfo is None:
        raise PlanError(f"{what} {value!r} has no UTC offset")
    return slot.astimezone(dt.UTC)


def make_plan(store: CatalogStore, task: str, start: str, end: str) -> RerunPlan:
    """The plan of re-running ``task``'s slots from ``start`` to ``end`` (the text a person typed):
    :class:`PlanError` for an identity not in the catalog, a bad slot or an empty range."""
    try:
        identity = TaskIdentity.parse(task)
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    first, last = slot_argument(start, "--from"), slot_argument(end, "--to")
    if first > last:
        raise PlanError(f"empty range: --from {first.isoformat()} is after --to {last.isoformat()}")
    reads = PlanReads(store)
    root = reads.task(identity)
    if root is None:
        raise PlanError(f"no task {identity} in the catalog")
    slots = reads.slots(root, first, last)
    if not slots:
        raise PlanError(f"empty range: {identity} has no slot from {first.isoformat()} to {last.isoformat()}")
    return plan_rerun(root, first, last, slots, reads.consumers, reads.describe)


def _plan(args) -> int:
    plan = make_plan(CatalogStore(conn_id=args.conn_id), args.task, args.start, args.end)
    if args.json and not args.apply:
        print(json.dumps(plan.as_dict(), sort_keys=True))
        return 0
    print(plan.format(), file=sys.stderr if args.json else sys.stdout)
    if args.apply:
        from airflow_leastaction.airflow_api import AirflowApi
        from airflow_leastaction.rerun_apply import apply_plan

        made = apply_plan(plan, AirflowApi.from_connection(args.api_conn_id), lambda line: print(line, flush=True))
        if args.json:
            print(json.dumps({**plan.as_dict(), "backfills": [b.get("id") for b in made]}, sort_keys=True))
    return 0
