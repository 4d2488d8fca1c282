"""The interval-dependency model: a child waits for the parent intervals that cover its own. Pure logic.

- :mod:`~airflow_leastaction.intervals.slots`: cron schedules, granularities, the slot covering an instant.
- :mod:`~airflow_leastaction.intervals.interval_slots`: every slot of a cron inside an interval.
- :mod:`~airflow_leastaction.intervals.run_slot`: the slot of a DAG run (data interval, else logical date...).
- :mod:`~airflow_leastaction.intervals.judging`: judging one parent from a catalog snapshot.
- :mod:`~airflow_leastaction.intervals.coverage`: ``coverage="interval"``, every parent slot in the interval.

Nothing here imports Airflow; the adapters (sensor, trigger, timetable) build on it.
"""

from __future__ import annotations

import importlib
import warnings

# ``airflow_leastaction.intervals`` was a module until 0.x; its public names still resolve, with a warning,
# for one release. The package's own submodules are not in this table, so importing them is unaffected.
_MOVED = {
    name: "airflow_leastaction.intervals.slots"
    for name in (
        "GRANULARITIES",
        "UTC",
        "IntervalCheck",
        "normalize_cron",
        "resolve_timezone",
        "cron_granularity",
        "truncate",
        "expected_slot",
        "check_parent_interval",
        "parent_interval_satisfied",
        "slot_window",
        "format_slot",
    )
} | {"slots_in": "airflow_leastaction.intervals.interval_slots"}


def __getattr__(name: str):
    module = _MOVED.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"airflow_leastaction.intervals.{name} moved to {module}.{name}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), name)
