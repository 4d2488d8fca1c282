"""What a gate declares to warn before its deadline, and the watch of one of its runs made from it: on a
worker from the task's context, in the triggerer from the context Airflow gives a task started there.

:func:`warning_spec` is read when the DAG is parsed or serialized (the gate's own deadline, else its DAG's
``DeadlineAlert``); :func:`watch_of` resolves it for a run (the run, its map index, the deadline's
instant), blocking; :func:`run_watch` and :func:`watch_in_triggerer` are that for a worker and for the
triggerer, and never fail the gate.
"""

from __future__ import annotations

import asyncio
import datetime as dt
from collections.abc import Sequence

from airflow_leastaction.airflow_seam.deadline_alerts import gate_warning, queued_at
from airflow_leastaction.airflow_seam.deadline_watch import DeadlineWatch, declared
from airflow_leastaction.airflow_seam.schedule import schedule_meta
from airflow_leastaction.catalog.deadline_warnings import WarningKey
from airflow_leastaction.catalog.store import TaskMeta
from airflow_leastaction.gating.deadline_warning import DeadlineWarning
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.refs import airflow_dag, airflow_task


def warning_spec(
    own: DeadlineWarning | None,
    dag,
    target: TaskIdentity,
    task: str,
    timezone: str,
    mode: str = "ALL",
    n: int | None = None,
    dependencies: Sequence | None = None,
) -> dict | None:
    """What a gate warns against (its own deadline, else its DAG's alert), as :func:`declared`; None when
    it warns about nothing. A run condition's ``dependencies`` (``Dependency``) are declared as the
    target's catalog parents on the first look: the expectation follows the parents the catalog knows."""
    warning = gate_warning(own, dag)
    if warning is None:
        return None
    spec = declared(warning, target, task, timezone, mode, n)
    if dependencies is not None and dag is not None:
        dag_id = dag.dag_id
        parents = [airflow_task(dag_id, d.upstream) if d.in_run else d.upstream for d in dependencies]
        meta = schedule_meta(dag, None if target == airflow_dag(dag_id) else task, dag_id=dag_id)
        spec["declare"] = {"parents": [p.as_dict() for p in parents], "meta": _meta_dict(meta)}
    return spec


def _meta_dict(meta: TaskMeta) -> dict:
    return {"cron": meta.cron, "timezone": meta.timezone, "dag_id": meta.dag_id, "task_id": meta.task_id}


def run_watch(task, spec, context, *, dag_id: str, task_id: str, slot: dt.datetime, cap: dt.datetime | None):
    """This run's watch of a gate on a worker, kept on the operator ``task`` (one per task instance object
    and run); ``spec`` makes the declared warning. Never raises: a warning never fails its gate."""
    kept = getattr(task, "_deadline_watch", None)
    if kept is not None and kept[0] == context.get("run_id"):
        return kept[1]
    try:
        watch = watch_of(spec(), context, dag_id=dag_id, task_id=task_id, slot=slot, cap=cap)
    except Exception as exc:
        task.log.warning("no deadline warning for this run: %s", exc)
        watch = None
    task._deadline_watch = (context.get("run_id"), watch)
    return watch


async def watch_in_triggerer(spec: dict | None, context, logger, **run) -> DeadlineWatch | None:
    """:func:`watch_of` for a gate started in the triggerer, off its event loop; never raises."""
    if not spec:
        return None
    try:
        return await asyncio.to_thread(watch_of, spec, context, **run)
    except Exception as exc:
        logger.warning("no deadline warning for this run: %s", exc)
        return None


def watch_of(
    spec: dict | None,
    context,
    *,
    dag_id: str,
    task_id: str,
    slot: dt.datetime,
    cap: dt.datetime | None = None,
) -> DeadlineWatch | None:
    """The watch of a run, from a gate's :func:`declared` warning and Airflow's task ``context`` (the run,
    its map index, its logical date, when it was queued); None without a warning, or when the run lacks
    what the DAG's alert is measured from. Blocking (``DAGRUN_QUEUED_AT`` asks Airflow's API)."""
    if not spec:
        return None
    if "key" in spec:  # resolved by the worker that deferred
        return DeadlineWatch.from_dict(spec)
    warning = DeadlineWarning.from_dict(spec["deadline"])
    run, ti = context.get("dag_run"), context.get("ti")
    queued = None
    if warning.reference == "DAGRUN_QUEUED_AT":
        queued = queued_at(dag_id, context["run_id"]) or _aware(getattr(run, "start_date", None))
    deadline = warning.instant(slot, spec.get("timezone", "UTC"), _aware(getattr(run, "logical_date", None)), queued)
    if deadline is None:
        return None
    map_index = getattr(ti, "map_index", -1)
    key = WarningKey(dag_id, context["run_id"], task_id, -1 if map_index is None else map_index, deadline)
    target = TaskIdentity.from_dict(spec["target"])
    mode, n, task = spec.get("mode", "ALL"), spec.get("n"), spec.get("task", task_id)
    return DeadlineWatch(
        warning, key, target, slot, spec.get("timezone", "UTC"), mode, n, cap, task, spec.get("declare")
    )


def _aware(value) -> dt.datetime | None:
    return None if value is None else dt.datetime.fromisoformat(value.astimezone(dt.UTC).isoformat())


__all__ = ["run_watch", "warning_spec", "watch_in_triggerer", "watch_of"]
