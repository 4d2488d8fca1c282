"""Constants and small helpers of the dbt queue tests."""

from __future__ import annotations

import asyncio
import datetime as dt
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from airflow_leastaction.dbt.policy import BatchKey, Tier, TierPolicy
from airflow_leastaction.dbt.worker import QueueWorker
from airflow_leastaction.identity import TaskIdentity

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_PROJECT = ROOT / "dags_examples" / "dbt_project"
# Relative to the project directory (dbt's working directory): every copy has the same profile, so dbt's
# partial parse made once carries over to every test's copy.
DBT_ENV = {"FIELD_OPS_DUCKDB_PATH": "field_ops.duckdb"}
SELECTOR_A = "source:field_ops.work_orders+"
SELECTOR_B = "source:field_ops.time_entries+"
#: No minimum interval between builds: tests rebuild models seconds apart.
NO_WAIT = TierPolicy(tiers=[Tier("fast", 30), Tier("standard", 20), Tier("historical", 10)])
KEY = BatchKey("field_ops")


def names(unique_ids) -> list[str]:
    return sorted(u.rsplit(".", 1)[-1] for u in unique_ids)


def seconds(n: float) -> dt.timedelta:
    return dt.timedelta(seconds=n)


def make_worker(queue, runner, **kwargs) -> QueueWorker:
    kwargs.setdefault("policy", NO_WAIT)
    kwargs.setdefault("heartbeat_interval", 0.5)
    kwargs.setdefault("grace", seconds(30))
    return QueueWorker(queue, runner, "field_ops", **kwargs)


def wait_for(predicate, timeout: float = 1200.0, what: str = "condition"):
    """Poll ``predicate`` until it holds. ``timeout`` only bounds a condition that never comes: a dbt
    command takes minutes on a loaded machine, and a wait must not fail because the machine is slow."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def running(queue) -> list[str]:
    return [r["unique_id"] for r in queue.active_rows("field_ops") if r["status"] == "running"]


#: The catalog tasks that load the example project's sources (its sources.yml names them in meta).
LOADERS = {
    "work_orders": TaskIdentity("dbt_ingest_work_orders.ingest_work_orders", "airflow"),
    "time_entries": TaskIdentity("dbt_ingest_time_entries.ingest_time_entries", "airflow"),
    "reference_data": TaskIdentity("reference_data", "field_ops"),
}
#: Midnight of the day the state-aware tests' requests are for: hour n is slot T0 + n hours.
T0 = dt.datetime(2026, 11, 29, tzinfo=dt.UTC)


def hour(n: int) -> dt.datetime:
    return T0 + dt.timedelta(hours=n)


def land(store, loader: str, at: int) -> None:
    """The loader of a source completes the slot of hour ``at``: new data in the catalog's eyes."""
    store.report_completion(LOADERS[loader], hour(at))


def request(queue, plan, at: int, key: BatchKey = KEY, **kwargs):
    """One request for a plan's models, for the slot of hour ``at``."""
    return queue.enqueue(key, plan.models, plan.selector, slot=hour(at), **kwargs)


class ManualClock:
    """A queue clock (:mod:`airflow_leastaction.dbt.queue_clock`) that moves only when the queue waits on
    it: a tier's hold never runs out during a slow step of the test, and a drain waiting for held work
    wakes once it has waited the hold out, however fast or slow the machine is."""

    def __init__(self, at: dt.datetime):
        self._at, self._lock = at, threading.Lock()

    def now(self) -> dt.datetime:
        with self._lock:
            return self._at

    async def sleep(self, seconds: float) -> None:
        with self._lock:
            self._at += dt.timedelta(seconds=seconds)
        await asyncio.sleep(0)


@contextmanager
def request_while_building(queue, plan) -> Iterator[list]:
    """While the block runs: once a model of the queue is being built, one request for ``plan`` arrives
    (its merge outcomes are appended to the list yielded). It waits on the build, not on a clock: it gives
    up only when the block has ended."""
    during: list = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            if any(r["status"] == "running" for r in queue.active_rows("field_ops")):
                during.append(queue.enqueue(KEY, plan.models, plan.selector).by_outcome())
                return
            time.sleep(0.05)

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield during
    finally:
        done.set()
        thread.join()
