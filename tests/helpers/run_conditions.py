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


def attempt_summaries(store) -> tuple[dict, dict]:
    """Each gate attempt's summary as its writer recorded it, and the same counted from its decisions now:
    (decisions, SATISFIED, BYPASSED, last decided, MISSING) per (DAG, task, run, map index, attempt)."""
    from sqlalchemy import case, func

    from airflow_leastaction.catalog.audit_statements import ATTEMPT_COLUMNS
    from airflow_leastaction.catalog.schema import gate_attempt

    d, s = gate_decision.c, gate_attempt.c
    keys = [d[name] for name in ATTEMPT_COLUMNS]
    counted = select(
        *keys,
        func.count(),
        func.sum(case((d.result == "SATISFIED", 1), else_=0)),
        func.sum(case((d.result == "BYPASSED", 1), else_=0)),
        func.max(d.decided_at),
        func.sum(case((d.result == "MISSING", 1), else_=0)),
    ).group_by(*keys)
    written = select(
        *(s[name] for name in ATTEMPT_COLUMNS), s.decisions, s.satisfied, s.bypassed, s.decided_at, s.missing
    )
    with store.engine.connect() as conn:
        return (
            {tuple(r[:5]): tuple(r[5:]) for r in conn.execute(written)},
            {tuple(r[:5]): tuple(r[5:]) for r in conn.execute(counted)},
        )
