"""``airflow-leastaction plan``: what re-running some slots of a task touches, before anything runs.

Lists every catalog task that consumed those slots, transitively, the runs of theirs that become stale,
the waves they can re-run in (parents first), how many task runs that is, and, for tasks outside
Airflow, the command their owner runs. ``--apply`` starts the waves through Airflow's backfill API.

Exit status: 0 when planned (and applied); 2 for bad input (checked while parsing: an identity not
written project/name, a slot that is not ISO-8601 with an offset; then an identity not in the catalog, an
empty range); 1 when the plan cannot be applied (Airflow's API out of reach or refusing, DAGs that consume
from each other both ways: nothing is started then), or stopped part way (a wave's backfill finished with
failed runs: the next waves are not started).
"""

from __future__ import annotations

import json
import sys

from airflow_leastaction.cli.arguments import CONN_ID_LENGTH, Identity, Name, Slot
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.reruns.plan_reads import make_plan, published_revisions


def register(sub) -> None:
    p = sub.add_parser("plan", help="plan a re-run of a task's slots: its stale consumers, in waves")
    p.add_argument(
        "--task", required=True, type=Identity(), help="catalog identity: project/name (then @account, [partition])"
    )
    p.add_argument("--from", dest="start", required=True, type=Slot(), help="first slot, ISO-8601 with offset")
    p.add_argument("--to", dest="end", required=True, type=Slot(), help="last slot, ISO-8601 with offset")
    p.add_argument("--json", action="store_true", help="the plan as one JSON object")
    p.add_argument("--apply", action="store_true", help="start the waves through Airflow's backfill API")
    p.add_argument(
        "--api-conn-id", default=None, type=Name(CONN_ID_LENGTH), help="the Airflow API connection (--apply)"
    )
    p.set_defaults(func=_plan)


def _plan(args) -> int:
    plan = make_plan(catalog_store(args.conn_id), args.task, args.start, args.end)
    if args.json and not args.apply:
        print(json.dumps(plan.as_dict(), sort_keys=True))
        return 0
    print(plan.format(), file=sys.stderr if args.json else sys.stdout)
    if args.apply:
        from airflow_leastaction.airflow_seam.api import AirflowApi
        from airflow_leastaction.reruns.apply import apply_plan

        store = catalog_store(args.conn_id)
        made = apply_plan(
            plan,
            AirflowApi.from_connection(args.api_conn_id),
            lambda line: print(line, flush=True),
            lambda t: published_revisions(store, t.pk, plan.runs[t.pk]),
        )
        if args.json:
            print(json.dumps({**plan.as_dict(), "backfills": [b.get("id") for b in made]}, sort_keys=True))
    return 0
