"""``airflow-leastaction eta TASK``: when a task's slot is expected to be done, and which parent decides it.

The task is an Airflow task written ``DAG.TASK`` (found by its DAG and task ids) or a catalog task written
``project/name``; the slot is
``--slot``, else the task's next slot not yet complete (the first after its watermark). Times of day are
shown in the task's own timezone.

Exit status: 0 when answered (a slot with no estimate too: the answer says why); 2 for bad input (checked
while parsing: a task written neither way, a slot that is not ISO-8601 with an offset; then a task not in
the catalog, an ad hoc task without ``--slot``); 1 when the catalog cannot be reached.
"""

from __future__ import annotations

import datetime as dt
import json

from airflow_leastaction.catalog.schema import utcnow
from airflow_leastaction.cli.arguments import AirflowTaskName, AnyTask, Slot
from airflow_leastaction.exceptions import InvalidArgumentError
from airflow_leastaction.expectations.estimate import task_of_key
from airflow_leastaction.expectations.reads import expectation_of, find_task, next_open_slot
from airflow_leastaction.expectations.wording import expectation_json, expectation_line
from airflow_leastaction.hooks.catalog import catalog_store
from airflow_leastaction.intervals.slots import format_slot, resolve_timezone


def register(sub) -> None:
    p = sub.add_parser("eta", help="when a task's slot is expected to be done, and which parent decides it")
    p.add_argument(
        "task", type=AnyTask(), help="an Airflow task written DAG.TASK, or a catalog task written project/name"
    )
    p.add_argument(
        "--slot",
        default=None,
        type=Slot(),
        help="the slot (interval start), ISO-8601 with offset (default: the task's next slot not yet complete)",
    )
    p.add_argument("--json", action="store_true", help="the expectation as one JSON object")
    p.set_defaults(func=_eta)


def _eta(args) -> int:
    store = catalog_store(args.conn_id)
    now = utcnow()
    if isinstance(args.task, AirflowTaskName):
        row = find_task(store, dag_id=args.task.dag_id, task_id=args.task.task_id)
    else:
        row = find_task(store, args.task)
    if row is None:
        raise InvalidArgumentError("TASK", str(args.task), "is not in the catalog")
    slot = args.slot or next_open_slot(row, now)
    if slot is None:
        why = "is ad hoc (no schedule)" if row.cron is None else "has a schedule the catalog cannot read"
        raise InvalidArgumentError("TASK", str(args.task), f"{why}: name its slot with --slot")
    zone = resolve_timezone(row.timezone) if row.judgeable else resolve_timezone("UTC")
    found = expectation_of(store, row.identity, slot, now, zone=zone)
    if args.json:
        print(json.dumps({**expectation_json(found), "line": expectation_line(found, zone, now)}, sort_keys=True))
        return 0
    print(f"{row.identity} slot {format_slot(slot, 'minute', zone)}: {expectation_line(found, zone, now)}")
    if found.critical_path:
        steps = (f"{task_of_key(key)} {_slot_of_key(key, zone)}" for key in found.critical_path)
        print(f"  critical path: {', then '.join(steps)}")
    skewed = f", {found.skewed} left out for clock skew" if found.skewed else ""
    print(f"  from {found.runs} successful run{'' if found.runs == 1 else 's'}{skewed}")
    return 0


def _slot_of_key(key: str, zone) -> str:
    return format_slot(dt.datetime.fromisoformat(key.rpartition("@")[2]), "minute", zone)
