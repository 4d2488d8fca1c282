"""A generated history (``tests/helpers/expected_times.py``) written into a real catalog as it stood at an
instant: for the expected-times benchmark (bench/bench_expectations.py) and its test.

The catalog is the product's own: created by its migrations, its rows written with SQLAlchemy Core into the
schema's tables as the listener and ``report_completion`` leave them (declarations with their index of
parent names, one slot record per run as it stood at the instant, the change sequence).
"""

from __future__ import annotations

import datetime as dt

from sqlalchemy import insert

from tests.helpers.expected_times import History

PROJECT = "bench"


def write_catalog(url: str, history: History, now: dt.datetime) -> int:
    """The catalog at ``now``: every task, its declaration, and the slot records as they stood then. Returns
    the number of slot records written."""
    from airflow_leastaction.catalog.declared_parents import declaration
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.schema import change_counter, task, task_parent, task_run
    from airflow_leastaction.identity import TaskIdentity

    engine = get_engine(url, migrate=True)
    pks = {name: i for i, name in enumerate(history.tasks, start=1)}
    tasks, names, runs = [], [], []
    for name, t in history.tasks.items():
        coverage = "interval" if t.coverage == "interval" else None
        parents = [TaskIdentity(p, PROJECT, coverage=coverage) for p in t.parents]
        done = [r for r in history.runs[name] if r.finished_at <= now]
        tasks.append(
            {
                "id": pks[name], "name": name, "project": PROJECT, "account": "", "partition": "",
                "source": "airflow" if t.dag else "external", "cron": t.cron, "timezone": "UTC",
                "state": "success" if done else None, "logical_date": done[-1].slot if done else None,
                "prev_interval_start": done[-1].slot if done else None, "dag_id": t.dag,
                "task_id": name.partition(".")[2] or None, "parents": declaration(parents) if parents else None,
                "updated_at": now, "change_seq": 1,
            }
        )  # fmt: skip
        names.extend({"parent_name": p, "task_pk": pks[name]} for p in sorted(set(t.parents)))
        for r in history.runs[name]:
            state, started = r.state_at(now)
            if state is None:
                continue
            success = state == "success"
            runs.append(
                {
                    "task_pk": pks[name], "slot": r.slot, "state": state,
                    "attempt": 2 if r.failed_at is not None and now >= r.failed_at and state != "failed" else 1,
                    "run_id": f"scheduled__{r.slot.isoformat()}" if t.dag else f"external:{r.slot.isoformat()}",
                    "run_type": "scheduled" if t.dag else None, "output_revision": 1 if success else 0,
                    "repair_pending": False, "started_at": started, "finished_at": r.finished_at if success else None,
                    "updated_at": r.finished_at if success else started, "change_seq": 1,
                }
            )  # fmt: skip
    with engine.begin() as conn:
        conn.execute(insert(task), tasks)
        conn.execute(insert(task_parent), names)
        for i in range(0, len(runs), 50_000):
            conn.execute(insert(task_run), runs[i : i + 50_000])
        conn.execute(change_counter.delete())
        conn.execute(insert(change_counter), [{"id": 1, "seq": 1}])
    return len(runs)
