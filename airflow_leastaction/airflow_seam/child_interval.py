"""What a ``ParentIntervalSensor`` judges and declares, wherever it runs: on a worker, or in the triggerer
when the task starts there. It reads Airflow's task context as a mapping.

One definition each of: the child's slot and interval end (the task's templated values, else the run's),
the parents the sensor declares for its consumers, and the sensor's deadline in the triggerer.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from airflow_leastaction.airflow_seam.context import context_interval_end, context_slot
from airflow_leastaction.airflow_seam.schedule import schedule_meta
from airflow_leastaction.catalog.declared_parents import declaration
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import ConfigurationError, MissingDataIntervalError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.intervals.run_slot import RunSlot, explicit_slot
from airflow_leastaction.refs import airflow_task

#: How long after the sensor's own deadline Airflow's trigger timeout fails the task, should the trigger
#: not have ended it (a triggerer gone): the trigger fires first, with the reasons.
DEADLINE_BACKSTOP = dt.timedelta(minutes=5)


def instant(value, what: str, task_id: str) -> dt.datetime:
    """``value`` (ISO-8601 text or an aware datetime) as a plain UTC datetime; ``what`` names the argument."""
    if isinstance(value, str):
        try:
            value = parse_iso_instant(value)
        except ValueError as exc:
            raise ConfigurationError(f"task {task_id!r}: {what} {value!r} is not ISO-8601") from exc
    if value.tzinfo is None:
        raise ConfigurationError(f"task {task_id!r}: {what} {value.isoformat()} has no timezone")
    # A plain datetime: Airflow's pendulum instants lose their zone in some arithmetic.
    return dt.datetime.fromisoformat(value.astimezone(dt.UTC).isoformat())


def child_slot(context, child_interval, dag_id: str, task_id: str) -> RunSlot:
    """The slot judged: ``child_interval`` (rendered) when given, else the run's slot."""
    if child_interval in (None, ""):
        found = context_slot(context)
        if found is None:
            raise MissingDataIntervalError(dag_id, task_id, context.get("run_id", "?"))
        return found
    return explicit_slot(instant(child_interval, "child_interval", task_id))


def child_interval_end(context, value, coverages: Sequence[str], task_id: str) -> dt.datetime | None:
    """The child's interval end, read only when a parent is judged on the whole interval: ``value``
    (rendered ``child_interval_end``) when given, else the run's data-interval end."""
    if not any(c == "interval" for c in coverages):
        return None
    if value in (None, ""):
        return context_interval_end(context)
    return instant(value, "child_interval_end", task_id)


def declare(
    store: CatalogStore,
    dag,
    dag_id: str,
    consumers: Sequence[str],
    parents: Sequence[TaskIdentity],
    declarations: Mapping[str, Sequence[dict]] | None = None,
) -> None:
    """Record the declared parents of each consumer task (what the dependency graph reads): as
    ``declarations`` gives them (per consumer, identity dicts: made where the DAG was at hand), else
    :func:`declared_for` of ``parents``."""
    for consumer in consumers:
        meta = schedule_meta(dag, consumer, dag_id=dag_id)
        if declarations is not None and consumer in declarations:
            declared = [TaskIdentity.from_dict(p) for p in declarations[consumer]]
        else:
            declared = declared_for(dag, consumer, parents)
        store.declare_parents(airflow_task(dag_id, consumer), meta, declared)


def declared_for(dag, consumer: str, own: Sequence[TaskIdentity]) -> list[TaskIdentity]:
    """The parents declared for ``consumer``: every parent that any sensor of ``dag`` admitting it waits on
    (``own`` among them), each once, in one order. A task behind two sensors gets the same declaration from
    both, so whichever declares last drops nothing the other waits on. ``own`` alone without the DAG."""
    found = {declaration([p]): p for p in own}
    for task in getattr(dag, "tasks", None) or ():
        parents_for = getattr(task, "catalog_parents_for", None)
        for parent in parents_for(consumer) if callable(parents_for) else ():
            found.setdefault(declaration([parent]), parent)
    return [found[text] for text in sorted(found)]


def declarations_of(dag, consumers: Sequence[str], own: Sequence[TaskIdentity]) -> dict[str, list[dict]]:
    """:func:`declared_for` each consumer, as identity dicts (a trigger's keyword argument)."""
    return {
        c: [{**p.as_dict(), **({"coverage": p.coverage} if p.coverage else {})} for p in declared_for(dag, c, own)]
        for c in consumers
    }


def consumed_revisions(
    store: CatalogStore, dag_id: str, consumers: Sequence[str], slot: dt.datetime
) -> dict[str, dict[dt.datetime, int]]:
    """Per parent key, the revision the consumers' slot ``slot`` already consumed of each parent slot
    (what ``wait_for_new_output`` waits to see replaced)."""
    consumed: dict[str, dict[dt.datetime, int]] = {}
    for (dependency, upstream_slot), rev in store.audit.consumed_revisions(dag_id, list(consumers), slot).items():
        if upstream_slot is not None:
            consumed.setdefault(dependency, {})[upstream_slot] = rev
    return consumed


def triggerer_deadline(
    timeout_after: dt.datetime | None, timeout: float, execution_timeout: float | None
) -> dt.datetime | None:
    """When a sensor started in the triggerer gives up: ``timeout`` seconds after it started.

    Airflow tells the trigger only its trigger timeout, set when the task started to the start plus the
    shorter of ``timeout`` + :data:`DEADLINE_BACKSTOP` and ``execution_timeout``; the start follows.
    """
    if timeout_after is None:
        return None
    span = dt.timedelta(seconds=timeout) + DEADLINE_BACKSTOP
    if execution_timeout is not None:
        span = min(span, dt.timedelta(seconds=execution_timeout))
    return timeout_after - span + dt.timedelta(seconds=timeout)
