"""A DAG's schedule as the catalog keeps it beside a task: read from Airflow's DAG object."""

from __future__ import annotations

from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.exceptions import ConfigurationError


def schedule_meta(dag, task_id: str | None = None, *, dag_id: str | None = None) -> TaskMeta:
    """Cron and timezone of a DAG's timetable (Airflow's cron timetables and ours); ad hoc otherwise.

    Without the DAG object (``dag`` None: a state set in the UI, a failure the scheduler records), the
    task still belongs to DAG ``dag_id``, its schedule unknown: the catalog keeps the one it has.
    """
    if dag is None:
        return TaskMeta(dag_id=dag_id, task_id=task_id, schedule_known=False)
    timetable = getattr(dag, "timetable", None)
    # Core timetables keep _expression/_timezone; the Task SDK's keep expression/timezone.
    expression = getattr(timetable, "_expression", None) or getattr(timetable, "expression", None)
    tz = getattr(timetable, "_timezone", None) or getattr(timetable, "timezone", None)
    tz_name = getattr(tz, "name", None) or getattr(tz, "key", None) or (tz if isinstance(tz, str) else "UTC")
    if tz_name in ("+00:00", "Z"):
        tz_name = "UTC"
    dag_id = getattr(dag, "dag_id", None)
    try:
        return TaskMeta(cron=expression, timezone=tz_name, dag_id=dag_id, task_id=task_id)
    except ConfigurationError:  # a schedule the interval check cannot read (six fields, odd zone): ad hoc
        # Only a schedule known to be of that kind: any other error reading it is raised, never taken for
        # "ad hoc" (which would judge the task's slots as if it had no schedule).
        return TaskMeta(cron=None, timezone="UTC", dag_id=dag_id, task_id=task_id)


def task_timezone(task) -> str:
    """The timezone of ``task``'s DAG (its timetable's), on whose clock a fallback's deadline and a deadline
    warning are read; UTC for a task not in a DAG yet."""
    return schedule_meta(task.dag).timezone if task.has_dag() else "UTC"
