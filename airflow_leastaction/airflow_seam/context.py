"""Airflow-side helpers the sensor and the run-condition gates share: which attempt is asking, for which
slot, and how often it looks.

It reads Airflow's task context (a mapping) and imports nothing from Airflow itself.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from airflow_leastaction.catalog.audit import AttemptKey
from airflow_leastaction.config import setting
from airflow_leastaction.intervals.run_slot import RunSlot, run_slot

#: Seconds between looks while a gate waits, unless ``[leastaction] poll_interval`` or the task says.
DEFAULT_POLL_INTERVAL = 5.0


def resolve_poll_interval(value: float | None) -> float:
    """The task's own poll interval, else the deployment's ``[leastaction] poll_interval``."""
    return float(value if value is not None else setting("poll_interval", str(DEFAULT_POLL_INTERVAL)))


def attempt_key(context, dag_id: str, task_id: str) -> AttemptKey:
    """The attempt of ``task_id`` the context runs: its gate decisions and consumption are keyed by it."""
    ti = context["ti"]
    map_index = getattr(ti, "map_index", -1)
    return AttemptKey(
        dag_id, task_id, ti.run_id, -1 if map_index is None else map_index, int(getattr(ti, "try_number", 1) or 1)
    )


def trigger_context(trigger) -> Mapping[str, Any] | None:
    """The task context of a task that started in the triggerer (``start_from_trigger``), None otherwise.

    Airflow 3.3 gives such a trigger its task instance built with the run's data, so the trigger can work
    out the run's slot and attempt itself; a trigger a worker deferred to gets a bare record instead.
    """
    build = getattr(getattr(trigger, "task_instance", None), "get_template_context", None)
    return build() if callable(build) else None


def context_slot(context) -> RunSlot | None:
    """The slot of the context's run, by :func:`~airflow_leastaction.intervals.run_slot.run_slot`'s rule."""
    return run_slot(context.get("dag_run"))


def context_run_started(context) -> dt.datetime | None:
    """When the context's run started (its ``start_date``), in UTC; None when Airflow does not say."""
    value = getattr(context.get("dag_run"), "start_date", None)
    return None if value is None else dt.datetime.fromisoformat(value.astimezone(dt.UTC).isoformat())


def context_interval_end(context) -> dt.datetime | None:
    """The end of the context's run data interval, as a plain UTC datetime (None: the run has none)."""
    value = context.get("data_interval_end") or getattr(context.get("dag_run"), "data_interval_end", None)
    if value is None:
        return None
    # A plain datetime: Airflow's pendulum instants lose their zone in some arithmetic.
    return dt.datetime.fromisoformat(value.astimezone(dt.UTC).isoformat())
