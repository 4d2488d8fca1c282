"""The catalog store: one method per catalog operation, every statement parameterized.

Writers: the listener (Airflow task outcomes), external systems (:meth:`CatalogStore.report_completion`),
the gates (decisions) and, in the same transaction as a downstream's success, consumption records.
Readers: the gates (batched snapshots), the CLI and the UI.
"""

from __future__ import annotations

import datetime as dt
import json
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence

from sqlalchemy import and_, case, exists, func, insert, literal, or_, select, update
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.engine import get_engine
from airflow_leastaction.catalog.schema import UtcDateTime, consumption, gate_decision, task, task_run
from airflow_leastaction.gate import DecisionResult, Judgement
from airflow_leastaction.identity import TaskIdentity
from airflow_leastaction.intervals import normalize_cron, resolve_timezone
from airflow_leastaction.parents import (
    IN_FLIGHT_STATES,
    LatestRuns,
    RunRecord,
    SlotIndex,
    SlotSnapshot,
    TaskSnapshot,
    covering_window,
)

# SQLite allows 32,766 bound parameters; stay well below it per IN list.
IN_CHUNK = 30_000


def utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


@dataclass(frozen=True)
class TaskMeta:
    """What the catalog keeps about a task besides its identity."""

    cron: str | None = None
    timezone: str = "UTC"
    source: str = "airflow"
    dag_id: str | None = None
    task_id: str | None = None

    def __post_init__(self):
        if self.cron is not None:
            object.__setattr__(self, "cron", normalize_cron(self.cron))
        resolve_timezone(self.timezone)


@dataclass(frozen=True)
class AttemptKey:
    """One attempt of one Airflow task instance: what gate decisions and consumption hang on."""

    dag_id: str
    task_id: str
    run_id: str
    map_index: int = -1
    attempt: int = 1


@dataclass(frozen=True)
class SlotOutcome:
    task_pk: int
    run_pk: int
    state: str
    output_revision: int
    applied: bool  # False when the event was a replay of one already applied


class CatalogStore:
    """Synchronous access to the catalog. Cheap to create; engines are cached per URL."""

    def __init__(self, engine: Engine | None = None, *, conn_id: str | None = None):
        if engine is None:
            from airflow_leastaction.catalog.engine import resolve_url

            engine = get_engine(resolve_url(conn_id))
        self.engine = engine

    # -- transactions -------------------------------------------------------------------------------
    @contextmanager
    def write(self) -> Iterator[Connection]:
        """A write transaction; on SQLite it takes the write lock up front (``BEGIN IMMEDIATE``)."""
        with self.engine.connect() as conn:
            if conn.dialect.name == "sqlite":
                conn.info["sqlite_begin"] = "BEGIN IMMEDIATE"
            with conn.begin():
                yield conn

    # -- tasks --------------------------------------------------------------------------------------
    def ensure_task(self, conn: Connection, identity: TaskIdentity, meta: TaskMeta | None, now: dt.datetime) -> int:
        row = conn.execute(
            select(task.c.id, task.c.cron, task.c.timezone, task.c.dag_id).where(*_identity_clause(identity))
        ).first()
        if row is None:
            meta = meta or TaskMeta()
            return conn.execute(
                insert(task).values(
                    **identity.as_dict(), source=meta.source, cron=meta.cron, timezone=meta.timezone,
                    dag_id=meta.dag_id, task_id=meta.task_id, updated_at=now,
                )
            ).inserted_primary_key[0]
        if meta is not None and (row.cron, row.timezone, row.dag_id) != (meta.cron, meta.timezone, meta.dag_id):
            conn.execute(
                update(task).where(task.c.id == row.id).values(
                    cron=meta.cron, timezone=meta.timezone, source=meta.source,
                    dag_id=meta.dag_id, task_id=meta.task_id, updated_at=now,
                )
            )
        return row.id

    def register_task(self, identity: TaskIdentity, meta: TaskMeta) -> int:
        with self.write() as conn:
            return self.ensure_task(conn, identity, meta, utcnow())

    def declare_parents(self, identity: TaskIdentity, meta: TaskMeta | None, parents: Sequence[TaskIdentity]) -> int:
        """Record the parents ``identity`` declares (what the dependency graph is computed from)."""
        text = json.dumps([p.as_dict() for p in parents], sort_keys=True)
        now = utcnow()
        with self.write() as conn:
            pk = self.ensure_task(conn, identity, meta, now)
            conn.execute(update(task).where(task.c.id == pk, or_(task.c.parents.is_(None), task.c.parents != text))
                         .values(parents=text, updated_at=now))
            return pk

    def get_task(self, identity: TaskIdentity):
        with self.engine.connect() as conn:
            return conn.execute(select(task).where(*_identity_clause(identity))).mappings().first()

    # -- slots --------------------------------------------------------------------------------------
    def record_running(
        self, identity: TaskIdentity, slot: dt.datetime, *, meta: TaskMeta | None = None,
        run_id: str | None = None, attempt: int = 1, at: dt.datetime | None = None,
    ) -> SlotOutcome:
        """A slot started (or restarted). A completed slot that runs again stops satisfying children."""
        return self._record_unpublished(identity, slot, "running", meta, run_id, attempt, at)

    def record_success(
        self, identity: TaskIdentity, slot: dt.datetime, *, meta: TaskMeta | None = None,
        run_id: str | None = None, attempt: int = 1, rows_written: int | None = None,
        at: dt.datetime | None = None, consumer: AttemptKey | None = None,
        gate_task_ids: Sequence[str] = (), consume_own: bool = True,
    ) -> SlotOutcome:
        """A slot completed: revision 1 the first time, +1 on each re-completion (a repair).

        The watermark only moves forward. When ``consumer`` is given, that attempt's SATISFIED gate
        decisions become consumption records in this same transaction: both or neither are written.
        Replaying the same completion (same run and attempt) changes nothing.
        """
        now = at or utcnow()
        completion_key = f"{run_id}#{attempt}"
        with self.write() as conn:
            task_pk = self.ensure_task(conn, identity, meta, now)
            current = _slot_row(conn, task_pk, slot)
            if current is not None and current.completion_key == completion_key and current.state == "success":
                return SlotOutcome(task_pk, current.id, "success", current.output_revision, False)
            if current is None:
                revision = 1
                run_pk = conn.execute(insert(task_run).values(
                    task_pk=task_pk, slot=slot, state="success", attempt=attempt, run_id=run_id,
                    output_revision=1, repair_pending=False, rows_written=rows_written,
                    completion_key=completion_key, started_at=now, finished_at=now, updated_at=now,
                )).inserted_primary_key[0]
            else:
                revision = current.output_revision + 1
                run_pk = current.id
                conn.execute(update(task_run).where(task_run.c.id == run_pk).values(
                    state="success", attempt=attempt, run_id=run_id, output_revision=revision,
                    repair_pending=False, rows_written=rows_written, completion_key=completion_key,
                    finished_at=now, updated_at=now,
                ))
            conn.execute(update(task).where(task.c.id == task_pk).values(
                state="success", updated_at=now, prev_interval_start=_forward_only(slot),
            ))
            if consumer is not None:
                self._consume(conn, consumer, task_pk, slot, now, gate_task_ids, consume_own)
            return SlotOutcome(task_pk, run_pk, "success", revision, True)

    def record_finished(
        self, identity: TaskIdentity, slot: dt.datetime, state: str, *, meta: TaskMeta | None = None,
        run_id: str | None = None, attempt: int = 1, at: dt.datetime | None = None,
    ) -> SlotOutcome:
        """A slot ended without success (failed, skipped, cancelled...). It publishes no revision."""
        return self._record_unpublished(identity, slot, state, meta, run_id, attempt, at)

    def _record_unpublished(self, identity, slot, state, meta, run_id, attempt, at) -> SlotOutcome:
        # Running and unsuccessful endings share one shape: they never touch the revision or watermark.
        now = at or utcnow()
        started = state == "running"
        times = {"started_at": now, "finished_at": None} if started else {"finished_at": now}
        with self.write() as conn:
            task_pk = self.ensure_task(conn, identity, meta, now)
            current = _slot_row(conn, task_pk, slot)
            if current is None:
                revision = 0
                run_pk = conn.execute(insert(task_run).values(
                    task_pk=task_pk, slot=slot, state=state, attempt=attempt, run_id=run_id, output_revision=0,
                    repair_pending=False, updated_at=now, **{"started_at": now, **times},
                )).inserted_primary_key[0]
            else:
                run_pk, revision = current.id, current.output_revision
                if current.updated_at > now:  # a late replay must not undo a newer outcome
                    return SlotOutcome(task_pk, run_pk, current.state, revision, False)
                repair = {"repair_pending": revision > 0} if started else {}
                conn.execute(update(task_run).where(task_run.c.id == run_pk).values(
                    state=state, attempt=attempt, run_id=run_id, updated_at=now, **times, **repair))
            latest = {"logical_date": slot} if started else {}
            conn.execute(update(task).where(task.c.id == task_pk).values(state=state, updated_at=now, **latest))
            return SlotOutcome(task_pk, run_pk, state, revision, True)

    def report_completion(
        self, identity: TaskIdentity, slot: dt.datetime, *, cron: str | None = None, timezone: str = "UTC",
        rows_written: int | None = None, run_id: str | None = None,
    ) -> SlotOutcome:
        """An external system publishes a completed interval (see :func:`airflow_leastaction.report_completion`)."""
        meta = TaskMeta(cron=cron, timezone=timezone, source="external")
        return self.record_success(identity, slot, meta=meta, run_id=run_id or f"external:{slot.isoformat()}",
                                   rows_written=rows_written, attempt=1, at=utcnow())

    # -- snapshots for gates ----------------------------------------------------------------------
    def snapshot(
        self, requests: Iterable[tuple[TaskIdentity, dt.datetime]]
    ) -> tuple[dict[TaskIdentity, TaskSnapshot], list[SlotSnapshot]]:
        """What gates need to judge (parent, child interval) pairs: two queries for any number of pairs.

        The first reads the parents' task rows; the second reads their slot records inside the union of
        the windows that cover the children's intervals (computed from each parent's cron).
        """
        wanted: dict[TaskIdentity, set[dt.datetime]] = {}
        for identity, child_interval in requests:
            wanted.setdefault(identity, set()).add(child_interval)
        if not wanted:
            return {}, []
        tasks: dict[TaskIdentity, TaskSnapshot] = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(sorted({i.name for i in wanted}), IN_CHUNK):
                records = exists().where(task_run.c.task_pk == task.c.id).label("records_slots")
                for row in conn.execute(select(
                    task.c.id, task.c.name, task.c.project, task.c.account, task.c.partition, task.c.cron,
                    task.c.timezone, task.c.state, task.c.prev_interval_start, records,
                ).where(task.c.name.in_(chunk))):
                    ident = TaskIdentity(row.name, row.project, row.account, row.partition)
                    if ident in wanted:
                        tasks[ident] = TaskSnapshot(row.id, ident, row.cron, row.timezone, row.state,
                                                    row.prev_interval_start, bool(row.records_slots))
            windows = [covering_window(t, ci) for ident, t in tasks.items() for ci in wanted[ident]]
            slots = SlotIndex()
            if not windows:
                return tasks, slots
            start, end = min(w[0] for w in windows), max(w[1] for w in windows)
            for chunk in _chunks(sorted(t.pk for t in tasks.values()), IN_CHUNK):
                slots.extend(
                    SlotSnapshot(r.id, r.task_pk, r.slot, r.state, r.output_revision, r.rows_written,
                                 r.repair_pending)
                    for r in conn.execute(select(
                        task_run.c.id, task_run.c.task_pk, task_run.c.slot, task_run.c.state,
                        task_run.c.output_revision, task_run.c.rows_written, task_run.c.repair_pending,
                    ).where(task_run.c.task_pk.in_(chunk), task_run.c.slot >= start, task_run.c.slot < end))
                )
        return tasks, slots

    # -- gate decisions and consumption -------------------------------------------------------------
    def record_decisions(
        self, attempt: AttemptKey, judgements: Sequence[Judgement], *, downstream_slot: dt.datetime | None,
        bypass_reason: str | None = None, at: dt.datetime | None = None,
    ) -> list[int]:
        """Append one decision per judged dependency of this attempt. ``bypass_reason`` records BYPASSED."""
        now = at or utcnow()
        rows = [_decision_row(attempt, j, downstream_slot, now, bypass_reason) for j in judgements]
        if not rows:
            return []
        with self.write() as conn:
            return [conn.execute(insert(gate_decision).values(**row)).inserted_primary_key[0] for row in rows]

    def _consume(self, conn: Connection, who: AttemptKey, task_pk: int | None, slot, now,
                 gate_task_ids: Sequence[str] = (), consume_own: bool = True) -> int:
        """Turn admission decisions into consumption records for the attempt ``who`` that succeeded.

        The sources are ``who``'s own SATISFIED decisions (unless it is a gate admitting other tasks:
        ``consume_own=False``) and, for each gate task directly upstream of
        it in the same run (a ``ParentIntervalSensor``, a run-condition gate), the SATISFIED decisions of
        that gate's latest attempt.
        """
        d = gate_decision.c
        same_ti = (d.dag_id == who.dag_id, d.run_id == who.run_id, d.map_index == who.map_index,
                   d.result == DecisionResult.SATISFIED.value)
        own = select(gate_decision).where(*same_ti, d.task_id == who.task_id, d.attempt == who.attempt)
        rows = list(conn.execute(own).mappings()) if consume_own else []
        if gate_task_ids:
            latest = (select(d.task_id, func.max(d.attempt).label("attempt"))
                      .where(d.dag_id == who.dag_id, d.run_id == who.run_id, d.map_index == who.map_index,
                             d.task_id.in_(list(gate_task_ids)))
                      .group_by(d.task_id).subquery())
            rows += list(conn.execute(select(gate_decision).join(
                latest, and_(d.task_id == latest.c.task_id, d.attempt == latest.c.attempt)).where(*same_ti)
            ).mappings())
        for row in rows:
            conn.execute(insert(consumption).values(
                decision_id=row["id"], dag_id=who.dag_id, task_id=who.task_id, run_id=who.run_id,
                map_index=who.map_index, attempt=who.attempt, downstream_task_pk=task_pk,
                downstream_slot=slot, dependency=row["dependency"], upstream_task_pk=row["upstream_task_pk"],
                upstream_run_pk=row["upstream_run_pk"], upstream_slot=row["upstream_slot"],
                upstream_revision=row["upstream_revision"], consumed_at=now,
            ))
        return len(rows)

    def consume(self, who: AttemptKey, *, downstream_task_pk: int | None = None,
                downstream_slot: dt.datetime | None = None, gate_task_ids: Sequence[str] = ()) -> int:
        """Write consumption for an attempt that succeeded outside the listener's success record."""
        with self.write() as conn:
            return self._consume(conn, who, downstream_task_pk, downstream_slot, utcnow(), gate_task_ids)

    def consumed_revisions(self, dag_id: str, task_ids: Sequence[str], downstream_slot: dt.datetime
                           ) -> dict[tuple[str, dt.datetime | None], int]:
        """Per (dependency, upstream slot), the highest revision these tasks' slot has consumed."""
        c = consumption.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.dependency, c.upstream_slot, func.max(c.upstream_revision).label("rev"))
                                .where(c.dag_id == dag_id, c.task_id.in_(list(task_ids)),
                                       c.downstream_slot == downstream_slot)
                                .group_by(c.dependency, c.upstream_slot)).all()
        return {(r.dependency, r.upstream_slot): r.rev for r in rows if r.rev is not None}

    def decisions_for(self, attempt: AttemptKey):
        with self.engine.connect() as conn:
            return conn.execute(select(gate_decision).where(
                gate_decision.c.dag_id == attempt.dag_id, gate_decision.c.task_id == attempt.task_id,
                gate_decision.c.run_id == attempt.run_id, gate_decision.c.map_index == attempt.map_index,
                gate_decision.c.attempt == attempt.attempt,
            ).order_by(gate_decision.c.id)).mappings().all()


    # -- run-condition gates -----------------------------------------------------------------------
    def slot_records(self, requests: Iterable[tuple[TaskIdentity, dt.datetime]]) -> dict:
        """The slot record of each (task, slot) pair that has one: one query for any number of pairs."""
        wanted = set(requests)
        if not wanted:
            return {}
        names = sorted({i.name for i, _ in wanted})
        slots = sorted({s for _, s in wanted})
        found = {}
        with self.engine.connect() as conn:
            for chunk in _chunks(names, IN_CHUNK // 2):
                rows = conn.execute(select(task.c.name, task.c.project, task.c.account, task.c.partition,
                                           *_run_columns()).join(task, task.c.id == task_run.c.task_pk)
                                    .where(task.c.name.in_(chunk), task_run.c.slot.in_(slots[:IN_CHUNK // 2])))
                for r in rows:
                    key = (TaskIdentity(r.name, r.project, r.account, r.partition), r.slot)
                    if key in wanted:
                        found[key] = _run_record(r)
        return found

    def latest_runs(self, identities: Iterable[TaskIdentity], history: int = 20) -> dict:
        """Per task: its latest run, latest finished run and average run length of its last ``history``
        successes (what a gate on another DAG's task judges and times its looks by)."""
        out = {}
        with self.engine.connect() as conn:
            for identity in sorted(set(identities)):
                task_pk = conn.execute(select(task.c.id).where(*_identity_clause(identity))).scalar()
                if task_pk is None:
                    out[identity] = LatestRuns(None, None, None, None)
                    continue
                base = select(*_run_columns()).where(task_run.c.task_pk == task_pk)
                order = (task_run.c.started_at.desc(), task_run.c.id.desc())
                latest = conn.execute(base.order_by(*order).limit(1)).first()
                finished = conn.execute(base.where(task_run.c.finished_at.is_not(None),
                                                   task_run.c.state.not_in(sorted(IN_FLIGHT_STATES)))
                                        .order_by(task_run.c.finished_at.desc(), task_run.c.id.desc())
                                        .limit(1)).first()
                spans = conn.execute(select(task_run.c.started_at, task_run.c.finished_at).where(
                    task_run.c.task_pk == task_pk, task_run.c.state == "success",
                    task_run.c.started_at.is_not(None), task_run.c.finished_at.is_not(None))
                    .order_by(task_run.c.finished_at.desc()).limit(history)).all()
                lengths = [f - s for s, f in spans if f >= s]
                average = sum(lengths, dt.timedelta(0)) / len(lengths) if lengths else None
                out[identity] = LatestRuns(task_pk, latest and _run_record(latest),
                                           finished and _run_record(finished), average)
        return out

    def last_consumed(self, dag_id: str, task_id: str, dependencies: Sequence[str]) -> dict:
        """Per dependency, the (upstream slot, revision) this task consumed last, across all its runs."""
        c = consumption.c
        if not dependencies:
            return {}
        with self.engine.connect() as conn:
            rows = conn.execute(select(c.dependency, c.upstream_slot, c.upstream_revision).where(
                c.dag_id == dag_id, c.task_id == task_id, c.dependency.in_(list(dependencies)),
                c.upstream_slot.is_not(None)).order_by(c.id)).all()
        out: dict[str, tuple[dt.datetime, int]] = {}
        for r in rows:
            seen = out.get(r.dependency)
            if seen is None or (r.upstream_slot, r.upstream_revision or 0) > (seen[0], seen[1] or 0):
                out[r.dependency] = (r.upstream_slot, r.upstream_revision or 0)
        return out

    def stale_consumers(self, dag_id: str | None = None) -> list[dict]:
        """Consumers whose consumed revision of an upstream slot is older than its current revision.

        One row per (consumer task, downstream slot, dependency, upstream slot): what to re-run after a
        repair of the upstream.
        """
        c, r = consumption.c, task_run.c
        consumed = func.max(c.upstream_revision).label("consumed_revision")
        query = (select(c.dag_id, c.task_id, c.downstream_slot, c.dependency, c.upstream_slot, consumed,
                        r.output_revision.label("current_revision"), func.max(c.run_id).label("run_id"))
                 .join(task_run, r.id == c.upstream_run_pk)
                 .group_by(c.dag_id, c.task_id, c.downstream_slot, c.dependency, c.upstream_slot, r.output_revision)
                 .having(func.max(c.upstream_revision) < r.output_revision)
                 .order_by(c.dag_id, c.task_id, c.downstream_slot, c.dependency))
        if dag_id:
            query = query.where(c.dag_id == dag_id)
        with self.engine.connect() as conn:
            return [dict(row) for row in conn.execute(query).mappings()]


def _run_columns():
    r = task_run.c
    return (r.id, r.task_pk, r.slot, r.run_id, r.state, r.output_revision, r.rows_written, r.started_at,
            r.finished_at)


def _run_record(row) -> RunRecord:
    return RunRecord(row.id, row.task_pk, row.slot, row.run_id, row.state, row.output_revision, row.rows_written,
                     row.started_at, row.finished_at)


def _identity_clause(identity: TaskIdentity):
    return (task.c.name == identity.name, task.c.project == identity.project,
            task.c.account == identity.account, task.c.partition == identity.partition)


def _slot_row(conn: Connection, task_pk: int, slot: dt.datetime):
    return conn.execute(select(task_run).where(
        and_(task_run.c.task_pk == task_pk, task_run.c.slot == slot))).first()


def _forward_only(slot: dt.datetime):
    # Decided in SQL, so two slots of one task completing at once can never move the watermark back.
    new = literal(slot, UtcDateTime())
    wm = task.c.prev_interval_start
    return case((or_(wm.is_(None), wm < new), new), else_=wm)


def _decision_row(attempt: AttemptKey, j: Judgement, downstream_slot, now, bypass_reason):
    if bypass_reason is not None:
        result, reason = DecisionResult.BYPASSED.value, f"{bypass_reason}: {j.reason}"
    else:
        result = (DecisionResult.SATISFIED if j.satisfied else DecisionResult.UNSATISFIED).value
        reason = j.reason
    return dict(
        dag_id=attempt.dag_id, task_id=attempt.task_id, run_id=attempt.run_id, map_index=attempt.map_index,
        attempt=attempt.attempt, downstream_slot=downstream_slot, dependency=j.dependency,
        dependency_type=j.dependency_type.value, upstream_task_pk=j.upstream_task_pk,
        upstream_run_pk=j.upstream_run_pk, upstream_slot=j.upstream_slot,
        upstream_revision=j.upstream_revision, result=result, reason=reason, decided_at=now,
    )


def _chunks(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]
