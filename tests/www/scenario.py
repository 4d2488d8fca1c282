"""A small, realistic catalog: an external export, a daily DAG, a weekly roll-up, a repair, a hostile name.

The same story feeds the API tests, the browser test and the screenshots in the docs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from airflow_leastaction.catalog.store import AttemptKey, CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.parents import judge_parents

UTC = dt.timezone.utc
DAILY = "0 3 * * *"

CRM = TaskIdentity("crm_export", "sales")
LOAD = TaskIdentity("sales_daily.load_orders", "sales")
REPORT = TaskIdentity("sales_daily.build_report", "sales")
HOSTILE = TaskIdentity("<script>alert(1)</script>", "sales")
ROLLUP = TaskIdentity("finance_weekly.rollup", "finance")
MISSING = TaskIdentity("ledger_close", "finance")


def day(n: int, hour: int = 3) -> dt.datetime:
    return dt.datetime(2024, 1, n, hour, tzinfo=UTC)


@dataclass
class Scenario:
    store: CatalogStore
    pks: dict[TaskIdentity, int]


def gate(store: CatalogStore, who: AttemptKey, parents: list[TaskIdentity], interval: dt.datetime,
         at: dt.datetime) -> list[int]:
    """Judge ``parents`` for ``interval`` the way a gate does, and record the decisions."""
    judgements = judge_parents(parents, interval, store.snapshot((p, interval) for p in parents))
    return store.record_decisions(who, judgements, downstream_slot=interval, at=at)


def airflow_meta(identity: TaskIdentity, cron: str = DAILY) -> TaskMeta:
    dag_id, _, task_id = identity.name.partition(".")
    return TaskMeta(cron=cron, dag_id=dag_id, task_id=task_id or dag_id)


def _run(store: CatalogStore, child: TaskIdentity, parents: list[TaskIdentity], n: int, *, succeed: bool = True):
    meta = airflow_meta(child)
    who = AttemptKey(meta.dag_id, meta.task_id, f"scheduled__2024-01-{n:02d}T03:00:00+00:00", -1, 1)
    gate(store, who, parents, day(n), day(n, 4))
    if succeed:
        store.record_success(child, day(n), meta=meta, run_id=who.run_id, at=day(n, 5), consumer=who)


def build(store: CatalogStore) -> Scenario:
    store.declare_parents(LOAD, airflow_meta(LOAD), [CRM])
    store.declare_parents(REPORT, airflow_meta(REPORT), [LOAD])
    store.declare_parents(HOSTILE, TaskMeta(cron=DAILY), [LOAD])
    store.declare_parents(ROLLUP, airflow_meta(ROLLUP, "0 5 * * 1"), [REPORT, MISSING])
    for n in (1, 2, 3):
        store.report_completion(CRM, day(n, 2), cron="0 2 * * *", rows_written=100 * n, run_id=f"crm-{n}")
        _run(store, LOAD, [CRM], n)
        _run(store, REPORT, [LOAD], n)
    _run(store, LOAD, [CRM], 4, succeed=False)  # the export for the 4th has not arrived
    # The export of the 2nd is repaired: whoever consumed revision 1 of it is now stale.
    store.report_completion(CRM, day(2, 2), cron="0 2 * * *", rows_written=250, run_id="crm-2-repair")
    store.record_running(LOAD, day(3), meta=airflow_meta(LOAD), run_id="scheduled__2024-01-03T03:00:00+00:00",
                         attempt=2, at=day(3, 9))
    pks = {i: store.get_task(i)["id"] for i in (CRM, LOAD, REPORT, HOSTILE, ROLLUP)}
    return Scenario(store, pks)
