"""The dbt queue store: one method per queue operation, every statement parameterized.

Enqueue is one upsert on the partial unique index of active rows (PostgreSQL and SQLite both support
``INSERT ... ON CONFLICT (...) WHERE ... DO UPDATE ... RETURNING``), plus the append-only events, in one
transaction. Claims lock candidates with ``FOR UPDATE SKIP LOCKED`` on PostgreSQL; on SQLite every write
transaction starts with ``BEGIN IMMEDIATE`` and so runs alone.
"""

from __future__ import annotations

import datetime as dt
import threading
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, Sequence

from sqlalchemy import case, func, insert, literal, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection, Engine

from airflow_leastaction.catalog.store import CatalogStore, utcnow
from airflow_leastaction.dbt.planner import PlannedModel
from airflow_leastaction.dbt.policy import (
    BatchKey,
    Candidate,
    ModelOutcome,
    Outcome,
    TierPolicy,
    outcome_after_upsert,
    row_status_after,
)
from airflow_leastaction.dbt.queue_sql import PG_ENQUEUE
from airflow_leastaction.dbt.schema import (
    ACTIVE_PREDICATE,
    ACTIVE_STATUSES,
    dbt_batch,
    dbt_queue,
    dbt_request,
    dbt_request_event,
    dbt_worker_lease,
)

q = dbt_queue.c
#: Candidates the claim looks at per call; the rest wait for the next claim.
CLAIM_WINDOW = 2000
#: One writer at a time per SQLite file within a process: threads queue on a lock instead of polling
#: SQLite's busy handler (which sleeps up to 100 ms between tries).
_SQLITE_WRITERS: dict[str, threading.Lock] = {}
_SQLITE_WRITERS_GUARD = threading.Lock()


@dataclass(frozen=True)
class EnqueueResult:
    request_id: str
    outcomes: dict[str, Outcome]  # unique id -> outcome

    def by_outcome(self) -> dict[str, list[str]]:
        out: dict[str, list[str]] = {o.value: [] for o in Outcome}
        for uid, outcome in sorted(self.outcomes.items()):
            out[outcome.value].append(uid)
        return out


@dataclass(frozen=True)
class ClaimedRow:
    id: int
    unique_id: str
    fqn: str
    tier: str


@dataclass(frozen=True)
class Batch:
    id: str
    key: BatchKey
    owner: str
    rows: tuple[ClaimedRow, ...]

    @property
    def selection(self) -> list[str]:
        return [r.fqn for r in self.rows]


class QueueStore(CatalogStore):
    """Queue operations on the catalog database."""

    def __init__(self, engine: Engine | None = None, *, conn_id: str | None = None):
        super().__init__(engine, conn_id=conn_id)
        self._insert = (postgresql if self.engine.dialect.name == "postgresql" else sqlite).insert
        self._upsert = None

    @contextmanager
    def write(self) -> Iterator[Connection]:
        if self.engine.dialect.name != "sqlite":
            with super().write() as conn:
                yield conn
            return
        with _SQLITE_WRITERS_GUARD:
            lock = _SQLITE_WRITERS.setdefault(str(self.engine.url), threading.Lock())
        with lock, super().write() as conn:
            yield conn

    # -- demand -------------------------------------------------------------------------------------
    def enqueue(
        self,
        key: BatchKey,
        models: Sequence[PlannedModel],
        selector: str,
        *,
        requested_by: str | None = None,
        excluded_count: int = 0,
        now: dt.datetime | None = None,
    ) -> EnqueueResult:
        """Merge a request for ``models`` into the active queue and record the request and one event per model.

        A request with no models (everything excluded) is recorded as a no-op.
        """
        now = now or utcnow()
        request_id = uuid.uuid4().hex
        unique = {m.unique_id: m for m in models}
        ordered = [unique[u] for u in sorted(unique)]
        with self.write() as conn:
            if ordered and conn.dialect.name == "postgresql":
                returned = conn.execute(PG_ENQUEUE, {
                    "environment": key.environment, "action": key.action, "mode": key.mode,
                    "exclusions": key.exclusions, "selector": selector, "now": now, "request_id": request_id,
                    "requested_by": requested_by, "model_count": len(ordered), "excluded_count": excluded_count,
                    "unique_ids": [m.unique_id for m in ordered], "fqns": [m.fqn for m in ordered],
                    "materializations": [m.materialized for m in ordered], "tiers": [m.tier for m in ordered],
                }).all()
                return EnqueueResult(request_id, {r.unique_id: outcome_after_upsert(r.request_count, r.status)
                                                  for r in returned})
            conn.execute(insert(dbt_request).values(
                id=request_id, environment=key.environment, selector=selector,
                status="queued" if unique else "noop", model_count=len(unique), excluded_count=excluded_count,
                message=None if unique else f"all {excluded_count} model(s) excluded ({key.exclusions}); nothing to build",
                requested_by=requested_by, requested_at=now,
            ))
            if not unique:
                return EnqueueResult(request_id, {})
            # Sorted rows: concurrent producers lock shared rows in the same order and cannot deadlock.
            returned = conn.execute(self._upsert_statement(), self._upsert_rows(key, ordered, selector, now)).all()
            outcomes = {r.unique_id: outcome_after_upsert(r.request_count, r.status) for r in returned}
            ids = {r.unique_id: r.id for r in returned}
            conn.execute(insert(dbt_request_event), [
                {"request_id": request_id, "environment": key.environment, "unique_id": uid, "selector": selector,
                 "outcome": outcomes[uid].value, "queue_id": ids[uid], "requested_by": requested_by,
                 "requested_at": now}
                for uid in sorted(outcomes)
            ])
        return EnqueueResult(request_id, outcomes)

    def _upsert_statement(self):
        """The merge upsert, built once per store so its compiled form is cached across requests."""
        if self._upsert is not None:
            return self._upsert
        stmt = self._insert(dbt_queue)
        new = stmt.excluded
        find = func.strpos if self.engine.dialect.name == "postgresql" else func.instr
        delimited = literal("\n") + q.selectors + literal("\n")
        known = find(delimited, literal("\n") + new.selectors + literal("\n")) > 0
        stmt = stmt.on_conflict_do_update(
            index_elements=["environment", "unique_id"],
            index_where=ACTIVE_PREDICATE,
            set_={
                "request_count": q.request_count + 1,
                "last_requested_at": new.last_requested_at,
                "tier": new.tier,
                "fqn": new.fqn,
                "selectors": case((known, q.selectors), else_=q.selectors + literal("\n") + new.selectors),
                "requested_while_running": case((q.status == "running", True), else_=q.requested_while_running),
            },
        )
        self._upsert = stmt.returning(q.id, q.unique_id, q.status, q.request_count, sort_by_parameter_order=True)
        return self._upsert

    @staticmethod
    def _upsert_rows(key: BatchKey, models: Sequence[PlannedModel], selector: str, now: dt.datetime) -> list[dict]:
        return [
            {"environment": key.environment, "unique_id": m.unique_id, "fqn": m.fqn, "materialized": m.materialized,
             "action": key.action, "mode": key.mode, "exclusions": key.exclusions, "tier": m.tier,
             "status": "pending", "selectors": selector, "request_count": 1, "requested_while_running": False,
             "first_requested_at": now, "last_requested_at": now, "attempts": 0}
            for m in models
        ]

    def record_planning_failure(
        self, environment: str, selector: str, message: str, *, requested_by: str | None = None
    ) -> str:
        """Record a request whose selector could not be planned (nothing was queued)."""
        request_id = uuid.uuid4().hex
        with self.write() as conn:
            conn.execute(insert(dbt_request).values(
                id=request_id, environment=environment, selector=selector, status="planning_failed",
                model_count=0, excluded_count=0, message=message, requested_by=requested_by, requested_at=utcnow(),
            ))
        return request_id

    def requests(self, environment: str, *, limit: int = 100) -> list[dict]:
        r = dbt_request.c
        with self.engine.connect() as conn:
            return [dict(x) for x in conn.execute(
                select(dbt_request).where(r.environment == environment)
                .order_by(r.requested_at.desc(), r.id).limit(limit)).mappings()]

    # -- claims -------------------------------------------------------------------------------------
    def candidates(self, conn: Connection, environment: str, *, lock: bool) -> list[Candidate]:
        done = dbt_queue.alias("done")
        last_built = (
            select(func.max(done.c.finished_at))
            .where(done.c.environment == q.environment, done.c.unique_id == q.unique_id, done.c.status == "done")
            .scalar_subquery()
        )
        stmt = (
            select(q.id, q.environment, q.action, q.mode, q.exclusions, q.tier, q.first_requested_at,
                   last_built.label("last_built_at"))
            .where(q.environment == environment, q.status == "pending")
            .order_by(q.first_requested_at, q.id)
            .limit(CLAIM_WINDOW)
        )
        if lock:
            stmt = stmt.with_for_update(skip_locked=True, of=dbt_queue)
        return [
            Candidate(r.id, BatchKey(r.environment, r.action, r.mode, r.exclusions), r.tier, r.first_requested_at,
                      r.last_built_at)
            for r in conn.execute(stmt)
        ]

    def claim(
        self, environment: str, owner: str, policy: TierPolicy, *, max_size: int = 100,
        airflow_ti: str | None = None, now: dt.datetime | None = None,
    ) -> Batch | None:
        """Claim one compatible batch of eligible pending rows; None when nothing is eligible."""
        now = now or utcnow()
        with self.write() as conn:
            chosen = policy.plan_batch(self.candidates(conn, environment, lock=True), now, max_size)
            if not chosen:
                return None
            batch_id = uuid.uuid4().hex
            ids = [c.id for c in chosen]
            conn.execute(
                update(dbt_queue).where(q.id.in_(ids), q.status == "pending").values(
                    status="running", batch_id=batch_id, requested_while_running=False, attempts=q.attempts + 1)
            )
            rows = conn.execute(select(q.id, q.unique_id, q.fqn, q.tier).where(q.batch_id == batch_id)
                                .order_by(q.unique_id)).all()
            key = chosen[0].key
            conn.execute(insert(dbt_batch).values(
                id=batch_id, environment=environment, action=key.action, mode=key.mode, exclusions=key.exclusions,
                owner=owner, status="running", selection=" ".join(r.fqn for r in rows), model_count=len(rows),
                claimed_at=now, heartbeat_at=now, invocations=0, airflow_ti=airflow_ti,
            ))
        return Batch(batch_id, key, owner, tuple(ClaimedRow(r.id, r.unique_id, r.fqn, r.tier) for r in rows))

    def next_eligible(self, environment: str, policy: TierPolicy) -> dt.datetime | None:
        with self.engine.connect() as conn:
            return policy.next_eligible(self.candidates(conn, environment, lock=False), utcnow())

    def heartbeat(self, batch_id: str, owner: str, *, now: dt.datetime | None = None) -> bool:
        """Refresh a running batch's heartbeat; False when the batch is no longer this owner's."""
        with self.write() as conn:
            res = conn.execute(
                update(dbt_batch)
                .where(dbt_batch.c.id == batch_id, dbt_batch.c.owner == owner, dbt_batch.c.status == "running")
                .values(heartbeat_at=now or utcnow())
            )
            return res.rowcount == 1

    def finish(
        self, batch: Batch, outcomes: Mapping[str, ModelOutcome], *, status: str, invocations: int,
        exit_code: int | None, message: str | None, messages: Mapping[str, str] | None = None,
        max_attempts: int = 3, now: dt.datetime | None = None,
    ) -> dict[str, str]:
        """Settle a batch: finished rows become history, the rest (and rows owed a follow-up) go back to pending.

        Returns unique id -> the row's new status. Rows recovery already took back are left alone.
        """
        now = now or utcnow()
        messages = messages or {}
        settled = {}
        with self.write() as conn:
            rows = conn.execute(
                select(q.id, q.unique_id, q.requested_while_running, q.attempts)
                .where(q.batch_id == batch.id, q.status == "running")
                .order_by(q.unique_id)  # the producers' lock order: no deadlock with a concurrent enqueue
                .with_for_update()
            ).all()
            for row in rows:
                outcome = outcomes.get(row.unique_id, ModelOutcome.NOT_RUN)
                new_status = row_status_after(outcome, row.requested_while_running, row.attempts, max_attempts)
                message = messages.get(row.unique_id)
                if outcome is ModelOutcome.NOT_RUN and new_status == "failed":
                    message = f"not finished after {row.attempts} attempt(s); giving up"
                values = {"status": new_status, "outcome": outcome.value, "message": message}
                if new_status == "pending":
                    # attempts counts claims in a row that ended unfinished; a finished pass resets it.
                    attempts = row.attempts if outcome is ModelOutcome.NOT_RUN else 0
                    values.update(batch_id=None, requested_while_running=False, attempts=attempts)
                else:
                    values["finished_at"] = now
                conn.execute(update(dbt_queue).where(q.id == row.id).values(**values))
                settled[row.unique_id] = new_status
            conn.execute(update(dbt_batch).where(dbt_batch.c.id == batch.id, dbt_batch.c.status == "running").values(
                status=status, finished_at=now, invocations=invocations, exit_code=exit_code,
                message=(message or "")[-4000:] or None,
            ))
        return settled

    # -- recovery -----------------------------------------------------------------------------------
    def requeue_stale(
        self, environment: str, grace: dt.timedelta, *, is_alive: Callable[[Mapping], bool | None] | None = None,
        now: dt.datetime | None = None,
    ) -> list[str]:
        """Return the rows of batches whose heartbeat is older than ``grace`` to pending.

        ``is_alive(batch_row)`` may veto (True: the task running it is still alive, keep waiting).
        Returns the unique ids requeued.
        """
        now = now or utcnow()
        requeued: list[str] = []
        with self.write() as conn:
            stale = conn.execute(
                select(dbt_batch).where(dbt_batch.c.environment == environment, dbt_batch.c.status == "running",
                                        dbt_batch.c.heartbeat_at < now - grace).with_for_update(skip_locked=True)
            ).mappings().all()
            for batch in stale:
                if is_alive is not None and is_alive(batch) is True:
                    continue
                uids = conn.execute(
                    select(q.unique_id).where(q.batch_id == batch["id"], q.status == "running")
                    .order_by(q.unique_id).with_for_update()
                ).scalars().all()
                conn.execute(
                    update(dbt_queue).where(q.batch_id == batch["id"], q.status == "running")
                    .values(status="pending", batch_id=None, outcome=ModelOutcome.NOT_RUN.value,
                            message=f"requeued: batch {batch['id']} of {batch['owner']} stopped heartbeating")
                )
                conn.execute(update(dbt_batch).where(dbt_batch.c.id == batch["id"]).values(
                    status="abandoned", finished_at=now,
                    message=f"heartbeat older than {grace}; {len(uids)} model(s) requeued"))
                requeued.extend(uids)
        return sorted(requeued)

    # -- worker lease -------------------------------------------------------------------------------
    def acquire_lease(self, environment: str, owner: str, grace: dt.timedelta, *, now: dt.datetime | None = None) -> bool:
        """Become the environment's single worker: free, already ours, or its holder went silent for ``grace``."""
        now = now or utcnow()
        lease = dbt_worker_lease.c
        with self.write() as conn:
            conn.execute(self._insert(dbt_worker_lease).values(
                environment=environment, owner=owner, acquired_at=now, heartbeat_at=now,
            ).on_conflict_do_nothing(index_elements=["environment"]))
            res = conn.execute(
                update(dbt_worker_lease)
                .where(lease.environment == environment,
                       (lease.owner == owner) | (lease.heartbeat_at < now - grace))
                .values(owner=owner, heartbeat_at=now,
                        acquired_at=case((lease.owner == owner, lease.acquired_at), else_=now))
            )
            return res.rowcount == 1

    def renew_lease(self, environment: str, owner: str, *, now: dt.datetime | None = None) -> bool:
        lease = dbt_worker_lease.c
        with self.write() as conn:
            res = conn.execute(update(dbt_worker_lease).where(lease.environment == environment, lease.owner == owner)
                               .values(heartbeat_at=now or utcnow()))
            return res.rowcount == 1

    def release_lease(self, environment: str, owner: str) -> None:
        lease = dbt_worker_lease.c
        with self.write() as conn:
            conn.execute(dbt_worker_lease.delete().where(lease.environment == environment, lease.owner == owner))

    # -- reading ------------------------------------------------------------------------------------
    def active_rows(self, environment: str) -> list[dict]:
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(
                select(dbt_queue).where(q.environment == environment, q.status.in_(ACTIVE_STATUSES))
                .order_by(q.unique_id)).mappings()]

    def history(self, environment: str, *, limit: int = 100) -> list[dict]:
        """Finished rows, newest first."""
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(
                select(dbt_queue).where(q.environment == environment, q.status.notin_(ACTIVE_STATUSES))
                .order_by(q.finished_at.desc(), q.id.desc()).limit(limit)).mappings()]

    def events(self, environment: str, *, limit: int | None = None) -> list[dict]:
        e = dbt_request_event.c
        stmt = select(dbt_request_event).where(e.environment == environment).order_by(e.id)
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(stmt if limit is None else stmt.limit(limit)).mappings()]

    def outcome_counts(self, environment: str) -> dict[str, int]:
        e = dbt_request_event.c
        with self.engine.connect() as conn:
            rows = conn.execute(select(e.outcome, func.count()).where(e.environment == environment)
                                .group_by(e.outcome)).all()
        counts = {o.value: 0 for o in Outcome}
        counts.update({r[0]: r[1] for r in rows})
        return counts

    def batches(self, environment: str, *, limit: int = 50) -> list[dict]:
        b = dbt_batch.c
        with self.engine.connect() as conn:
            return [dict(r) for r in conn.execute(
                select(dbt_batch).where(b.environment == environment).order_by(b.claimed_at.desc()).limit(limit)
            ).mappings()]


def summarize(rows: Iterable[Mapping]) -> dict[str, int]:
    """Counts of active rows by status."""
    counts = {s: 0 for s in ACTIVE_STATUSES}
    for r in rows:
        counts[r["status"]] = counts.get(r["status"], 0) + 1
    return counts


__all__ = ["Batch", "ClaimedRow", "EnqueueResult", "QueueStore", "summarize"]
