"""The expected-times pass timed on 10,000 waiting tasks: pure ``expect()`` on the Nodes of a generated
history (:mod:`bench.expected_times`), and ``expectations_for`` on a real SQLite catalog holding that history.

The catalog is the product's own: created by its migrations, its rows written with SQLAlchemy Core into the
schema's tables as the listener and ``report_completion`` leave them (declarations with their index of
parent names, one slot record per run as it stood at the instant asked about, the change sequence).
"""

from __future__ import annotations

import datetime as dt
import gc
import time

from sqlalchemy import insert

from bench.expectation_replay import Morning
from bench.expected_times import DAY, HOUR, History

PROJECT = "bench"


def waiting_instant(history: History, day: int) -> dt.datetime:
    """An hour before the first interval of slot day ``day`` ends: every slot of that day is waiting."""
    return min(history.daily_slot(t, day) for t in history.daily_tasks()) + DAY - HOUR


def time_pure(morning: Morning, now: dt.datetime, repeats: int) -> dict:
    from airflow_leastaction.expectations.estimate import expect

    nodes = morning.nodes_at(now)
    found = expect(nodes, now)  # warm-up, and the figures the catalog's answer is compared with
    settle_heap()
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        expect(nodes, now)
        samples.append(time.perf_counter() - began)
    statuses: dict[str, int] = {}
    for e in found.values():
        statuses[e.status] = statuses.get(e.status, 0) + 1
    return {"nodes": len(nodes), "statuses": statuses, "seconds": samples}, found


def settle_heap() -> None:
    """Leave the benchmark's own objects (the generated history, the Nodes) out of the garbage collector's
    passes, so that the pass timed pays for collecting what it allocates, not for walking the harness."""
    gc.collect()
    gc.freeze()


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


def time_reads(url: str, history: History, day: int, now: dt.datetime, repeats: int, pure: dict) -> dict:
    """``expectations_for`` every daily task's slot of ``day``: cold (the history cache emptied first) and
    cached (asked again, nothing written in between); and how many answers equal the pure pass's."""
    from airflow_leastaction.catalog.engine import get_engine
    from airflow_leastaction.catalog.store import CatalogStore
    from airflow_leastaction.expectations.reads import HISTORIES, expectations_for
    from airflow_leastaction.identity import TaskIdentity

    store = CatalogStore(get_engine(url))
    targets = [(TaskIdentity(t, PROJECT), history.daily_slot(t, day)) for t in history.daily_tasks()]
    settle_heap()
    cold, cached = [], []
    for _ in range(repeats):
        HISTORIES.clear()
        began = time.perf_counter()
        found = expectations_for(store, targets, now)
        cold.append(time.perf_counter() - began)
        began = time.perf_counter()
        expectations_for(store, targets, now)
        cached.append(time.perf_counter() - began)
    same = 0
    for identity, slot in targets:
        mine = pure[f"{identity.name}@{slot.isoformat()}"]
        theirs = found[(str(identity), slot)]
        same += (mine.status, mine.median, mine.p90) == (theirs.status, theirs.median, theirs.p90)
    return {"targets": len(targets), "cold_s": cold, "cached_s": cached, "equal_to_pure": same}
