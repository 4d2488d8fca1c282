"""Constants and small helpers of the dbt queue tests."""

from __future__ import annotations

import datetime as dt
import time
from pathlib import Path

from airflow_leastaction.dbt.policy import BatchKey, Tier, TierPolicy
from airflow_leastaction.dbt.worker import QueueWorker

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


def wait_for(predicate, timeout: float = 90.0, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def running(queue) -> list[str]:
    return [r["unique_id"] for r in queue.active_rows("field_ops") if r["status"] == "running"]
