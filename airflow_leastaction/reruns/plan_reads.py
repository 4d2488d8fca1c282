"""What a re-run plan reads of the catalog (see :mod:`airflow_leastaction.reruns.plan`): the task asked
about and its slots in a range, who consumed a frontier of runs, and the tasks of the plan; and the plan
of what a person typed (the command line and the UI ask the same way, :func:`make_plan`).

Consumption records name the consumer task and slot of every use of an upstream slot by an Airflow task.
Tasks not in Airflow (outside tasks, dbt models, assets) record no consumption: a task that declared a
frontier task as a parent (a dbt model declares its models and the catalog tasks loading its sources)
uses, for each of its slots, the parent slot covering it (by the interval rule), so its slots whose
covering slot re-runs are reached too.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping

from sqlalchemy import select, tuple_

from airflow_leastaction.catalog.declared_parents import naming_any, parse_parents
from airflow_leastaction.catalog.schema import consumption, in_chunks, task, task_run
from airflow_leastaction.catalog.store import CatalogStore
from airflow_leastaction.exceptions import PlanError
from airflow_leastaction.identity import TaskIdentity, airflow_task_ids
from airflow_leastaction.instants import parse_iso_instant
from airflow_leastaction.intervals.slots import END_OF_SLOTS, expected_slot, slot_in_range
from airflow_leastaction.reruns.plan import Consumed, PlannedTask, RerunPlan, plan_rerun

#: How far after a re-run parent slot a child outside Airflow is looked for: its slots covered by it.
CHILD_HORIZON = dt.timedelta(days=400)


def planned_task(row: Mapping) -> PlannedTask:
    """A catalog task row as the plan names it; its DAG and task from the row, else from its name."""
    identity = TaskIdentity.from_row(row)
    dag_id, task_id = row["dag_id"], row["task_id"]
    # Only an Airflow task's name names a DAG: a dbt model, an asset or an outside task has none.
    if dag_id is None and row["source"] == "airflow":
        if identity.name.endswith("::run"):
            dag_id = identity.name.removesuffix("::run")
        else:
            dag_id, task_id = airflow_task_ids(identity.name) or (None, None)
    return PlannedTask(row["id"], identity, row["source"], dag_id, task_id, row["cron"], row["timezone"] or "UTC")


class PlanReads:
    """The plan's catalog reads, on one store."""

    def __init__(self, store: CatalogStore):
        self.store = store

    def task(self, identity: TaskIdentity) -> PlannedTask | None:
        row = self.store.get_task(identity)
        return None if row is None else planned_task(row)

    def describe(self, pks: Iterable[int]) -> dict[int, PlannedTask]:
        wanted = sorted(set(pks))
        with self.store.engine.connect() as conn:
            rows = [
                r
                for chunk in in_chunks(wanted)
                for r in conn.execute(select(task).where(task.c.id.in_(chunk))).mappings()
            ]
        return {r["id"]: planned_task(r) for r in rows}

    def slots(self, root: PlannedTask, start: dt.datetime, end: dt.datetime) -> list[dt.datetime]:
        """The root's slots in ``[start, end]``: its slot records, and the slots of it that were consumed."""
        r, c = task_run.c, consumption.c
        with self.store.engine.connect() as conn:
            own = conn.execute(select(r.slot).where(r.task_pk == root.pk, r.slot >= start, r.slot <= end)).scalars()
            used = conn.execute(
                select(c.upstream_slot)
                .where(c.upstream_task_pk == root.pk, c.upstream_slot >= start, c.upstream_slot <= end)
                .distinct()
            ).scalars()
            return sorted(set(own) | set(used))

    def consumers(self, frontier: Mapping[int, set[dt.datetime]]) -> list[Consumed]:
        """Every use of a frontier run: consumption records, then children outside Airflow."""
        c = consumption.c
        pairs = [(pk, slot) for pk, slots in frontier.items() for slot in slots]
        found: set[Consumed] = set()
        with self.store.engine.connect() as conn:
            for chunk in in_chunks(pairs, 5000):
                query = (
                    select(c.upstream_task_pk, c.upstream_slot, c.downstream_task_pk, c.downstream_slot)
                    .where(
                        tuple_(c.upstream_task_pk, c.upstream_slot).in_(chunk),
                        c.downstream_task_pk.is_not(None),
                        c.downstream_slot.is_not(None),
                    )
                    .distinct()
                )
                found.update(Consumed(*row) for row in conn.execute(query))
        return sorted(found, key=lambda u: (u.downstream_pk, u.downstream_slot)) + self._declared(frontier)

    def _declared(self, frontier: Mapping[int, set[dt.datetime]]) -> list[Consumed]:
        parents = self.describe(frontier)
        by_identity = {p.identity: p for p in parents.values() if p.cron}
        if not by_identity:
            return []
        # By the index of parent names; parse_parents does the exact match.
        named = naming_any(i.name for i in by_identity).where(task.c.source != "airflow")
        with self.store.engine.connect() as conn:
            children = conn.execute(named).mappings().all()
            uses = []
            for child in children:
                for parent in (by_identity[i] for i in parse_parents(child["parents"]) if i in by_identity):
                    uses += self._covered(conn, child["id"], parent, frontier[parent.pk])
        return uses

    def _covered(self, conn, child_pk: int, parent: PlannedTask, slots: set[dt.datetime]) -> list[Consumed]:
        """The slots of ``child_pk`` whose covering slot of ``parent`` is among ``slots``."""
        r, last = task_run.c, max(slots)
        horizon = last + CHILD_HORIZON if last < END_OF_SLOTS else last.replace(year=9999, month=12, day=31)
        recorded = conn.execute(
            select(r.slot).where(r.task_pk == child_pk, r.slot >= min(slots), r.slot <= horizon)
        ).scalars()
        return [
            Consumed(parent.pk, covering, child_pk, slot)
            for slot in recorded
            if (covering := expected_slot(parent.cron, slot, timezone=parent.timezone)) in slots
        ]


def published_revisions(store: CatalogStore, task_pk: int, slots: Iterable[dt.datetime]) -> dict[dt.datetime, int]:
    """The revision each of ``slots`` of a task is published at (a slot not completed: absent)."""
    r, wanted = task_run.c, sorted(set(slots))
    with store.engine.connect() as conn:
        rows = [
            row
            for chunk in in_chunks(wanted)
            for row in conn.execute(
                select(r.slot, r.output_revision).where(r.task_pk == task_pk, r.slot.in_(chunk), r.state == "success")
            )
        ]
    return {slot: revision for slot, revision in rows}


def slot_argument(value: str | dt.datetime, what: str) -> dt.datetime:
    """A slot as UTC, from an aware datetime or the ISO-8601 text a person typed."""
    shown = repr(value.isoformat() if isinstance(value, dt.datetime) else value)
    try:
        slot = value if isinstance(value, dt.datetime) else parse_iso_instant(value)
    except ValueError:
        raise PlanError(f"{what} {shown} is not an ISO-8601 instant") from None
    if slot.tzinfo is None:
        raise PlanError(f"{what} {shown} has no UTC offset")
    try:
        return slot_in_range(slot)
    except ValueError as exc:
        raise PlanError(f"{what} {shown} is {str(exc).partition(' is ')[2]}") from None


def make_plan(
    store: CatalogStore,
    task: str | TaskIdentity,
    start: str | dt.datetime,
    end: str | dt.datetime,
    readable: Callable[[PlannedTask], bool] | None = None,
) -> RerunPlan:
    """The plan of re-running ``task``'s slots from ``start`` to ``end`` (as a person typed them, or as the
    command line parsed them): :class:`PlanError` for an identity not in the catalog, a bad slot or an
    empty range.

    :param readable: whether the asker may read a task; a root it may not read is answered as one not in
        the catalog, before anything of it is read, so the answer tells no more than for a made-up name.
    """
    try:
        identity = task if isinstance(task, TaskIdentity) else TaskIdentity.parse(task)
    except ValueError as exc:
        raise PlanError(str(exc)) from None
    first, last = slot_argument(start, "--from"), slot_argument(end, "--to")
    if first > last:
        raise PlanError(f"empty range: --from {first.isoformat()} is after --to {last.isoformat()}")
    reads = PlanReads(store)
    root = reads.task(identity)
    if root is None or (readable is not None and not readable(root)):
        raise PlanError(f"no task {identity} in the catalog")
    slots = reads.slots(root, first, last)
    if not slots:
        raise PlanError(f"empty range: {identity} has no slot from {first.isoformat()} to {last.isoformat()}")
    try:
        return plan_rerun(root, first, last, slots, reads.consumers, reads.describe)
    except OverflowError:  # slots recorded before the catalog checked their range
        raise PlanError(
            f"{identity}'s plan reaches slots near the end of the calendar (after {END_OF_SLOTS.date()}), "
            "which no plan can handle"
        ) from None
