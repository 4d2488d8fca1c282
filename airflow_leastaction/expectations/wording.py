"""An expectation as people read it: one line for the UI and the command line, one object for JSON.

Pure logic, no Airflow import. Times of day are read in the zone the caller shows times in, with the month
and day when they are not on ``now``'s day there.
"""

from __future__ import annotations

import datetime as dt

from airflow_leastaction.expectations.estimate import Expectation, clock, task_of_key


def expectation_line(found: Expectation, zone: dt.tzinfo, now: dt.datetime) -> str:
    """``expected 05:40, p90 06:10, waiting on ingest/orders (usually done 04:55, not started)``; a slot with
    no estimate or already done says only that (``no estimate: 2 runs``, ``done at 05:12``)."""
    if found.median is None or found.status == "complete":
        return found.reason
    return f"expected {clock(found.median, zone, now)}, p90 {clock(found.p90, zone, now)}, {found.reason}"


def expectation_json(found: Expectation) -> dict:
    """The expectation as a JSON object: instants in ISO-8601 UTC, the critical path as (task, slot) pairs."""

    def iso(value: dt.datetime | None) -> str | None:
        return None if value is None else value.astimezone(dt.UTC).isoformat()

    return {
        "task": found.task,
        "slot": iso(found.slot),
        "status": found.status,
        "median": iso(found.median),
        "p90": iso(found.p90),
        "reason": found.reason,
        "critical_path": [{"task": task_of_key(key), "slot": key.rpartition("@")[2]} for key in found.critical_path],
        "runs": found.runs,
        "skewed": found.skewed,
    }
