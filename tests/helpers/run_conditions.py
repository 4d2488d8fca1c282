"""What the run-condition scenarios read back from a DAG run and the catalog."""

from __future__ import annotations

import datetime as dt
import threading
import time

from sqlalchemy import select

from airflow_leastaction.catalog.schema import consumption, gate_decision

UTC = dt.UTC


def day(n: int) -> dt.datetime:
    return dt.datetime(2026, 11, n, tzinfo=UTC)


def states(run) -> dict[str, str]:
    return {ti.task_id: (ti.state.value if hasattr(ti.state, "value") else ti.state) for ti in run.get_task_instances()}


def tis(run) -> dict:
    return {ti.task_id: ti for ti in run.get_task_instances()}


def decisions(store, dag_id: str, task_id: str | None = None):
    q = select(gate_decision).where(gate_decision.c.dag_id == dag_id)
    if task_id:
        q = q.where(gate_decision.c.task_id == task_id)
    with store.engine.connect() as conn:
        return conn.execute(q.order_by(gate_decision.c.id)).mappings().all()


def consumed(store, dag_id: str):
    with store.engine.connect() as conn:
        return (
            conn.execute(select(consumption).where(consumption.c.dag_id == dag_id).order_by(consumption.c.id))
            .mappings()
            .all()
        )


def later(seconds: float, fn, *args, **kwargs):
    """Run ``fn`` in a thread after ``seconds``: something finishing while a gate waits."""

    def run():
        time.sleep(seconds)
        fn(*args, **kwargs)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
