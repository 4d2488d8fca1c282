"""The catalog store: one method per catalog operation, every statement parameterized.

Writers: the listener (Airflow task outcomes), external systems (:meth:`CatalogStore.report_completion`),
the gates (decisions) and, in the same transaction as a downstream's success, consumption records.
Readers: the gates (batched snapshots), the CLI and the UI.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy import insert, or_, select, update
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.audit import AttemptKey, AuditRecords
from airflow_leastaction.catalog.changes import mark_changed
from airflow_leastaction.catalog.declared_parents import declaration, write_parent_names
from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.late_arrivals import LateArrivals
from airflow_leastaction.catalog.run_reads import RunReads
from airflow_leastaction.catalog.schema import (
    identity_clause,
    task,
    task_run,
    utcnow,
)
from airflow_leastaction.catalog.slot_writes import forward_only, older_than_held, slot_row, update_task_state
from airflow_leastaction.catalog.snapshots import read_snapshot, wanted_windows
from airflow_leastaction.catalog.transactions import Transactions
from airflow_leastaction.exceptions import TaskOwnedByDagError
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals.judging import (
    SlotSnapshot,
    TaskSnapshot,
)
from airflow_leastaction.intervals.slots import normalize_cron, resolve_timezone

__all__ = ["AttemptKey", "CatalogStore", "SlotOutcome", "TaskMeta", "utcnow"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskMeta:
    """What the catalog keeps about a task besides its identity.

    ``dag_id`` names the DAG a task belongs to (None: an external system's task, readable by every user).
    ``schedule_known`` False: the writer knows the task's DAG but not its schedule (an outcome recorded
    where no DAG object is at hand, such as a state set in the UI): the catalog keeps the schedule it has.
    """

    cron: str | None = None
    timezone: str = "UTC"
    source: str = "airflow"
    dag_id: str | None = None
    task_id: str | None = None
    schedule_known: bool = True

    def __post_init__(self):
        if self.cron is not None:
            object.__setattr__(self, "cron", normalize_cron(self.cron))
        resolve_timezone(self.timezone)


@dataclass(frozen=True)
class SlotOutcome:
    task_pk: int
    run_pk: int
    state: str
    output_revision: int
    applied: bool  # False when the event was a replay of one already applied


class CatalogStore:
    """Synchronous access to the catalog. Cheap to create; engines are cached per URL.

    The store writes tasks and slot records and reads snapshots itself; its other operations are parts it is
    composed of, each a class built with the engine and transactions it uses:

    - ``store.audit`` (:class:`~airflow_leastaction.catalog.audit.AuditRecords`): decisions, consumption;
    - ``store.late_arrivals`` (:class:`~airflow_leastaction.catalog.late_arrivals.LateArrivals`): degraded
      runs that re-run on late arrival;
    - ``store.runs`` (:class:`~airflow_leastaction.catalog.run_reads.RunReads`): reads of task runs (slot
      records, latest runs, completions, rows written).

    All share the store's one ``transactions``, so a success and the consumption it records are one write.
    """

    def __init__(self, engine: Engine | None = None, *, conn_id: str | None = None):
        if engine is None:
            from airflow_leastaction.catalog.engine import resolve_url

            engine = get_engine(resolve_url(conn_id))
        self.engine = engine
        self.transactions = Transactions(engine)
        self.audit = AuditRecords(engine, self.transactions)
        self.late_arrivals = LateArrivals(engine, self.transactions)
        self.runs = RunReads(engine, self.transactions)

    # -- transactions -------------------------------------------------------------------------------
    def write(self) -> AbstractContextManager[Connection]:
        """A write transaction (:meth:`Transactions.write`)."""
        return self.transactions.write()

    def poll_read(self) -> AbstractContextManager[Connection]:
        """A connection for the poller's reads (:meth:`Transactions.poll_read`)."""
        return self.transactions.poll_read()

    # -- tasks --------------------------------------------------------------------------------------
    def ensure_task(self, conn: Connection, identity: TaskIdentity, meta: TaskMeta | None, now: dt.datetime) -> int:
        """The task row of ``identity``, created or updated from ``meta`` (None: leave the row as it is).

        A task of a DAG stays that DAG's: only metadata from that DAG (its listener, its sensors) may change
        it; anything else raises :class:`TaskOwnedByDagError` and writes nothing. The latest metadata's
        schedule wins, so of two reporters that disagree on a task's cron the later one sets it (logged).
        """
        row = conn.execute(
            select(task.c.id, task.c.cron, task.c.timezone, task.c.dag_id, task.c.source).where(
                *identity_clause(identity)
            )
        ).first()
        if row is None:
            meta = meta or TaskMeta()
            pk = conn.execute(
                insert(task).values(
                    **identity.as_dict(),
                    source=meta.source,
                    cron=meta.cron,
                    timezone=meta.timezone,
                    dag_id=meta.dag_id,
                    task_id=meta.task_id,
                    updated_at=now,
                )
            ).inserted_primary_key[0]
            mark_changed(conn, pk)  # a parent gates were waiting to appear
            return pk
        if meta is None:
            return row.id
        if row.dag_id is not None and (meta.source != "airflow" or meta.dag_id != row.dag_id):
            raise TaskOwnedByDagError(identity, row.dag_id)
        values = _task_meta_changes(row, meta)
        if values:
            if "cron" in values and row.source == meta.source == "external":
                log.warning(
                    "leastaction: %s is reported with schedule %r (timezone %s); it was %r (timezone %s): "
                    "children judge it by the new one",
                    identity,
                    meta.cron,
                    meta.timezone,
                    row.cron,
                    row.timezone,
                )
            conn.execute(update(task).where(task.c.id == row.id).values(**values, updated_at=now))
            mark_changed(conn, row.id)  # a new schedule moves the windows gates judge
        return row.id

    def register_task(self, identity: TaskIdentity, meta: TaskMeta) -> int:
        with self.write() as conn:
            return self.ensure_task(conn, identity, meta, utcnow())

    def declare_parents(self, identity: TaskIdentity, meta: TaskMeta | None, parents: Sequence[TaskIdentity]) -> int:
        """Record the parents ``identity`` declares (what the dependency graph is computed from)."""
        text = declaration(parents)
        now = utcnow()
        with self.write() as conn:
            pk = self.ensure_task(conn, identity, meta, now)
            changed = conn.execute(
                update(task)
                .where(task.c.id == pk, or_(task.c.parents.is_(None), task.c.parents != text))
                .values(parents=text, updated_at=now)
            ).rowcount
            if changed:
                write_parent_names(conn, pk, (p.name for p in parents))
            return pk

    def get_task(self, identity: TaskIdentity):
        with self.engine.connect() as conn:
            return conn.execute(select(task).where(*identity_clause(identity))).mappings().first()

    # -- slots --------------------------------------------------------------------------------------
    def record_running(
        self,
        identity: TaskIdentity,
        slot: dt.datetime,
        *,
        meta: TaskMeta | None = None,
        run_id: str | None = None,
        attempt: int = 1,
        at: dt.datetime | None = None,
        run_type: str | None = None,
    ) -> SlotOutcome:
        """A slot started (or restarted). A completed slot that runs again stops satisfying children."""
        return self._record_unpublished(identity, slot, "running", meta, run_id, attempt, at, run_type)

    def record_success(
        self,
        identity: TaskIdentity,
        slot: dt.datetime,
        *,
        meta: TaskMeta | None = None,
        run_id: str | None = None,
        attempt: int = 1,
        rows_written: int | None = None,
        at: dt.datetime | None = None,
        rows_error: str | None = None,
        consumer: AttemptKey | None = None,
        gate_task_ids: Sequence[str] = (),
        consume_own: bool = True,
        run_type: str | None = None,
    ) -> SlotOutcome:
        """A slot completed: revision 1 the first time, +1 on each re-completion (a repair).

        The watermark only moves forward. When ``consumer`` is given, that attempt's SATISFIED gate
        decisions become consumption records in this same transaction: both or neither are written.
        Replaying the same completion (same run and attempt) changes nothing. ``rows_error``: why the
        rows written are unknown (their read failed); a count, or a later success, clears it.
        """
        now = at or utcnow()
        completion_key = f"{run_id}#{attempt}"
        with self.write() as conn:
            task_pk = self.ensure_task(conn, identity, meta, now)
            current = slot_row(conn, task_pk, slot)
            if current is not None and current.completion_key == completion_key and current.state == "success":
                return SlotOutcome(task_pk, current.id, "success", current.output_revision, False)
            if older_than_held(current, run_id, attempt, now):
                # A late replay: the slot keeps its newer outcome and publishes nothing, but what this
                # attempt consumed is still a fact of its success.
                if consumer is not None and not self.audit.consumed_by(conn, consumer, slot):
                    self.audit.consume(conn, consumer, task_pk, slot, now, gate_task_ids, consume_own, late=True)
                return SlotOutcome(task_pk, current.id, current.state, current.output_revision, False)
            if current is None:
                revision = 1
                run_pk = conn.execute(
                    insert(task_run).values(
                        task_pk=task_pk,
                        slot=slot,
                        state="success",
                        attempt=attempt,
                        run_id=run_id,
                        run_type=run_type,
                        output_revision=1,
                        repair_pending=False,
                        rows_written=rows_written,
                        rows_error=rows_error if rows_written is None else None,
                        completion_key=completion_key,
                        started_at=now,
                        finished_at=now,
                        updated_at=now,
                    )
                ).inserted_primary_key[0]
            else:
                revision = current.output_revision + 1
                run_pk = current.id
                conn.execute(
                    update(task_run)
                    .where(task_run.c.id == run_pk)
                    .values(
                        state="success",
                        attempt=attempt,
                        run_id=run_id,
                        run_type=run_type,
                        output_revision=revision,
                        repair_pending=False,
                        rows_written=rows_written,
                        rows_error=rows_error if rows_written is None else None,
                        completion_key=completion_key,
                        finished_at=now,
                        updated_at=now,
                    )
                )
            update_task_state(
                conn, task_pk, run_pk, now, {"state": "success"}, always={"prev_interval_start": forward_only(slot)}
            )
            # Consumed once: the same success applied again as the newest outcome (its slot held, since, outcomes
            # older than it, reported by workers whose clocks disagree) consumes nothing more.
            if consumer is not None and (current is None or not self.audit.consumed_by(conn, consumer, slot)):
                self.audit.consume(conn, consumer, task_pk, slot, now, gate_task_ids, consume_own)
            return SlotOutcome(task_pk, run_pk, "success", revision, True)

    def record_finished(
        self,
        identity: TaskIdentity,
        slot: dt.datetime,
        state: str,
        *,
        meta: TaskMeta | None = None,
        run_id: str | None = None,
        attempt: int = 1,
        at: dt.datetime | None = None,
        run_type: str | None = None,
    ) -> SlotOutcome:
        """A slot ended without success (failed, skipped, cancelled...). It publishes no revision."""
        return self._record_unpublished(identity, slot, state, meta, run_id, attempt, at, run_type)

    def _record_unpublished(self, identity, slot, state, meta, run_id, attempt, at, run_type=None) -> SlotOutcome:
        # Running and unsuccessful endings share one shape: they never touch the revision or watermark.
        now = at or utcnow()
        started = state == "running"
        times = {"started_at": now, "finished_at": None} if started else {"finished_at": now}
        with self.write() as conn:
            task_pk = self.ensure_task(conn, identity, meta, now)
            current = slot_row(conn, task_pk, slot)
            if current is None:
                revision = 0
                run_pk = conn.execute(
                    insert(task_run).values(
                        task_pk=task_pk,
                        slot=slot,
                        state=state,
                        attempt=attempt,
                        run_id=run_id,
                        run_type=run_type,
                        output_revision=0,
                        repair_pending=False,
                        updated_at=now,
                        **{"started_at": now, **times},
                    )
                ).inserted_primary_key[0]
            else:
                run_pk, revision = current.id, current.output_revision
                if older_than_held(current, run_id, attempt, now):  # a late replay never undoes a newer outcome
                    return SlotOutcome(task_pk, run_pk, current.state, revision, False)
                repair = {"repair_pending": revision > 0} if started else {}
                conn.execute(
                    update(task_run)
                    .where(task_run.c.id == run_pk)
                    .values(
                        state=state,
                        attempt=attempt,
                        run_id=run_id,
                        run_type=run_type,
                        updated_at=now,
                        **times,
                        **repair,
                    )
                )
            update_task_state(
                conn, task_pk, run_pk, now, {"state": state, **({"logical_date": slot} if started else {})}
            )
            return SlotOutcome(task_pk, run_pk, state, revision, True)

    def report_completion(
        self,
        identity: TaskIdentity,
        slot: dt.datetime,
        *,
        cron: str | None = None,
        timezone: str = "UTC",
        rows_written: int | None = None,
        run_id: str | None = None,
    ) -> SlotOutcome:
        """An external system publishes a completed interval (see :func:`airflow_leastaction.report_completion`,
        which checks the report first). A report without ``cron`` keeps the schedule the task has."""
        meta = external_meta(cron, timezone)
        return self.record_success(
            identity,
            slot,
            meta=meta,
            run_id=run_id or f"external:{slot.isoformat()}",
            rows_written=rows_written,
            attempt=1,
            at=utcnow(),
        )

    # -- snapshots for gates ----------------------------------------------------------------------
    def snapshot(self, requests: Iterable[tuple]) -> tuple[dict[TaskIdentity, TaskSnapshot], list[SlotSnapshot]]:
        """What gates need to judge (parent, child interval) pairs: two queries for any number of pairs
        (one more per 10,000 distinct windows of slot records beyond the first 10,000).

        A request is ``(parent, child interval start)``, or ``(parent, start, end)`` for a parent judged
        on the whole interval. The first query reads the parents' task rows (with their first recorded
        slot); the second reads each parent's slot records inside that parent's own windows only, so one
        subscriber far in the past never makes every tick read every parent's whole history.
        """
        wanted = wanted_windows(requests)
        if not wanted:
            return {}, []
        with self.poll_read() as conn:
            return read_snapshot(conn, wanted)


def external_meta(cron: str | None, timezone: str = "UTC") -> TaskMeta:
    """What a report from outside Airflow says of its task: the schedule only when it names one (a report
    without a cron, such as an owner re-publishing a slot, must not make a scheduled task ad hoc)."""
    return TaskMeta(cron=cron, timezone=timezone, source="external", schedule_known=cron is not None)


def _task_meta_changes(row, meta: TaskMeta) -> dict:
    """The columns of task ``row`` that ``meta`` changes: the owner when the row has none, the schedule
    when ``meta`` knows it."""
    values = {}
    if row.dag_id is None and meta.dag_id is not None:  # an Airflow task takes its name over
        values.update(dag_id=meta.dag_id, task_id=meta.task_id, source=meta.source)
    if meta.schedule_known and (row.cron, row.timezone) != (meta.cron, meta.timezone):
        values.update(cron=meta.cron, timezone=meta.timezone, source=meta.source, task_id=meta.task_id)
    return values
