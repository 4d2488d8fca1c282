"""A small, realistic catalog: an external export, a daily DAG, a weekly roll-up, a repair, a hostile name.

The same story feeds the API tests, the browser test and the screenshots in the docs.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from airflow_leastaction.catalog.store import AttemptKey, CatalogStore, TaskMeta
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.parents import judge_parents

UTC = dt.UTC
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


def gate(
    store: CatalogStore, who: AttemptKey, parents: list[TaskIdentity], interval: dt.datetime, at: dt.datetime
) -> list[int]:
    """Judge ``parents`` for ``interval`` the way a gate does, and record the decisions."""
    judgements = judge_parents(parents, interval, store.snapshot((p, interval) for p in parents))
    return store.audit.record_decisions(who, judgements, downstream_slot=interval, at=at)


def airflow_meta(identity: TaskIdentity, cron: str = DAILY) -> TaskMeta:
    dag_id, _, task_id = identity.name.partition(".")
    return TaskMeta(cron=cron, dag_id=dag_id, task_id=task_id or dag_id)


def _run(store: CatalogStore, child: TaskIdentity, parents: list[TaskIdentity], n: int, *, succeed: bool = True):
    meta = airflow_meta(child)
    who = AttemptKey(meta.dag_id, meta.task_id, f"scheduled__2024-01-{n:02d}T03:00:00+00:00", -1, 1)
    gate(store, who, parents, day(n), day(n, 4))
    if succeed:
        store.record_success(child, day(n), meta=meta, run_id=who.run_id, at=day(n, 5), consumer=who)


def rerun(store: CatalogStore, child: TaskIdentity, parents: list[TaskIdentity], n: int, *, attempt: int) -> None:
    """``child``'s slot of the ``n``-th runs again (a clear): judged again, succeeds, consumes again."""
    meta = airflow_meta(child)
    who = AttemptKey(meta.dag_id, meta.task_id, f"scheduled__2024-01-{n:02d}T03:00:00+00:00", -1, attempt)
    store.record_running(child, day(n), meta=meta, run_id=who.run_id, attempt=attempt, at=day(n, 10 + attempt))
    gate(store, who, parents, day(n), day(n, 10 + attempt))
    store.record_success(
        child, day(n), meta=meta, run_id=who.run_id, attempt=attempt, at=day(n, 11 + attempt), consumer=who
    )


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
    store.record_running(
        LOAD, day(3), meta=airflow_meta(LOAD), run_id="scheduled__2024-01-03T03:00:00+00:00", attempt=2, at=day(3, 9)
    )
    pks = {i: store.get_task(i)["id"] for i in (CRM, LOAD, REPORT, HOSTILE, ROLLUP)}
    return Scenario(store, pks)


def build_queue(engine, environment: str = "analytics") -> str:
    """Three models queued and claimed by a worker, then asked for again while running and while pending."""
    from airflow_leastaction.dbt.planner import PlannedModel
    from airflow_leastaction.dbt.policy import BatchKey, TierPolicy
    from airflow_leastaction.dbt.queue_store import QueueStore

    def model(name: str) -> PlannedModel:
        return PlannedModel(f"model.shop.{name}", name, f"shop.{name}", "table", "standard")

    queue = QueueStore(engine)
    key = BatchKey(environment)
    daily = [model("orders"), model("customers"), model("revenue")]
    queue.enqueue(key, daily, "tag:daily", requested_by="sales_daily/enqueue_models", now=day(5, 6))
    queue.acquire_lease(environment, "worker-1", dt.timedelta(minutes=5), now=day(5, 8))
    batch = queue.claim(environment, "worker-1", TierPolicy(), now=day(5, 8))
    assert batch is not None, "the scenario expects the first request to be claimed"
    queue.enqueue(
        key, daily[:2] + [model("<b>margins</b>")], "tag:daily", requested_by="finance/enqueue", now=day(5, 9)
    )
    queue.enqueue(key, [model("<b>margins</b>")], "margins+", requested_by="adhoc", now=day(5, 10))
    return batch.id
